// Anthropic's Messages API both ways, end to end: the official
// @anthropic-ai/sdk and openai clients against a real spillway in front of
// llmsim in its OpenAI dialect (local) and its Anthropic dialect (cloud).
// What each backend received is read back from llmsim's /admin/received.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

const ADMIN = 'sk-admin-anth';
const CLIENT_KEY = 'sk-client-anth';
const CLOUD_KEY = 'sk-ant-upstream-secret';

function config({ edgeUrl, cloudUrl, cloudOpts = '', extra = '', pii = 'off' }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: team, key: "${CLIENT_KEY}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1 }
  - { name: claude, tier: cloud, url: "${cloudUrl}", model: claude-upstream, dialect: anthropic, api_key: "${CLOUD_KEY}"${cloudOpts} }
models:
  - { name: chat, backends: [edge, claude] }
  - { name: local-only, backends: [edge] }
  - { name: cloud-only, backends: [claude] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
  default_max_tokens: 300
pii:
  policy: ${pii}
${extra}
`;
}

const anth = (gw, extra = {}) => new Anthropic({ baseURL: gw.url, apiKey: CLIENT_KEY, maxRetries: 0, ...extra });
const oai = (gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CLIENT_KEY, maxRetries: 0 });
const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
const clear = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });
const decisions = async (gw) => (await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: { authorization: `Bearer ${ADMIN}` } })).body.decisions;

async function post(gw, path, body, headers = {}) {
  const r = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': CLIENT_KEY, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* SSE */ }
  return { status: r.status, headers: r.headers, json, text };
}

describe('Anthropic Messages front and upstream', () => {
  let edge, cloud, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
  });
  after(async () => {
    await gw?.stop(); await edge?.stop(); await cloud?.stop();
  });

  test('Anthropic client -> OpenAI-dialect local: translated request, Anthropic answer, route headers', async () => {
    await clear(edge);
    const { data: m, response } = await anth(gw).messages.create({
      model: 'local-only', max_tokens: 50, system: [{ type: 'text', text: 'be brief' }],
      stop_sequences: ['END'], temperature: 0.5,
      messages: [{ role: 'user', content: 'hello from anthropic' }],
    }).withResponse();
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.equal(m.model, 'local-only');
    assert.match(m.id, /^msg_/);
    assert.equal(m.content[0].type, 'text');
    assert.equal(m.content[0].text, 'hello from anthropic');
    assert.equal(m.stop_reason, 'end_turn');
    assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0, JSON.stringify(m.usage));
    assert.equal(response.headers.get('x-spillway-backend'), 'edge');
    assert.equal(response.headers.get('x-spillway-tier'), 'local');
    const [r] = await received(edge);
    assert.equal(r.path, '/v1/chat/completions');
    assert.deepEqual(r.body.messages, [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello from anthropic' }]);
    assert.deepEqual(r.body.stop, ['END']);
    assert.equal(r.body.max_tokens, 50);
    assert.equal(r.body.temperature, 0.5);
    assert.equal(r.body.model, 'edge-model');
  });

  test('Anthropic client -> OpenAI-dialect local, streamed: the SDK sees the full event sequence', async () => {
    const stream = anth(gw).messages.stream({ model: 'local-only', max_tokens: 3, messages: [{ role: 'user', content: 'abcdefghijklmnopqrstuvwxyz' }] });
    const types = [];
    stream.on('streamEvent', (ev) => types.push(ev.type));
    const m = await stream.finalMessage();
    assert.equal(m.content[0].text, 'abcdefghijkl');
    assert.equal(m.stop_reason, 'max_tokens');
    assert.equal(m.usage.output_tokens, 3);
    assert.deepEqual(types.filter((t) => t !== 'ping'), ['message_start', 'content_block_start',
      'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  });

  test('Anthropic client -> Anthropic-dialect cloud: its own body goes through, key and version headers', async () => {
    await clear(cloud);
    const { data: m, response } = await anth(gw, { defaultHeaders: { 'anthropic-beta': 'prompt-caching-2024-07-31' } }).messages.create({
      model: 'cloud-only', max_tokens: 20, messages: [{ role: 'user', content: 'native hello' }],
      metadata: { user_id: 'u-1' },
    }).withResponse();
    assert.equal(m.content[0].text, 'native hello');
    assert.equal(m.model, 'cloud-only');
    assert.equal(response.headers.get('x-spillway-backend'), 'claude');
    const [r] = await received(cloud);
    assert.equal(r.path, '/v1/messages');
    assert.equal(r.headers['x-api-key'], CLOUD_KEY);
    assert.equal(r.headers['anthropic-version'], '2023-06-01');
    assert.equal(r.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
    assert.equal(r.headers.authorization, undefined);
    assert.deepEqual(r.body, { model: 'claude-upstream', max_tokens: 20, messages: [{ role: 'user', content: 'native hello' }], metadata: { user_id: 'u-1' } });
  });

  test('Anthropic client -> Anthropic cloud, streamed', async () => {
    const stream = anth(gw).messages.stream({ model: 'cloud-only', max_tokens: 2, messages: [{ role: 'user', content: 'abcdefghijkl' }] });
    const m = await stream.finalMessage();
    assert.equal(m.content[0].text, 'abcdefgh');
    assert.equal(m.model, 'cloud-only');
    assert.equal(m.stop_reason, 'max_tokens');
  });

  test('OpenAI client -> Anthropic cloud: translated both ways, default max_tokens, configured version', async () => {
    await clear(cloud);
    const { data: c, response } = await oai(gw).chat.completions.create({
      model: 'cloud-only', messages: [{ role: 'system', content: 'sys text' }, { role: 'user', content: 'openai to claude' }],
    }).withResponse();
    assert.equal(c.object, 'chat.completion');
    assert.equal(c.choices[0].message.content, 'openai to claude');
    assert.equal(c.choices[0].finish_reason, 'stop');
    assert.equal(c.model, 'cloud-only');
    assert.ok(c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0);
    assert.equal(response.headers.get('x-spillway-backend'), 'claude');
    const [r] = await received(cloud);
    assert.equal(r.path, '/v1/messages');
    assert.equal(r.headers['x-api-key'], CLOUD_KEY);
    assert.equal(r.headers['anthropic-version'], '2023-06-01');
    assert.equal(r.body.system, 'sys text');
    assert.deepEqual(r.body.messages, [{ role: 'user', content: [{ type: 'text', text: 'openai to claude' }] }]);
    assert.equal(r.body.max_tokens, 300, 'routing.default_max_tokens when the client gave none');
  });

  test('OpenAI client -> Anthropic cloud, streamed: chunks, finish_reason, usage', async () => {
    const stream = await oai(gw).chat.completions.create({
      model: 'cloud-only', max_tokens: 3, stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'abcdefghijklmnopqrstuvwxyz' }],
    });
    let text = '';
    let finish = null;
    let usage = null;
    for await (const ch of stream) {
      if (ch.choices[0]?.delta?.content) text += ch.choices[0].delta.content;
      if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason;
      if (ch.usage) usage = ch.usage;
      assert.equal(ch.model, 'cloud-only');
    }
    assert.equal(text, 'abcdefghijkl');
    assert.equal(finish, 'length');
    assert.equal(usage.completion_tokens, 3);
  });

  test('tools round trip: tool_use/tool_result <-> tool_calls/role tool in both directions', async () => {
    await clear(edge);
    const tools = [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
    const history = [
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: [{ type: 'text', text: 'checking' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }, { type: 'text', text: 'and now?' }] },
    ];
    const m = await anth(gw).messages.create({ model: 'local-only', max_tokens: 10, tools, tool_choice: { type: 'auto' }, messages: history });
    assert.equal(m.type, 'message');
    const [r] = await received(edge);
    assert.deepEqual(r.body.tools, [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: tools[0].input_schema } }]);
    assert.equal(r.body.tool_choice, 'auto');
    assert.deepEqual(r.body.messages.slice(1), [
      { role: 'assistant', content: 'checking', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
      { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
    ]);

    await clear(cloud);
    await oai(gw).chat.completions.create({
      model: 'cloud-only', max_tokens: 10,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: tools[0].input_schema } }],
      tool_choice: 'required',
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    });
    const [c] = await received(cloud);
    assert.deepEqual(c.body.tools, [{ name: 'get_weather', input_schema: tools[0].input_schema }]);
    assert.deepEqual(c.body.tool_choice, { type: 'any' });
    assert.deepEqual(c.body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }] },
    ]);
  });

  test('count_tokens: the gateway estimate (ceil(bytes/4) per text + 4 per message + 3)', async () => {
    const r = await anth(gw).messages.countTokens({ model: 'chat', system: 'abcd', messages: [{ role: 'user', content: 'abcdefgh' }] });
    assert.deepEqual(r, { input_tokens: 1 + 4 + 2 + 4 + 3 });
  });

  test('error shapes: bad JSON, missing max_tokens, unknown model, bad key, untranslatable field', async () => {
    const bad = await post(gw, '/v1/messages', '{"model":');
    assert.equal(bad.status, 400);
    assert.equal(bad.json.type, 'error');
    assert.equal(bad.json.error.type, 'invalid_request_error');
    assert.equal(bad.headers.get('x-spillway-backend'), 'none');
    const nomax = await post(gw, '/v1/messages', { model: 'chat', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(nomax.status, 400);
    assert.match(nomax.json.error.message, /max_tokens/);
    await assert.rejects(anth(gw).messages.create({ model: 'nope', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      (e) => e.status === 404 && e.error.error.type === 'not_found_error');
    await assert.rejects(anth(gw, { apiKey: 'wrong' }).messages.create({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      (e) => e.status === 401 && e.error.error.type === 'authentication_error');
    // A document block has no OpenAI form: refused for the OpenAI-speaking local, named.
    const doc = await post(gw, '/v1/messages', { model: 'local-only', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'd' } }] }] });
    assert.equal(doc.status, 400);
    assert.equal(doc.json.error.type, 'invalid_request_error');
    assert.match(doc.json.error.message, /messages\[0\]\.content\[0\]\.type/);
    // ...but carried whole to the Anthropic-speaking cloud.
    await clear(cloud);
    const ok = await post(gw, '/v1/messages', { model: 'cloud-only', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'd' } }, { type: 'text', text: 'summarise' }] }] });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await received(cloud))[0].body.messages[0].content[0].type, 'document');
    // An OpenAI field Anthropic has no form for, to the Anthropic cloud.
    await assert.rejects(oai(gw).chat.completions.create({ model: 'cloud-only', max_tokens: 5, seed: 7, messages: [{ role: 'user', content: 'x' }] }),
      (e) => e.status === 400 && /seed/.test(e.message));
  });

  test('the decision log says api: anthropic', async () => {
    const { response } = await anth(gw).messages.create({ model: 'local-only', max_tokens: 5, messages: [{ role: 'user', content: 'log me' }] }).withResponse();
    const id = response.headers.get('x-request-id');
    const d = await waitFor(async () => (await decisions(gw)).find((x) => x.request_id === id), { what: 'the decision' });
    assert.equal(d.api, 'anthropic');
    assert.equal(d.backend, 'edge');
  });
});

describe('Anthropic front: overflow, privacy, everything down', () => {
  test('local saturated: an Anthropic request spills to the Anthropic cloud (overflow); one with PII in a tool input stays local', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, pii: 'local_only' }));
    try {
      // Hold the only local slot (a hanging request that may not leave); its
      // max_tokens bounds how long the router expects it to hold the slot.
      await getJSON(`${edge.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ hang: true }) });
      const ac = new AbortController();
      const held = fetch(`${gw.url}/v1/messages`, {
        method: 'POST', signal: ac.signal,
        headers: { 'content-type': 'application/json', 'x-api-key': CLIENT_KEY, 'x-spillway-allow-cloud': 'false' },
        body: JSON.stringify({ model: 'chat', max_tokens: 4000, messages: [{ role: 'user', content: 'hold' }] }),
      }).then((r) => r.text()).catch(() => null);
      await waitFor(async () => (await getJSON(`${edge.url}/admin/stats`)).body.hanging === 1, { timeout: 10000, what: 'the local slot held' });
      await fetch(`${edge.url}/admin/faults`, { method: 'DELETE' });

      const { data: m, response } = await anth(gw).messages.create({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'a clean question' }] }).withResponse();
      assert.equal(response.headers.get('x-spillway-backend'), 'claude');
      assert.equal(response.headers.get('x-spillway-reason'), 'overflow');
      assert.equal(m.content[0].text, 'a clean question');
      const n = (await received(cloud)).length;
      assert.equal(n, 1);

      const secret = 'jane.doe.canary@example.org';
      const pending = anth(gw).messages.create({
        model: 'chat', max_tokens: 5, system: [{ type: 'text', text: 'assistant' }],
        messages: [
          { role: 'user', content: 'mail her' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'send_mail', input: { to: secret } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'sent' }] },
        ],
      }).withResponse();
      await waitFor(async () => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body.backends.find((b) => b.name === 'edge').queued === 1,
        { timeout: 10000, what: 'the PII request queued locally' });
      assert.equal((await received(cloud)).length, n, 'the PII request did not go to the cloud');
      ac.abort();
      await held;
      const { response: pr } = await pending;
      assert.equal(pr.headers.get('x-spillway-backend'), 'edge');
      assert.equal(pr.headers.get('x-spillway-reason'), 'privacy');
      assert.ok(!JSON.stringify(await received(cloud)).includes('jane.doe'), 'no fragment reached the cloud');
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('everything down: 529 overloaded_error in Anthropic shape', async () => {
    const gw = await startSpillway(config({ edgeUrl: 'http://127.0.0.1:9', cloudUrl: 'http://127.0.0.1:9' }));
    try {
      const r = await post(gw, '/v1/messages', { model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
      assert.equal(r.status, 529, r.text);
      assert.equal(r.json.type, 'error');
      assert.equal(r.json.error.type, 'overloaded_error');
      assert.equal(r.headers.get('x-spillway-backend'), 'none');
      await assert.rejects(anth(gw).messages.create({ model: 'chat', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
        (e) => e.status === 529);
    } finally {
      await gw.stop();
    }
  });

  test('policy mask: an Anthropic request spills masked (tool input and system too) and the answer comes back restored', async () => {
    const cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    const gw = await startSpillway(config({ edgeUrl: 'http://127.0.0.1:9', cloudUrl: cloud.url, pii: 'mask' }));
    try {
      const email = 'jane.doe.canary@example.org';
      const ask = (stream) => ({
        model: 'cloud-only', max_tokens: 50, system: [{ type: 'text', text: `the user is ${email}` }],
        messages: [
          { role: 'user', content: 'earlier' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { who: email } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'found' }, { type: 'text', text: `write to ${email}` }] },
        ],
        ...(stream ? { stream: true } : {}),
      });
      const m = await anth(gw).messages.create(ask(false));
      assert.equal(m.content[0].text, `write to ${email}`, 'the placeholder was restored');
      const streamed = await anth(gw).messages.stream(ask(true)).finalMessage();
      assert.equal(streamed.content[0].text, `write to ${email}`);
      const got = JSON.stringify(await received(cloud));
      assert.equal((await received(cloud)).length, 2);
      assert.ok(!got.includes('jane.doe'), 'no fragment reached the cloud');
      assert.match(got, /\[EMAIL_1\]/);
      const d = (await decisions(gw)).filter((x) => x.api === 'anthropic' && x.backend === 'claude');
      assert.equal(d.length, 2);
      assert.ok(d.every((x) => x.pii_outcome === 'masked_cloud'), JSON.stringify(d));
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('dialects: [openai, anthropic]: an Anthropic client goes through untranslated; a 529 with Retry-After fails over and opens the breaker', async () => {
    const both = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    const busy = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--error-rate', '1', '--error-status', '529', '--retry-after-s', '30']);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: busy, tier: cloud, url: "${busy.url}", model: claude-upstream, dialect: anthropic }
  - { name: both, tier: cloud, url: "${both.url}", model: claude-upstream, dialects: [openai, anthropic] }
models:
  - { name: m, backends: [busy, both] }
  - { name: both-only, backends: [both] }
routing:
  health_interval_ms: 100
  breaker: { failures: 1 }
`);
    try {
      const { data: m, response } = await new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 }).messages.create({
        model: 'both-only', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'text', text: 'as is', cache_control: { type: 'ephemeral' } }] }],
      }).withResponse();
      assert.equal(m.content[0].text, 'as is');
      assert.equal(response.headers.get('x-spillway-backend'), 'both');
      const [r] = await received(both);
      assert.equal(r.path, '/v1/messages');
      assert.deepEqual(r.body.messages[0].content[0].cache_control, { type: 'ephemeral' }, 'untranslated');

      const first = await post(gw, '/v1/messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'spill over' }] });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers.get('x-spillway-backend'), 'both');
      const id = first.headers.get('x-request-id');
      const d = await waitFor(async () => (await decisions(gw)).find((x) => x.request_id === id), { what: 'the decision' });
      assert.deepEqual(d.attempts.map((a) => [a.backend, a.outcome, a.status]), [['busy', 'failed', 529], ['both', 'ok', 200]]);
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
      assert.equal(st.backends.find((b) => b.name === 'busy').breaker, 'open', 'a 529 qualifies: the breaker opens (for Retry-After: 30 s)');
      const n = (await received(busy)).length;
      const second = await post(gw, '/v1/messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'again' }] });
      assert.equal(second.headers.get('x-spillway-backend'), 'both');
      assert.equal((await received(busy)).length, n, 'not attempted while its breaker is open');
    } finally {
      await gw.stop(); await both.stop(); await busy.stop();
    }
  });
});

describe('Anthropic upstream: an error event in the stream', () => {
  let errs, good, gw;
  const setFaults = (sim, f) => getJSON(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify(f) });
  before(async () => {
    // 5 tokens/s: the first token reaches the client 200 ms before the error
    // event does, so the error comes after the first byte.
    errs = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '5']);
    good = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: team, key: "${CLIENT_KEY}" }
backends:
  - { name: errs, tier: cloud, url: "${errs.url}", model: claude-upstream, dialect: anthropic }
  - { name: good, tier: cloud, url: "${good.url}", model: claude-upstream, dialect: anthropic }
models:
  - { name: errs-only, backends: [errs] }
  - { name: m, backends: [errs, good] }
routing:
  health_interval_ms: 100
  breaker: { failures: 1000 }
`);
  });
  after(async () => {
    await gw?.stop(); await errs?.stop(); await good?.stop();
  });
  const ask = { max_tokens: 50, messages: [{ role: 'user', content: 'abcdefghijklmnopqrstuvwxyz' }] };

  test('after the first token: an OpenAI client gets the error event and [DONE], an Anthropic client event: error', async () => {
    await setFaults(errs, { stream_error_after: 2 });
    // OpenAI client: the two tokens, then the SDK raises on the error event.
    let text = '';
    await assert.rejects(async () => {
      const stream = await oai(gw).chat.completions.create({ model: 'errs-only', stream: true, ...ask });
      for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? '';
    }, (e) => /error event/.test(e.message));
    assert.equal(text, 'abcdefgh');
    const raw = await post(gw, '/v1/chat/completions', { model: 'errs-only', stream: true, ...ask }, { authorization: `Bearer ${CLIENT_KEY}` });
    assert.equal(raw.status, 200);
    const events = raw.text.trim().split('\n\n');
    assert.equal(events.at(-1), 'data: [DONE]');
    assert.equal(JSON.parse(events.at(-2).slice(6)).error.code, 'upstream_stream_failed');

    // Anthropic client (native: the backend speaks Anthropic): the SDK raises on event: error.
    let atext = '';
    await assert.rejects(async () => {
      const s = anth(gw).messages.stream({ model: 'errs-only', ...ask });
      s.on('text', (t) => { atext += t; });
      await s.finalMessage();
    }, (e) => e.error?.type === 'error' && e.error.error.type === 'overloaded_error');
    assert.equal(atext, 'abcdefgh');
    const araw = await post(gw, '/v1/messages', { model: 'errs-only', stream: true, ...ask });
    const aev = araw.text.trim().split('\n\n');
    assert.match(aev.at(-1), /^event: error\ndata: \{"type":"error"/);
    assert.ok(!araw.text.includes('message_stop'), 'no message_stop after the error');
  });

  // The upstream's own error type reaches an Anthropic client: a mid-stream
  // overloaded_error stays overloaded_error (not api_error); an OpenAI client
  // gets OpenAI's error shape as before.
  test('an Anthropic upstream\'s mid-stream error type reaches an Anthropic client (overloaded_error, not api_error); OpenAI clients keep their shape', async () => {
    await setFaults(errs, { stream_error_after: 2 });
    const araw = await post(gw, '/v1/messages', { model: 'errs-only', stream: true, ...ask });
    const last = araw.text.trim().split('\n\n').at(-1);
    assert.match(last, /^event: error\ndata: /);
    assert.equal(JSON.parse(last.slice(last.indexOf('data: ') + 6)).error.type, 'overloaded_error');
    // the OpenAI client's shape as before
    const oraw = await post(gw, '/v1/chat/completions', { model: 'errs-only', stream: true, ...ask }, { authorization: `Bearer ${CLIENT_KEY}` });
    assert.equal(JSON.parse(oraw.text.trim().split('\n\n').at(-2).slice(6)).error.code, 'upstream_stream_failed');
  });

  // Masked, an Anthropic client's request to an Anthropic backend is translated
  // both ways (not passed through): the type still reaches the client.
  test('masked (translated both ways): the upstream\'s mid-stream error type reaches the Anthropic client too', async () => {
    const sim = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '5']);
    const mgw = await startSpillway(config({ edgeUrl: 'http://127.0.0.1:9', cloudUrl: sim.url, pii: 'mask' }));
    try {
      await setFaults(sim, { stream_error_after: 2 });
      const raw = await post(mgw, '/v1/messages', { model: 'cloud-only', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'write to jane.doe.canary@example.org' }] });
      const last = raw.text.trim().split('\n\n').at(-1);
      assert.match(last, /^event: error\ndata: /);
      assert.equal(JSON.parse(last.slice(last.indexOf('data: ') + 6)).error.type, 'overloaded_error');
      const got = JSON.stringify(await received(sim));
      assert.ok(!got.includes('jane.doe') && /\[EMAIL_1\]/.test(got), 'the masked (translated) path was taken');
    } finally {
      await mgw.stop(); await sim.stop();
    }
  });

  test('before the first token (after message_start): the attempt fails over to the next backend, both APIs', async () => {
    await setFaults(errs, { stream_error_after: 0 });
    let text = '';
    const { data: stream, response } = await oai(gw).chat.completions.create({ model: 'm', stream: true, ...ask }).withResponse();
    for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'abcdefghijklmnopqrstuvwxyz');
    assert.equal(response.headers.get('x-spillway-backend'), 'good');
    const id = response.headers.get('x-request-id');
    const d = await waitFor(async () => (await decisions(gw)).find((x) => x.request_id === id), { what: 'the decision' });
    assert.deepEqual(d.attempts.map((a) => [a.backend, a.outcome]), [['errs', 'failed'], ['good', 'ok']]);

    const s = anth(gw).messages.stream({ model: 'm', ...ask });
    const m = await s.finalMessage();
    assert.equal(m.content[0].text, 'abcdefghijklmnopqrstuvwxyz');
    const araw = await post(gw, '/v1/messages', { model: 'm', stream: true, ...ask });
    assert.equal(araw.headers.get('x-spillway-backend'), 'good');
    assert.equal(araw.text.match(/event: message_start/g).length, 1, 'one message_start: the failed attempt\'s was dropped');
    assert.ok(!araw.text.includes('event: error'));
  });
});

describe('images both ways, and pii.binary_parts on the Messages front', () => {
  let edge, cloud, gw;
  // A 1x1 PNG.
  const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(config({
      edgeUrl: edge.url, cloudUrl: cloud.url, pii: 'local_only',
      extra: '  binary_parts: allow\n',
    }).replace('slots: 1 }', 'slots: 1, supports_images: true }').replace('  - { name: cloud-only, backends: [claude] }',
      '  - { name: cloud-only, backends: [claude] }\n  - { name: cloud-strict, backends: [claude], pii_binary_parts: local }'));
  });
  after(async () => {
    await gw?.stop(); await edge?.stop(); await cloud?.stop();
  });
  const anthImage = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } };
  const oaiImage = { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } };

  test('an Anthropic base64 image block reaches an OpenAI backend as an image_url data: URL part', async () => {
    await clear(edge);
    const m = await anth(gw).messages.create({
      model: 'local-only', max_tokens: 20,
      messages: [{ role: 'user', content: [anthImage, { type: 'text', text: 'what is this' }] }],
    });
    assert.equal(m.content[0].text, 'what is this');
    const [r] = await received(edge);
    assert.deepEqual(r.body.messages[0].content, [oaiImage, { type: 'text', text: 'what is this' }]);
  });

  test('an OpenAI image_url data: URL reaches an Anthropic backend as a base64 image block, streamed too', async () => {
    await clear(cloud);
    const ask = { model: 'cloud-only', max_tokens: 20, messages: [{ role: 'user', content: [{ type: 'text', text: 'describe' }, oaiImage] }] };
    const c = await oai(gw).chat.completions.create(ask);
    assert.equal(c.choices[0].message.content, 'describe');
    let text = '';
    for await (const ch of await oai(gw).chat.completions.create({ ...ask, stream: true })) text += ch.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'describe');
    const got = await received(cloud);
    assert.equal(got.length, 2);
    for (const r of got) {
      assert.equal(r.path, '/v1/messages');
      assert.deepEqual(r.body.messages[0].content, [{ type: 'text', text: 'describe' }, anthImage]);
    }
  });

  test('binary_parts: local keeps an image off the cloud on the Messages front too (Anthropic error shape); allow lets it go whole', async () => {
    await clear(cloud);
    const body = (model) => ({ model, max_tokens: 20, messages: [{ role: 'user', content: [anthImage, { type: 'text', text: 'no pii here' }] }] });
    const r = await post(gw, '/v1/messages', body('cloud-strict'));
    assert.equal(r.status, 422, r.text);
    assert.equal(r.json.type, 'error');
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.match(r.json.error.message, /may not be sent to the cloud/);
    assert.equal((await received(cloud)).length, 0, 'the image did not reach the cloud');
    // The same through the OpenAI front.
    const o = await post(gw, '/v1/chat/completions', { model: 'cloud-strict', max_tokens: 20, messages: [{ role: 'user', content: [oaiImage, { type: 'text', text: 'no pii here' }] }] },
      { authorization: `Bearer ${CLIENT_KEY}` });
    assert.equal(o.status, 422, o.text);
    assert.match(o.json.error.message, /may not be sent to the cloud/);
    assert.equal((await received(cloud)).length, 0);

    const ok = await anth(gw).messages.create(body('cloud-only'));
    assert.equal(ok.content[0].text, 'no pii here');
    const [c] = await received(cloud);
    assert.deepEqual(c.body.messages[0].content[0], anthImage, 'the image block as the client sent it');
  });
});

describe('spend on an Anthropic-dialect cloud: the usage its answers report is what is settled', () => {
  test('both clients, streamed or not: the gateway\'s spend and tokens equal the cloud\'s own bill', async () => {
    const IN = 3, OUT = 15; // USD per million tokens
    const cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--decode-tps', '0']);
    const gw = await startSpillway(config({
      edgeUrl: 'http://127.0.0.1:9', cloudUrl: cloud.url,
      cloudOpts: `, price: { input_usd_per_mtok: ${IN}, output_usd_per_mtok: ${OUT} }, tpm: 1000000`,
    }).replace('  default_max_tokens: 300\n', '  default_max_tokens: 300\n  spend: { cap_usd: 100, window: day }\n'));
    try {
      const msgs = (t) => [{ role: 'user', content: `${t} ${'lorem ipsum '.repeat(20)}` }];
      // Output lengths differ from the estimate and from message_start's output_tokens: 1,
      // so only the final (cumulative) usage settles the right amount.
      await oai(gw).chat.completions.create({ model: 'cloud-only', max_tokens: 7, messages: msgs('a') });
      for await (const _ of await oai(gw).chat.completions.create({ model: 'cloud-only', max_tokens: 13, stream: true, messages: msgs('bb') })) { /* drain */ }
      await anth(gw).messages.create({ model: 'cloud-only', max_tokens: 21, messages: msgs('ccc') });
      await anth(gw).messages.stream({ model: 'cloud-only', max_tokens: 34, messages: msgs('dddd') }).finalMessage();
      const st = async () => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
      await waitFor(async () => (await st()).backends.find((b) => b.name === 'claude').in_flight === 0, { what: 'all settled' });
      const sim = (await getJSON(`${cloud.url}/admin/stats`)).body;
      assert.equal(sim.served, 4);
      assert.equal(sim.tokens_generated, 7 + 13 + 21 + 34);
      const bill = (sim.prompt_tokens * IN + sim.tokens_generated * OUT) / 1e6;
      const spend = (await st()).spend_usd;
      assert.ok(Math.abs(spend - bill) < 1e-9, `spend ${spend} = the cloud's bill ${bill}`);
      const d = (await decisions(gw)).filter((x) => x.backend === 'claude');
      assert.equal(d.length, 4);
      assert.equal(d.reduce((a, x) => a + x.tokens_in, 0), sim.prompt_tokens);
      assert.deepEqual(d.map((x) => x.tokens_out).sort((a, b) => a - b), [7, 13, 21, 34]);
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});
