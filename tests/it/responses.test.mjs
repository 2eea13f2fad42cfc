// POST /v1/responses through the gateway with the official `openai` SDK
// (responses.create, responses.stream, stream: true) and raw fetch, over each
// kind of backend: a chat-completions one (llama.cpp-style llmsim, the
// request translated), an Anthropic one (Messages), and one that speaks the
// Responses API itself (`dialects: [openai, responses]`, the client's body
// sent whole, its answer and events passed through). Every answer and every
// streamed event is validated against the official spec's schemas
// (tests/spec/openai_responses.json, see responses_lib.mjs). Also: function
// tool round trips, text.format json_schema judged by the output contract,
// overflow to the cloud, failover before the first byte and response.failed
// after it, fields chat cannot carry, the decision log (api: responses) and
// the metrics. Privacy is responses_privacy.test.mjs's.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { getJSON, startLlmsim, startSpillway, waitFor } from './lib/harness.mjs';
import { gatewayYaml, withProcs, ADMIN } from './lib/gateway.mjs';
import { holdLocal } from './lib/hold.mjs';
import { SPEC, SPEC_COMMIT, assertEvents, assertResponse, deltaText, rawEvents, validate } from './responses_lib.mjs';

const auth = { authorization: `Bearer ${ADMIN}` };
const client = (gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=1000`)).body.requests;
const clear = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });
const faults = (sim, body) => getJSON(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify(body) });
const noFaults = (sim) => fetch(`${sim.url}/admin/faults`, { method: 'DELETE' });
const post = (gw, body, headers = {}) => fetch(`${gw.url}/v1/responses`, {
  method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
});
async function decisions(gw, k) {
  let d;
  await waitFor(async () => (d = (await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: auth })).body.decisions).length >= k,
    { timeout: 10000, what: `decision ${k}` });
  return d;
}
async function collect(stream) {
  const events = [];
  for await (const e of stream) events.push(e);
  return events;
}
const ECHO = ['--reply', 'echo', '--decode-tps', '0'];

// A local chat backend, a cloud that speaks the Responses API as well as
// chat, an Anthropic cloud; models over each, and over a local and a cloud.
async function gateway(track, { edgeArgs = [], nativeArgs = [], routing = '', models = [] } = {}) {
  const edge = await track(startLlmsim(['--model', 'edge-model', ...ECHO, ...edgeArgs]));
  const native = await track(startLlmsim(['--model', 'native-model', ...ECHO, ...nativeArgs]));
  const claude = await track(startLlmsim(['--model', 'claude-model', ...ECHO, '--dialect', 'anthropic']));
  const gw = await track(startSpillway(gatewayYaml({
    backends: [
      { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 1 },
      { name: 'native', tier: 'cloud', url: native.url, model: 'native-model', dialects: { raw: '[openai, responses]' } },
      { name: 'claude', tier: 'cloud', url: claude.url, model: 'claude-model', dialect: 'anthropic' },
    ],
    models: [
      { name: 'chat', backends: ['edge'] },
      { name: 'resp', backends: ['native'] },
      { name: 'anth', backends: ['claude'] },
      { name: 'spill', backends: ['edge', 'native'] },
      ...models,
    ],
    routing,
  })));
  return { edge, native, claude, gw };
}

test('the schema file is the pinned spec', () => {
  assert.equal(SPEC.commit, SPEC_COMMIT);
});

describe('POST /v1/responses over each kind of backend', () => {
  test('a chat backend: the request translated, the answer a valid Response, whole and streamed', () => withProcs(async (track) => {
    const { edge, gw } = await gateway(track);
    const c = client(gw);
    const r = await c.responses.create({ model: 'chat', instructions: 'be brief', input: 'hello there', max_output_tokens: 50, metadata: { k: 'v' } });
    assertResponse(r);
    // the validator is no rubber stamp: a broken copy fails it, naming each fault
    const broken = structuredClone(r);
    broken.status = 'weird';
    delete broken.output[0].id;
    delete broken.usage.input_tokens_details.cache_write_tokens;
    assert.equal(validate({ $ref: '#/components/schemas/Response' }, broken).length, 3);
    assert.match(r.id, /^resp_[0-9a-f]{48}$/);
    assert.equal(r.status, 'completed');
    assert.equal(r.model, 'chat');
    assert.equal(r.output_text, 'hello there');
    assert.equal(r.instructions, 'be brief');
    assert.deepEqual(r.metadata, { k: 'v' });
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    const [got] = await received(edge);
    assert.equal(got.path, '/v1/chat/completions');
    assert.deepEqual(got.body.messages, [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there' }]);
    assert.equal(got.body.max_completion_tokens, 50);

    const events = await collect(await c.responses.create({ model: 'chat', input: 'abcdefghij', stream: true }));
    assertEvents(events);
    assert.equal(deltaText(events), 'abcdefghij');
    assert.equal(events.at(-1).type, 'response.completed');
    assert.equal(events.at(-1).response.output[0].content[0].text, 'abcdefghij');
    assert.ok(events.at(-1).response.usage.output_tokens > 0);
    // the ids are one response's
    assert.ok(events.every((e) => !e.response || e.response.id === events[0].response.id));

    const final = await c.responses.stream({ model: 'chat', input: 'stream me' }).finalResponse();
    assertResponse(final);
    assert.equal(final.output_text, 'stream me');

    const d = await decisions(gw, 3);
    assert.deepEqual(d.map((x) => [x.api, x.backend, x.status]), [['responses', 'edge', 200], ['responses', 'edge', 200], ['responses', 'edge', 200]]);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /^spillway_requests_total\{model="chat",backend="edge",tier="local",reason="[a-z_]+"\} 3$/m);
  }));

  test('an Anthropic backend: Messages upstream, a Response back, whole and streamed', () => withProcs(async (track) => {
    const { claude, gw } = await gateway(track);
    const c = client(gw);
    const r = await c.responses.create({ model: 'anth', instructions: 'terse', input: [{ role: 'user', content: [{ type: 'input_text', text: 'from claude' }] }] });
    assertResponse(r);
    assert.equal(r.output_text, 'from claude');
    const [got] = await received(claude);
    assert.equal(got.path, '/v1/messages');
    assert.equal(got.body.model, 'claude-model');
    assert.ok(JSON.stringify(got.body.system).includes('terse'));
    const events = await collect(await c.responses.create({ model: 'anth', input: 'streamed claude', stream: true }));
    assertEvents(events);
    assert.equal(deltaText(events), 'streamed claude');
    assert.ok(events.at(-1).response.usage.input_tokens > 0);
  }));

  test('a Responses backend: the client\'s body goes whole (fields chat cannot carry too), the answer and events pass through', () => withProcs(async (track) => {
    const { native, gw } = await gateway(track);
    const c = client(gw);
    const body = { model: 'resp', input: 'native please', truncation: 'auto', text: { verbosity: 'low' } };
    const r = await c.responses.create(body);
    assertResponse(r);
    assert.equal(r.output_text, 'native please');
    assert.equal(r.model, 'resp');
    assert.match(r.id, /^resp_[0-9a-f]{48}$/, 'the gateway names the response it may store');
    assert.equal(r.previous_response_id, null);
    const [got] = await received(native);
    assert.equal(got.path, '/v1/responses');
    assert.deepEqual(got.body, { ...body, model: 'native-model', store: false }, 'the backend keeps no copy');

    await clear(native);
    const res = await post(gw, { ...body, stream: true });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-spillway-backend'), 'native');
    const events = await rawEvents(res);
    assertEvents(events);
    assert.equal(deltaText(events), 'native please');
    assert.ok(events.every((e) => !e.response || e.response.model === 'resp'), 'model rewritten');
    assert.ok(events.every((e) => !e.response || /^resp_[0-9a-f]{48}$/.test(e.response.id)), 'the gateway\'s id');
    assert.deepEqual((await received(native))[0].body, { ...body, stream: true, model: 'native-model', store: false });
    const d = await decisions(gw, 2);
    assert.ok(d[0].tokens_in > 0 && d[0].tokens_out > 0, 'usage read from response.completed');
    assert.equal(d[0].api, 'responses');

    // a field chat cannot carry, to a chat-only backend: a 400 naming it
    const bad = await post(gw, { ...body, model: 'chat' });
    assert.equal(bad.status, 400);
    const e = (await bad.json()).error;
    assert.equal(e.code, 'untranslatable');
    assert.equal(e.param, 'truncation');
  }));

  test('function tools: a forced call and its output, round trip over chat, Anthropic and Responses backends', () => withProcs(async (track) => {
    const { edge, gw } = await gateway(track);
    const c = client(gw);
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: false }];
    for (const model of ['chat', 'anth', 'resp']) {
      const r = await c.responses.create({ model, input: '{"city":"Oslo"}', tools, tool_choice: { type: 'function', name: 'get_weather' } });
      assertResponse(r);
      const call = r.output.find((o) => o.type === 'function_call');
      assert.ok(call, `${model}: a function call`);
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { city: 'Oslo' });
      // (llmsim streams a forced tool's call in Anthropic's and the Responses
      // API only; its chat stream answers the tool's input as text)
      if (model !== 'chat') {
        const events = await collect(await c.responses.create({ model, input: '{"city":"Oslo"}', tools, tool_choice: { type: 'function', name: 'get_weather' }, stream: true }));
        assertEvents(events);
        const args = deltaText(events, 'response.function_call_arguments.delta');
        assert.deepEqual(JSON.parse(args), { city: 'Oslo' });
        assert.equal(events.find((e) => e.type === 'response.function_call_arguments.done').arguments, args);
        assert.equal(events.at(-1).response.output.find((o) => o.type === 'function_call').arguments, args);
      }
      const next = await c.responses.create({
        model, tools,
        input: [{ role: 'user', content: 'weather in Oslo?' },
          { type: 'function_call', call_id: call.call_id, name: 'get_weather', arguments: call.arguments },
          { type: 'function_call_output', call_id: call.call_id, output: '12C and rain' },
          { role: 'user', content: 'thanks' }],
      });
      assertResponse(next);
      assert.equal(next.output_text, 'thanks');
    }
    const last = (await received(edge)).at(-1).body;
    assert.deepEqual(last.messages.slice(1, 3), [
      { role: 'assistant', content: null, tool_calls: [{ id: last.messages[1].tool_calls[0].id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: last.messages[1].tool_calls[0].id, content: '12C and rain' },
    ]);
  }));

  test('text.format json_schema: the output contract judges the answer (a 502 in OpenAI\'s shape under reject, response.failed under stream: enforce), whatever the backend', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', ...ECHO]));
    const native = await track(startLlmsim(['--model', 'native-model', ...ECHO]));
    const gw = await track(startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edge.url}", model: edge-model }
  - { name: native, tier: cloud, url: "${native.url}", model: native-model, dialects: [openai, responses] }
models:
  - { name: strict-chat, backends: [edge], contract: { on_violation: reject, stream: enforce } }
  - { name: strict-resp, backends: [native], contract: { on_violation: reject, stream: enforce } }
routing:
  health_interval_ms: 100
`));
    const SCHEMA = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name', 'age'], additionalProperties: false };
    const format = { type: 'json_schema', name: 'person', strict: true, schema: SCHEMA };
    const c = client(gw);
    for (const model of ['strict-chat', 'strict-resp']) {
      const r = await c.responses.create({ model, input: '{"name":"Ada","age":36}', text: { format } });
      assertResponse(r);
      assert.deepEqual(JSON.parse(r.output_text), { name: 'Ada', age: 36 });
      assert.equal(r.text.format.type, 'json_schema');
      await assert.rejects(c.responses.create({ model, input: 'not JSON at all', text: { format } }),
        (e) => e.status === 502 && e.code === 'contract_violation' && e.param === 'response_format');
      const events = await rawEvents(await post(gw, { model, input: 'still not JSON', text: { format }, stream: true }));
      assertEvents(events);
      assert.equal(events.at(-1).type, 'response.failed', `${model}: a broken contract ends the stream failed`);
      assert.match(events.at(-1).response.error.message, /JSON schema/);
    }
    const d = await decisions(gw, 6);
    assert.deepEqual(d.map((x) => x.contract).reverse(), ['ok', 'invalid_json', 'invalid_json', 'ok', 'invalid_json', 'invalid_json']);
    assert.equal((await received(edge))[0].body.response_format.type, 'json_schema');
    assert.deepEqual((await received(native))[0].body.text, { format });
  }));
});

describe('what real clients send', () => {
  test('a Codex-shaped turn over a chat backend: client_metadata and past reasoning items are no model input, the rest is carried', () => withProcs(async (track) => {
    const { edge, gw } = await gateway(track);
    const body = {
      model: 'chat', stream: true, store: false, include: ['reasoning.encrypted_content'],
      reasoning: { summary: 'auto' }, prompt_cache_key: 'session-1', tool_choice: 'auto', parallel_tool_calls: true,
      client_metadata: { session_id: 'session-1', turn_id: 'turn-2', 'x-codex-turn-metadata': '{"a":1}' },
      instructions: 'You are a coding agent.',
      tools: [{ type: 'function', name: 'exec_command', description: 'Runs a command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } }, strict: false }],
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'sandbox: read-only' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list the files' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'I should run ls.' }], encrypted_content: null },
        { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'exec_command', arguments: '{"cmd":"ls"}', status: 'completed' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.c b.c' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'done?' }] },
      ],
    };
    const res = await post(gw, body);
    assert.equal(res.status, 200);
    const events = await rawEvents(res);
    assertEvents(events);
    assert.equal(deltaText(events), 'done?');
    const [got] = await received(edge);
    assert.equal(got.body.prompt_cache_key, 'session-1');
    assert.equal(got.body.client_metadata, undefined);
    assert.deepEqual(got.body.messages.map((m) => m.role), ['system', 'developer', 'user', 'assistant', 'tool', 'user']);
    assert.ok(!JSON.stringify(got.body).includes('I should run ls'), 'past reasoning is not sent');
  }));
});

describe('routing and failures', () => {
  test('overflow: with the local slot held, a Responses request moves to the cloud (reason overflow)', () => withProcs(async (track) => {
    const { edge, gw } = await gateway(track, { routing: '  ttft_budget_ms: 300' });
    const hold = await holdLocal(gw, edge, { admin: ADMIN, model: 'spill' });
    try {
      const res = await post(gw, { model: 'spill', input: 'overflow me', stream: true });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-spillway-backend'), 'native');
      assert.equal(res.headers.get('x-spillway-reason'), 'overflow');
      const events = await rawEvents(res);
      assertEvents(events);
      assert.equal(deltaText(events), 'overflow me');
    } finally {
      await hold.release();
    }
  }));

  test('failover before the first byte: a failing local backend, the cloud answers, whole and streamed', () => withProcs(async (track) => {
    const { edge, gw } = await gateway(track);
    await faults(edge, { error_rate: 1, error_status: 503 });
    const r = await client(gw).responses.create({ model: 'spill', input: 'second try' });
    assertResponse(r);
    assert.equal(r.output_text, 'second try');
    const res = await post(gw, { model: 'spill', input: 'second stream', stream: true });
    assert.equal(res.headers.get('x-spillway-backend'), 'native');
    const events = await rawEvents(res);
    assertEvents(events);
    assert.equal(deltaText(events), 'second stream');
    const d = await decisions(gw, 2);
    assert.deepEqual(d[0].attempts.map((a) => [a.backend, a.outcome]), [['edge', 'failed'], ['native', 'ok']]);
  }));

  test('after the first byte: response.failed ends the stream (chat and Responses backends), valid and numbered', () => withProcs(async (track) => {
    // tokens one by one (20 per second), so the first goes out before the fault
    const slow = ['--decode-tps', '20'];
    const { edge, native, gw } = await gateway(track, { edgeArgs: slow, nativeArgs: slow });
    for (const [sim, model] of [[edge, 'chat'], [native, 'resp']]) {
      await faults(sim, { stream_error_after: 2 });
      const res = await post(gw, { model, input: 'one two three four five six seven', stream: true });
      assert.equal(res.status, 200);
      const events = await rawEvents(res);
      assertEvents(events);
      assert.equal(events.at(-1).type, 'response.failed', `${model}: ends failed`);
      assert.equal(events.at(-1).response.status, 'failed');
      assert.equal(events.at(-1).response.error.code, 'server_error');
      assert.ok(events.filter((e) => e.type === 'response.output_text.delta').length >= 1);
      await noFaults(sim);
    }
  }));
});

describe('a backend that speaks only the Responses API', () => {
  test('serves Responses clients, refuses others (a 400, nothing translated to it), is warmed in its own API', () => withProcs(async (track) => {
    const sim = await track(startLlmsim(['--model', 'r-model', ...ECHO]));
    const gw = await track(startSpillway(gatewayYaml({
      backends: [{ name: 'only', tier: 'local', url: sim.url, model: 'r-model', dialect: 'responses', keep_warm_ms: 100 }],
      models: [{ name: 'm', backends: ['only'] }],
    })));
    await waitFor(async () => (await received(sim)).some((q) => q.path === '/v1/responses' && q.body.input === 'ping'),
      { timeout: 10000, what: 'a warm-up ping in the Responses API' });
    const ping = (await received(sim)).find((q) => q.body.input === 'ping');
    assert.deepEqual(ping.body, { model: 'r-model', max_output_tokens: 16, input: 'ping' });
    const r = await client(gw).responses.create({ model: 'm', input: 'only responses' });
    assertResponse(r);
    assert.equal(r.output_text, 'only responses');
    await clear(sim);
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(chat.status, 400);
    assert.equal((await chat.json()).error.code, 'untranslatable');
    assert.ok((await received(sim)).every((q) => q.body.input === 'ping'), 'nothing but pings reached it');
  }));
});

describe('spend', () => {
  test('a priced cloud: the reservation\'s limit goes in the client\'s own body (max_output_tokens), the cost is settled from the Responses usage', () => withProcs(async (track) => {
    const native = await track(startLlmsim(['--model', 'native-model', ...ECHO]));
    const claude = await track(startLlmsim(['--model', 'claude-model', ...ECHO, '--dialect', 'anthropic']));
    const price = { raw: '{ input_usd_per_mtok: 1000, output_usd_per_mtok: 2000 }' };
    const gw = await track(startSpillway(gatewayYaml({
      backends: [
        { name: 'native', tier: 'cloud', url: native.url, model: 'native-model', dialects: { raw: '[openai, responses]' }, price, max_output_tokens: 77 },
        { name: 'claude', tier: 'cloud', url: claude.url, model: 'claude-model', dialect: 'anthropic', price, max_output_tokens: 77 },
      ],
      models: [{ name: 'resp', backends: ['native'] }, { name: 'anth', backends: ['claude'] }],
      routing: '  spend: { cap_usd: 1000 }',
    })));
    let k = 0;
    for (const [model, sim] of [['resp', native], ['anth', claude]]) {
      for (const stream of [false, true]) {
        k++;
        await clear(sim);
        const res = await post(gw, { model, input: 'what does it cost', stream });
        assert.equal(res.status, 200);
        const usage = stream ? (await rawEvents(res)).at(-1).response.usage : (await res.json()).usage;
        const [got] = await received(sim);
        assert.equal(model === 'resp' ? got.body.max_output_tokens : got.body.max_tokens, 77, `${model}: the reserved limit is sent`);
        const all = await decisions(gw, k); // (newest first; a stream's is logged after its last event)
        assert.equal(all.length, k);
        const d = all[0];
        assert.equal(d.api, 'responses');
        assert.equal(d.tokens_in, usage.input_tokens);
        assert.equal(d.tokens_out, usage.output_tokens);
        const want = (usage.input_tokens * 1000 + usage.output_tokens * 2000) / 1e6;
        assert.ok(Math.abs(d.cost_usd - want) < 1e-9, `${model} stream=${stream}: cost ${d.cost_usd}, want ${want}`);
      }
    }
  }));
});

describe('the door', () => {
  test('errors in OpenAI\'s shape: a bad body, an unknown model, previous_response_id, a missing key', () => withProcs(async (track) => {
    const e = await track(startLlmsim(['--model', 'edge-model', ...ECHO]));
    const gw = await track(startSpillway(gatewayYaml({
      backends: [{ name: 'edge', tier: 'local', url: e.url, model: 'edge-model' }],
      models: [{ name: 'chat', backends: ['edge'] }],
      keys: 'keys:\n  - { name: app, key: "sk-app" }',
    })));
    const key = { authorization: 'Bearer sk-app' };
    const noKey = await post(gw, { model: 'chat', input: 'x' });
    assert.equal(noKey.status, 401);
    assert.ok((await noKey.json()).error.message);
    assert.ok(noKey.headers.get('x-request-id'));
    const missing = await post(gw, { model: 'chat' }, key);
    assert.equal(missing.status, 400);
    assert.equal((await missing.json()).error.param, 'input');
    const unknown = await post(gw, { model: 'nope', input: 'x' }, key);
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, 'model_not_found');
    const prev = await post(gw, { model: 'chat', input: 'x', previous_response_id: 'resp_abc' }, key);
    assert.equal(prev.status, 404);
    const pe = (await prev.json()).error;
    assert.equal(pe.param, 'previous_response_id');
    assert.equal(pe.code, 'previous_response_not_found');
    assert.equal(pe.type, 'invalid_request_error');
    const hosted = await post(gw, { model: 'chat', input: 'x', tools: [{ type: 'web_search' }] }, key);
    assert.equal(hosted.status, 400);
    assert.equal((await hosted.json()).error.param, 'tools[0].type');
    const ok = await post(gw, { model: 'chat', input: 'x' }, key);
    assert.equal(ok.status, 200);
    assertResponse(await ok.json());
    const d = await decisions(gw, 6);
    assert.ok(d.every((x) => x.api === 'responses'), 'every decision api: responses');
  }));
});
