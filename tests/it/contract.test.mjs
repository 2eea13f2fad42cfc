// The output contract with the official openai client: a request with
// response_format json_schema gets its answer checked against the schema on
// whichever tier served it. The local simulator conforms (it echoes the
// JSON it is sent); the cloud one drifts (llmsim --drift: another shape, or
// prose). pass logs and counts, reject answers 502 contract_violation, retry
// asks the other tier once; streamed answers are judged at the end.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';

const ADMIN = 'sk-admin-contract';
const auth = { authorization: `Bearer ${ADMIN}` };

const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1 }, age: { type: 'integer', minimum: 0 } },
  required: ['name', 'age'],
  additionalProperties: false,
};
const ANSWER = '{"name":"Ada","age":36}';
const responseFormat = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: SCHEMA } };

const config = (edgeUrl, cloudUrl) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-2025-01-31 }
models:
  - { name: chat, backends: [edge, cloud] }
  - { name: strict, backends: [edge, cloud], contract: { on_violation: reject, stream: enforce } }
  - { name: retry, backends: [edge, cloud], contract: { on_violation: retry } }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
pii:
  policy: off
`;

const client = (gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });
const ask = (gw, model, extra = {}) => client(gw).chat.completions.create({
  model, max_tokens: 64, response_format: responseFormat, messages: [{ role: 'user', content: ANSWER }], ...extra,
});
const decisions = async (gw, n = 1) => (await getJSON(`${gw.url}/admin/decisions?n=${n}`, { headers: auth })).body.decisions;
// The k-th decision of a fresh gateway, once logged: a stream's client can see
// its last event before the gateway has finished the request and logged it.
async function decisionNo(gw, k) {
  let d;
  await waitFor(async () => (d = await decisions(gw, 1000)).length >= k, { timeout: 10000, what: `decision ${k}` });
  assert.equal(d.length, k, 'no other request was logged');
  return d[0];
}
const gwBackend = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.backends.find((b) => b.name === name);
async function violations(gw, backend, model) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = text.match(new RegExp(`^spillway_contract_violations_total\\{backend="${backend}",model="${model}"\\} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : 0;
}

async function withGateway(fn) {
  const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
  const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--drift', 'shape']);
  const gw = await startSpillway(config(edge.url, cloud.url));
  try {
    await fn({ gw, edge, cloud });
  } finally {
    await gw.stop(); await edge.stop(); await cloud.stop();
  }
}

describe('output contract', () => {
  test('pass: the local answer conforms (ok); the cloud\'s drifted answer goes through, logged as violation or invalid_json and counted per backend', async () => {
    await withGateway(async ({ gw, edge, cloud }) => {
      const { data: local, response } = await ask(gw, 'chat').withResponse();
      assert.equal(response.headers.get('x-spillway-backend'), 'edge');
      assert.deepEqual(JSON.parse(local.choices[0].message.content), { name: 'Ada', age: 36 });
      assert.equal((await decisions(gw))[0].contract, 'ok');

      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const { data: drifted, response: r2 } = await ask(gw, 'chat').withResponse();
      assert.equal(r2.headers.get('x-spillway-backend'), 'cloud');
      assert.ok(JSON.parse(drifted.choices[0].message.content).answer, 'the drifted shape reached the client');
      assert.equal((await decisions(gw))[0].contract, 'violation');
      assert.equal(await violations(gw, 'cloud', 'chat'), 1);
      assert.equal(await violations(gw, 'edge', 'chat'), 0);

      await getJSON(`${cloud.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ drift: 'prose' }) });
      await ask(gw, 'chat');
      assert.equal((await decisions(gw))[0].contract, 'invalid_json');
      assert.equal(await violations(gw, 'cloud', 'chat'), 2);

      // Without response_format nothing is judged.
      await client(gw).chat.completions.create({ model: 'chat', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal((await decisions(gw))[0].contract, undefined);
      await hold.release();
    });
  });

  test('reject: a drifted cloud answer becomes 502 contract_violation in OpenAI\'s shape', async () => {
    await withGateway(async ({ gw, edge }) => {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      await assert.rejects(ask(gw, 'strict'), (e) => {
        assert.equal(e.status, 502);
        assert.equal(e.code, 'contract_violation');
        assert.equal(e.type, 'server_error');
        assert.match(e.message, /cloud/);
        return true;
      });
      const d = (await decisions(gw))[0];
      assert.equal(d.status, 502);
      assert.equal(d.contract, 'violation');
      assert.equal(d.backend, 'cloud');
      // Spillway refused the answer: a rejection, code contract_violation; the
      // refused answer's backend and tokens stay in the line and the token counter.
      assert.equal(d.decision, 'rejected');
      assert.equal(d.code, 'contract_violation');
      assert.ok(d.tokens_out > 0, 'the refused answer\'s tokens are logged');
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      assert.match(metrics, /^spillway_rejections_total\{code="contract_violation"\} 1$/m);
      assert.match(metrics, /^spillway_tokens_total\{backend="cloud",direction="out"\} [1-9]/m);
      assert.equal(await violations(gw, 'cloud', 'strict'), 1);
      await hold.release();
      // The local answer conforms: served as usual.
      const ok = await ask(gw, 'strict');
      assert.deepEqual(JSON.parse(ok.choices[0].message.content), { name: 'Ada', age: 36 });
    });
  });

  test('retry: a drifted cloud answer is asked again of the local tier, whose conforming answer is served', async () => {
    await withGateway(async ({ gw, edge }) => {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const pending = ask(gw, 'retry').withResponse();
      await waitFor(async () => (await gwBackend(gw, 'edge')).queued === 1, { timeout: 10000, what: 'the retry waiting for the local slot' });
      await hold.release();
      const { data, response } = await pending;
      assert.equal(response.headers.get('x-spillway-backend'), 'edge');
      assert.deepEqual(JSON.parse(data.choices[0].message.content), { name: 'Ada', age: 36 });
      const d = (await decisions(gw))[0];
      assert.equal(d.contract, 'ok');
      assert.deepEqual(d.attempts.map((a) => [a.backend, a.error]), [['cloud', 'contract_violation'], ['edge', null]]);
      assert.equal(await violations(gw, 'cloud', 'retry'), 1);
    });
  });

  test('stream: judged at the end; enforce ends a drifted stream with an error event, log lets it finish and counts it', async () => {
    await withGateway(async ({ gw, edge }) => {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const stream = await ask(gw, 'strict', { stream: true });
      let text = '';
      await assert.rejects((async () => { for await (const c of stream) text += c.choices[0]?.delta?.content ?? ''; })(),
        (e) => /JSON schema/.test(e.message));
      assert.ok(text.includes('answer'), 'the drifted content streamed before the verdict');
      assert.equal((await decisionNo(gw, 1)).contract, 'violation');

      let logged = '';
      for await (const c of await ask(gw, 'chat', { stream: true })) logged += c.choices[0]?.delta?.content ?? '';
      assert.ok(JSON.parse(logged).answer);
      assert.equal((await decisionNo(gw, 2)).contract, 'violation');
      assert.equal(await violations(gw, 'cloud', 'chat'), 1);
      await hold.release();

      let ok = '';
      for await (const c of await ask(gw, 'strict', { stream: true })) ok += c.choices[0]?.delta?.content ?? '';
      assert.equal(ok, ANSWER);
      // the held request is logged too, before or after this one
      await decisionNo(gw, 4);
      assert.equal((await decisions(gw, 4)).find((d) => d.model === 'strict').contract, 'ok');
    });
  });
});

// The Messages front: Anthropic clients have no response_format; a
// tool_choice that forces one tool is their way to ask for a shape, so the
// forced tool's input is held to its input_schema under the same policy.
describe('output contract on the Messages front: a forced tool\'s input against its input_schema', () => {
  const TOOL = { name: 'record_person', description: 'store a person', input_schema: SCHEMA };
  const anthAsk = (gw, model) => new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 }).messages.create({
    model, max_tokens: 64, tools: [TOOL], tool_choice: { type: 'tool', name: TOOL.name },
    messages: [{ role: 'user', content: ANSWER }],
  }).withResponse();
  async function withAnth(fn) {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edge.url}", model: edge-model }
  - { name: claude, tier: cloud, url: "${cloud.url}", model: claude-upstream, dialect: anthropic }
models:
  - { name: local-pass, backends: [edge] }
  - { name: cloud-pass, backends: [claude] }
  - { name: cloud-strict, backends: [claude], contract: { on_violation: reject } }
  - { name: cloud-enforce, backends: [claude], contract: { stream: enforce } }
  - { name: retry, backends: [edge, claude], contract: { on_violation: retry } }
routing:
  health_interval_ms: 100
pii:
  policy: off
`);
    try {
      await fn({ gw, edge, cloud });
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  }
  const drift = (sim, d) => getJSON(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify(d ? { drift: d } : {}) });

  test('pass: a conforming tool input is ok (translated from an OpenAI backend); a drifted one from an Anthropic backend goes through as violation, counted', () => withAnth(async ({ gw, cloud }) => {
    const { data: ok } = await anthAsk(gw, 'local-pass');
    assert.equal(ok.stop_reason, 'tool_use');
    assert.deepEqual(ok.content[0], { type: 'tool_use', id: ok.content[0].id, name: TOOL.name, input: { name: 'Ada', age: 36 } });
    assert.equal((await decisions(gw))[0].contract, 'ok');
    await drift(cloud, 'shape');
    const { data: bad } = await anthAsk(gw, 'cloud-pass');
    assert.deepEqual(bad.content[0].input, { answer: ANSWER });
    assert.equal((await decisions(gw))[0].contract, 'violation');
    assert.equal(await violations(gw, 'claude', 'cloud-pass'), 1);
  }));

  test('reject: a drifted tool input becomes a 502 in Anthropic\'s error shape naming the tool', () => withAnth(async ({ gw, cloud }) => {
    await drift(cloud, 'prose');
    const r = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cloud-strict', max_tokens: 64, tools: [TOOL], tool_choice: { type: 'tool', name: TOOL.name }, messages: [{ role: 'user', content: ANSWER }] }),
    });
    assert.equal(r.status, 502);
    const d = (await decisions(gw))[0];
    assert.deepEqual([d.decision, d.code, d.backend, d.api], ['rejected', 'contract_violation', 'claude', 'anthropic']);
    const body = await r.json();
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'api_error');
    assert.match(body.error.message, /tool 'record_person' that tool_choice forces/);
    await assert.rejects(anthAsk(gw, 'cloud-strict'), (e) => e.status === 502 && e.error.error.type === 'api_error');
    await drift(cloud, null);
    const { data: fine } = await anthAsk(gw, 'cloud-strict');
    assert.deepEqual(fine.content[0].input, { name: 'Ada', age: 36 });
  }));

  test('an OpenAI client\'s response_format to an Anthropic backend: sent as a forced tool, its input is the content, judged the same (ok, reject)', () => withAnth(async ({ gw, cloud }) => {
    await fetch(`${cloud.url}/admin/received`, { method: 'DELETE' });
    const c = await ask(gw, 'cloud-pass');
    assert.equal(c.choices[0].message.content, ANSWER);
    assert.equal(c.choices[0].finish_reason, 'stop');
    assert.equal((await decisions(gw))[0].contract, 'ok');
    const [r] = (await getJSON(`${cloud.url}/admin/received`)).body.requests;
    assert.equal(r.body.response_format, undefined);
    assert.deepEqual(r.body.tools.map((t) => [t.name, t.input_schema]), [['json_answer', SCHEMA]]);
    assert.deepEqual(r.body.tool_choice, { type: 'tool', name: 'json_answer' });
    await drift(cloud, 'shape');
    await assert.rejects(ask(gw, 'cloud-strict'), (e) => e.status === 502 && e.code === 'contract_violation');
    assert.equal((await decisions(gw))[0].contract, 'violation');
  }));

  // Streamed, the forced tool's input_json_delta fragments come back as
  // delta.content and the whole is judged at the end, as from an OpenAI backend.
  test('an OpenAI client\'s streamed response_format to an Anthropic backend: the forced tool\'s input streams as content, judged at the end (ok; log counts a violation; enforce ends with the error event)', () => withAnth(async ({ gw, cloud }) => {
    await fetch(`${cloud.url}/admin/received`, { method: 'DELETE' });
    let text = '';
    const finish = [];
    for await (const ch of await ask(gw, 'cloud-enforce', { stream: true })) {
      text += ch.choices[0]?.delta?.content ?? '';
      if (ch.choices[0]?.finish_reason) finish.push(ch.choices[0].finish_reason);
      assert.equal(ch.choices[0]?.delta?.tool_calls, undefined, 'the format tool is not a tool call for the client');
    }
    assert.equal(text, ANSWER);
    assert.deepEqual(finish, ['stop']);
    assert.equal((await decisionNo(gw, 1)).contract, 'ok');
    const [r] = (await getJSON(`${cloud.url}/admin/received`)).body.requests;
    assert.equal(r.body.stream, true);
    assert.deepEqual(r.body.tool_choice, { type: 'tool', name: 'json_answer' });
    await drift(cloud, 'shape');
    let logged = '';
    for await (const ch of await ask(gw, 'cloud-pass', { stream: true })) logged += ch.choices[0]?.delta?.content ?? '';
    assert.deepEqual(JSON.parse(logged), { answer: ANSWER });
    assert.equal((await decisionNo(gw, 2)).contract, 'violation');
    assert.equal(await violations(gw, 'claude', 'cloud-pass'), 1);
    let enforced = '';
    await assert.rejects((async () => {
      for await (const ch of await ask(gw, 'cloud-enforce', { stream: true })) enforced += ch.choices[0]?.delta?.content ?? '';
    })(), (e) => /JSON schema/.test(e.message));
    assert.ok(enforced.includes('answer'), 'the drifted content streamed before the verdict');
    assert.equal((await decisionNo(gw, 3)).contract, 'violation');
    assert.equal(await violations(gw, 'claude', 'cloud-enforce'), 1);
  }));

  // An Anthropic client's stream from an Anthropic backend goes through
  // untranslated; the forced tool's input_json_delta fragments are collected
  // on the way and judged at message_stop.
  test('streamed from an Anthropic backend, passed through: the forced tool\'s input is judged at the end (ok; log counts a violation; enforce ends with event: error before message_stop)', () => withAnth(async ({ gw, cloud }) => {
    const anthStream = (model) => new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 }).messages.stream({
      model, max_tokens: 64, tools: [TOOL], tool_choice: { type: 'tool', name: TOOL.name },
      messages: [{ role: 'user', content: ANSWER }],
    });
    await fetch(`${cloud.url}/admin/received`, { method: 'DELETE' });
    const ok = await anthStream('cloud-enforce').finalMessage();
    assert.equal(ok.stop_reason, 'tool_use');
    assert.deepEqual(ok.content[0].input, { name: 'Ada', age: 36 });
    assert.equal((await decisionNo(gw, 1)).contract, 'ok');
    const [r] = (await getJSON(`${cloud.url}/admin/received`)).body.requests;
    assert.deepEqual(r.body.tool_choice, { type: 'tool', name: TOOL.name }, 'the client\'s own body (not translated)');
    assert.equal(r.body.stream, true);
    await drift(cloud, 'shape');
    const bad = await anthStream('cloud-pass').finalMessage();
    assert.deepEqual(bad.content[0].input, { answer: ANSWER });
    assert.equal((await decisionNo(gw, 2)).contract, 'violation');
    assert.equal(await violations(gw, 'claude', 'cloud-pass'), 1);
    await assert.rejects(anthStream('cloud-enforce').finalMessage(),
      (e) => e.error?.error?.type === 'api_error' && /input_schema/.test(e.error.error.message));
    assert.equal((await decisionNo(gw, 3)).contract, 'violation');
    assert.equal(await violations(gw, 'claude', 'cloud-enforce'), 1);
    const raw = await (await fetch(`${gw.url}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'cloud-enforce', stream: true, max_tokens: 64, tools: [TOOL], tool_choice: { type: 'tool', name: TOOL.name }, messages: [{ role: 'user', content: ANSWER }] }),
    })).text();
    const events = raw.trim().split('\n\n');
    assert.match(events.at(-1), /^event: error\ndata: \{"type":"error"/);
    assert.ok(raw.includes('input_json_delta') && !raw.includes('message_stop'), 'the input streamed; no message_stop after the error');
  }));

  // The streamed text the contract collects is bounded by
  // limits.max_response_bytes: a longer input is judged invalid_json, never
  // held whole; a short one in the same gateway is ok.
  test('streamed: the collected tool input is bounded by limits.max_response_bytes (beyond: invalid_json), native and translated', async () => {
    const cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: claude, tier: cloud, url: "${cloud.url}", model: claude-upstream, dialect: anthropic }
models:
  - { name: cloud-pass, backends: [claude] }
limits: { max_response_bytes: 1024 }
routing:
  health_interval_ms: 100
pii:
  policy: off
`);
    try {
      const long = JSON.stringify({ name: 'a'.repeat(1500), age: 36 });
      const anthStream = (content) => new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 }).messages.stream({
        model: 'cloud-pass', max_tokens: 1000, tools: [TOOL], tool_choice: { type: 'tool', name: TOOL.name },
        messages: [{ role: 'user', content }],
      }).finalMessage();
      assert.deepEqual((await anthStream(ANSWER)).content[0].input, { name: 'Ada', age: 36 });
      assert.equal((await decisionNo(gw, 1)).contract, 'ok');
      const m = await anthStream(long);
      assert.equal(m.content[0].input.name.length, 1500, 'the whole input reached the client');
      assert.equal((await decisionNo(gw, 2)).contract, 'invalid_json');
      let text = '';
      for await (const ch of await ask(gw, 'cloud-pass', { stream: true, max_tokens: 1000, messages: [{ role: 'user', content: long }] })) text += ch.choices[0]?.delta?.content ?? '';
      assert.equal(text, long);
      assert.equal((await decisionNo(gw, 3)).contract, 'invalid_json');
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('retry: a drifted local tool input is asked again of the cloud (Anthropic backend), whose conforming input is served', () => withAnth(async ({ gw, edge }) => {
    await drift(edge, 'shape');
    const { data: m, response } = await anthAsk(gw, 'retry');
    assert.equal(response.headers.get('x-spillway-backend'), 'claude');
    assert.deepEqual(m.content[0].input, { name: 'Ada', age: 36 });
    const d = (await decisions(gw))[0];
    assert.equal(d.contract, 'ok');
    assert.deepEqual(d.attempts.map((a) => [a.backend, a.error ?? null]), [['edge', 'contract_violation'], ['claude', null]]);
  }));
});
