// Gateway core, end to end: the real spillway binary in front of real llmsim
// processes, called with the official OpenAI SDK (and raw fetch where the
// wire format itself is the point).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

const PROMPT = 'Spillway relays this sentence back, token by token, unchanged.';

function config({ edge, cloud, keys = '', extra = '', models } = {}) {
  return `
listen: "127.0.0.1:0"
${keys}
backends:
  - name: edge
    tier: local
    url: "${edge}"
    model: "edge-model"
    slots: 2
  - name: cloud
    tier: cloud
    url: "${cloud}"
    model: "cloud-model"
    api_key: "sk-cloud-secret"
models:
${models || '  - name: "chat"\n    backends: [edge, cloud]\n  - name: "local-only"\n    backends: [edge]'}
${extra}
`;
}

// A port with nothing listening: connect() is refused.
async function deadPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}`;
}

function client(gw, apiKey = 'unused') {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0, timeout: 20000 });
}

const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
const stats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;

describe('gateway core with healthy backends', () => {
  let edge, cloud, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '200']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '500']);
    gw = await startSpillway(config({
      edge: edge.url, cloud: cloud.url,
      keys: 'keys:\n  - name: app\n    key: "sk-app"\n  - name: private\n    key: "sk-private"\n    allow_cloud: false',
      extra: 'limits:\n  max_body_bytes: 4096\n  client_timeout_ms: 400',
    }));
  });
  after(async () => { await gw?.stop(); await edge?.stop(); await cloud?.stop(); });

  test('non-streaming answer from the local tier, model rewritten, route headers set', async () => {
    const { data, response } = await client(gw, 'sk-app').chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: PROMPT }], max_tokens: 64 })
      .withResponse();
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.model, 'chat');
    assert.equal(data.choices[0].message.content, PROMPT);
    assert.ok(data.usage.completion_tokens > 0);
    assert.equal(response.headers.get('x-spillway-backend'), 'edge');
    assert.equal(response.headers.get('x-spillway-tier'), 'local');
    assert.equal(response.headers.get('x-spillway-reason'), 'baseline');
    assert.match(response.headers.get('x-request-id'), /^sw-/);
    // The upstream saw its own model id, not the public name.
    const last = (await received(edge)).at(-1);
    assert.equal(last.body.model, 'edge-model');
  });

  test('streaming: every chunk relayed in order, model rewritten, ends with [DONE]', async () => {
    const stream = await client(gw, 'sk-app').chat.completions.create({
      model: 'chat', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: PROMPT }], max_tokens: 64,
    });
    let text = '';
    let chunks = 0;
    let usage = null;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.model, 'chat');
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, PROMPT);
    // One chunk per token (4 bytes each) plus role/finish/usage chunks.
    assert.ok(chunks >= Math.ceil(PROMPT.length / 4), `only ${chunks} chunks`);
    assert.ok(usage && usage.completion_tokens > 0);

    // On the wire: SSE events, the last one data: [DONE].
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-app' },
      body: JSON.stringify({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'hi there' }] }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/event-stream/);
    assert.equal(r.headers.get('x-spillway-backend'), 'edge');
    const events = (await r.text()).split('\n\n').filter(Boolean);
    assert.equal(events.at(-1), 'data: [DONE]');
    for (const e of events.slice(0, -1)) assert.doesNotThrow(() => JSON.parse(e.replace(/^data: /, '')));
  });

  test('model list shows the public names', async () => {
    const models = [];
    for await (const m of client(gw, 'sk-app').models.list()) models.push(m.id);
    assert.deepEqual(models.sort(), ['chat', 'local-only']);
  });

  test('bad or missing key: 401 in OpenAI error shape', async () => {
    await assert.rejects(
      client(gw, 'sk-wrong').chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
      (e) => e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === 'invalid_api_key',
    );
    const r = await getJSON(`${gw.url}/v1/models`);
    assert.equal(r.status, 401);
    assert.equal(r.body.error.code, 'missing_api_key');
  });

  test('malformed JSON: 400 saying where', async () => {
    const r = await getJSON(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: 'Bearer sk-app', 'content-type': 'application/json' },
      body: '{"model": "chat", "messages": [',
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'invalid_request_error');
    assert.equal(r.body.error.code, 'invalid_json');
    assert.match(r.body.error.message, /line 1/);
    assert.equal(r.headers.get('x-spillway-backend'), 'none');
  });

  test('invalid request: 400 naming the field', async () => {
    await assert.rejects(
      client(gw, 'sk-app').chat.completions.create({ model: 'chat', messages: [{ role: 'robot', content: 'x' }] }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[0].role',
    );
  });

  test('oversized body: 413 with the limit in the message', async () => {
    const big = 'x'.repeat(5000);
    const r = await getJSON(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: 'Bearer sk-app', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: big }] }),
    });
    assert.equal(r.status, 413);
    assert.equal(r.body.error.code, 'request_too_large');
    assert.match(r.body.error.message, /4096/);
  });

  test('unknown model: 404 model_not_found', async () => {
    await assert.rejects(
      client(gw, 'sk-app').chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }),
      (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found',
    );
  });

  test('unknown URL and wrong method: 404 and 405, still OpenAI-shaped', async () => {
    const a = await getJSON(`${gw.url}/v1/nothing`);
    assert.equal(a.status, 404);
    assert.ok(a.body.error.message);
    const b = await getJSON(`${gw.url}/v1/chat/completions`, { headers: { authorization: 'Bearer sk-app' } });
    assert.equal(b.status, 405);
  });

  test('a slow client that never finishes its headers gets a 408 and is cut off', async () => {
    const sock = net.connect(gw.port, '127.0.0.1');
    await new Promise((r) => sock.on('connect', r));
    let answer = '';
    sock.on('data', (d) => { answer += d; });
    const closed = new Promise((r) => sock.on('close', r));
    sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
    await closed;
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.code, 'request_timeout');
    // The gateway is still serving.
    const h = await getJSON(`${gw.url}/healthz`);
    assert.equal(h.status, 200);
  });

  test('headers over the limit get a 431 in OpenAI shape and the gateway keeps serving', async () => {
    const r = await fetch(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer sk-app', 'x-big': 'y'.repeat(20000) } });
    assert.equal(r.status, 431);
    assert.equal((await r.json()).error.code, 'request_header_fields_too_large');
    const h = await getJSON(`${gw.url}/healthz`);
    assert.equal(h.status, 200);
  });
});

describe('connection limit', () => {
  test('at limits.max_connections new connections wait until one closes', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), extra: 'limits:\n  max_connections: 2\n  client_timeout_ms: 10000' }));
    const idle = [];
    try {
      for (let i = 0; i < 2; i++) {
        const s = net.connect(gw.port, '127.0.0.1');
        await new Promise((r) => s.on('connect', r));
        idle.push(s);
      }
      let answered = false;
      const third = fetch(`${gw.url}/healthz`).then((r) => { answered = true; return r.status; });
      // Both slots are held by idle connections: the third is not served.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(answered, false);
      idle.shift().destroy();
      assert.equal(await third, 200);
    } finally {
      idle.forEach((s) => s.destroy());
      await gw.stop();
      await edge.stop();
    }
  });
});

describe('failover and failure', () => {
  test('local backend down: answered by the cloud before any byte reached the client', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo']);
    const gw = await startSpillway(config({ edge: await deadPort(), cloud: cloud.url }));
    try {
      const { data, response } = await client(gw).chat.completions
        .create({ model: 'chat', messages: [{ role: 'user', content: PROMPT }], max_tokens: 64 })
        .withResponse();
      assert.equal(data.choices[0].message.content, PROMPT);
      assert.equal(data.model, 'chat');
      assert.equal(response.headers.get('x-spillway-backend'), 'cloud');
      assert.equal(response.headers.get('x-spillway-tier'), 'cloud');
      assert.equal(response.headers.get('x-spillway-reason'), 'fallback');
      // The cloud got its API key and its own model id.
      const req = (await received(cloud)).at(-1);
      assert.equal(req.headers.authorization, 'Bearer sk-cloud-secret');
      assert.equal(req.body.model, 'cloud-model');

      // Streaming fails over the same way.
      const stream = await client(gw).chat.completions.create({
        model: 'chat', stream: true, messages: [{ role: 'user', content: PROMPT }], max_tokens: 64,
      });
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
      assert.equal(text, PROMPT);
    } finally {
      await gw.stop();
      await cloud.stop();
    }
  });

  test('local answers garbage or 503: the cloud answers instead', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--malformed', 'json']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: cloud.url }));
    try {
      const a = await client(gw).chat.completions
        .create({ model: 'chat', messages: [{ role: 'user', content: 'one' }], max_tokens: 8 })
        .withResponse();
      assert.equal(a.response.headers.get('x-spillway-backend'), 'cloud');
      assert.equal(a.data.choices[0].message.content, 'one');

      await fetch(`${edge.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ error_rate: 1, error_status: 503 }) });
      const b = await client(gw).chat.completions
        .create({ model: 'chat', messages: [{ role: 'user', content: 'two' }], max_tokens: 8 })
        .withResponse();
      assert.equal(b.response.headers.get('x-spillway-backend'), 'cloud');
    } finally {
      await gw.stop();
      await edge.stop();
      await cloud.stop();
    }
  });

  test('every backend fails: 503 all_backends_failed naming each failure, with Retry-After', async () => {
    const edge = await startLlmsim(['--error-rate', '1', '--error-status', '429', '--retry-after-s', '7']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort() }));
    try {
      const r = await getJSON(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 503);
      assert.equal(r.body.error.code, 'all_backends_failed');
      assert.match(r.body.error.message, /edge: status 429/);
      assert.match(r.body.error.message, /cloud: connect_error/);
      assert.equal(r.headers.get('retry-after'), '7');
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });

  test('one deadline across attempts: a hanging local box uses it up, 504', async () => {
    const edge = await startLlmsim(['--hang']);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: cloud.url }));
    try {
      const t0 = Date.now();
      const r = await getJSON(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-request-timeout-ms': '300' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 504);
      assert.equal(r.body.error.code, 'deadline_exceeded');
      assert.ok(Date.now() - t0 < 5000);
      const bad = await getJSON(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-request-timeout-ms': 'soon' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.param, 'X-Request-Timeout-Ms');
    } finally {
      await gw.stop();
      await edge.stop();
      await cloud.stop();
    }
  });

  test('failure after the first byte: SSE error event then [DONE], never a silent truncation', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--close-after-chunks', '3', '--decode-tps', '100']);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: cloud.url }));
    try {
      const body = JSON.stringify({ model: 'chat', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'x' }] });
      const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const events = (await r.text()).split('\n\n').filter(Boolean);
      assert.equal(events.at(-1), 'data: [DONE]');
      const err = JSON.parse(events.at(-2).replace(/^data: /, ''));
      assert.equal(err.error.code, 'upstream_stream_failed');
      assert.equal(r.headers.get('x-spillway-backend'), 'edge');
      // No failover after the first byte: the cloud never saw it.
      assert.equal((await received(cloud)).length, 0);

      // The SDK surfaces it as an error, not as a short answer.
      const stream = await client(gw).chat.completions.create(JSON.parse(body));
      await assert.rejects(async () => { for await (const _ of stream); }, OpenAI.APIError);
    } finally {
      await gw.stop();
      await edge.stop();
      await cloud.stop();
    }
  });

  test('client abort mid-stream: the local request is aborted at once and its slot freed', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '5']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort() }));
    try {
      const ac = new AbortController();
      const stream = await client(gw).chat.completions.create(
        { model: 'local-only', stream: true, max_tokens: 200, messages: [{ role: 'user', content: 'x' }] },
        { signal: ac.signal },
      );
      const it = stream[Symbol.asyncIterator]();
      await it.next(); // the first byte arrived
      assert.equal((await stats(edge)).in_flight, 1);
      ac.abort();
      // 200 tokens at 5/s would take 40 s; the slot must free within a second.
      await waitFor(async () => (await stats(edge)).in_flight === 0, { timeout: 1000, what: 'llmsim in_flight to drop to 0' });
      assert.equal((await stats(edge)).aborted, 1);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });

  test('SIGTERM drains: the in-flight stream finishes, then the process exits 0', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '20']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort() }));
    try {
      const stream = await client(gw).chat.completions.create({
        model: 'local-only', stream: true, max_tokens: 64, messages: [{ role: 'user', content: PROMPT }],
      });
      const it = stream[Symbol.asyncIterator]();
      let text = (await it.next()).value.choices[0]?.delta?.content ?? '';
      gw.proc.kill('SIGTERM');
      for (let r = await it.next(); !r.done; r = await it.next()) text += r.value.choices[0]?.delta?.content ?? '';
      assert.equal(text, PROMPT);
      await gw.exited;
      assert.equal(gw.proc.exitCode, 0);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });
});
