// Gateway core, end to end: the real spillway binary in front of real llmsim
// processes, called with the official OpenAI SDK (and raw fetch where the
// wire format itself is the point).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON, BUILD } from './lib/harness.mjs';
import { rawConnect } from './lib/rawhttp.mjs';

const PROMPT = 'Spillway relays this sentence back, token by token, unchanged.';

function config({ edge, cloud, keys = '', extra = '', models, slots = 2 } = {}) {
  return `
listen: "127.0.0.1:0"
${keys}
backends:
  - name: edge
    tier: local
    url: "${edge}"
    model: "edge-model"
    slots: ${slots}
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
    // The backend got the client's body with its own model, asked for the
    // usage (spend is counted from it); the client, which did not ask, gets none.
    assert.deepEqual((await received(edge)).at(-1).body, {
      model: 'edge-model', stream: true, messages: [{ role: 'user', content: 'hi there' }],
      stream_options: { include_usage: true },
    });
    for (const e of events.slice(0, -1)) assert.equal(JSON.parse(e.replace(/^data: /, '')).usage ?? null, null);
  });

  test('model list shows the public names', async () => {
    const models = [];
    for await (const m of client(gw, 'sk-app').models.list()) models.push(m.id);
    assert.deepEqual(models.sort(), ['chat', 'local-only']);
  });

  test('keep-alive answers announce the idle limit (Keep-Alive: timeout, rounded down) so clients close idle connections first', async () => {
    const r = await fetch(`${gw.url}/healthz`);
    await r.arrayBuffer();
    assert.equal(r.headers.get('keep-alive'), 'timeout=0'); // client_timeout_ms: 400
    const c = await fetch(`${gw.url}/healthz`, { headers: { connection: 'close' } });
    await c.arrayBuffer();
    assert.equal(c.headers.get('connection'), 'close');
    assert.equal(c.headers.get('keep-alive'), null);
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

  test('malformed JSON: 400 saying where, in the same words on the chat, embeddings and Messages APIs', async () => {
    const r = await getJSON(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: 'Bearer sk-app', 'content-type': 'application/json' },
      body: '{"model": "chat", "messages": [',
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'invalid_request_error');
    assert.equal(r.body.error.code, 'invalid_json');
    assert.match(r.body.error.message, /line 1/);
    assert.equal(r.headers.get('x-spillway-backend'), 'none');
    // the embeddings and Anthropic Messages APIs say it in the same words
    for (const path of ['/v1/embeddings', '/v1/messages']) {
      const o = await getJSON(`${gw.url}${path}`, {
        method: 'POST', headers: { authorization: 'Bearer sk-app', 'content-type': 'application/json' },
        body: '{"model": "chat", "messages": [',
      });
      assert.equal(o.status, 400, path);
      assert.equal(o.body.error.type, 'invalid_request_error', path);
      assert.equal(o.body.error.message, r.body.error.message, path);
    }
  });

  test('request bodies decode as JSON says: a duplicate key, a \\u0000 or an integer beyond 64 bits is a 400 saying where; non-ASCII, escapes and surrogate pairs reach the backend as sent', async () => {
    const post = (body) => getJSON(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: 'Bearer sk-app', 'content-type': 'application/json' }, body,
    });
    for (const [body, why] of [
      ['{"model": "chat", "model": "chat", "messages": [{"role": "user", "content": "x"}]}', /duplicate object key/],
      ['{"model": "chat", "messages": [{"role": "user", "content": "a\\u0000b"}]}', /\\u0000 is not allowed/],
      ['{"model": "chat", "messages": [{"role": "user", "content": "x"}], "max_tokens": 9223372036854775808}', /too big integer/],
    ]) {
      const r = await post(body);
      assert.equal(r.status, 400, body);
      assert.equal(r.body.error.code, 'invalid_json');
      assert.match(r.body.error.message, why);
      assert.match(r.body.error.message, /line 1 column \d+/);
    }
    const raw = await post('{"model":"chat","messages":[{"role":"user","content":"\\ud83d\\ude00 \\u00e9\\t\\"q\\""}],"max_tokens":32,"temperature":0.25}');
    assert.equal(raw.status, 200);
    assert.equal(raw.body.choices[0].message.content, '\u{1F600} \u00e9\t"q"');
    const text = 'caf\u00e9 \u4e2d \u{1F600} \\ "q"\n';
    const r = await client(gw, 'sk-app').chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: text }], max_tokens: 64, temperature: 0.5 });
    assert.equal(r.choices[0].message.content, text);
    const last = (await received(edge)).at(-1);
    assert.equal(last.body.messages[0].content, text);
    assert.equal(last.body.temperature, 0.5);
    assert.equal(last.body.max_tokens, 64);
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

  test('a client that asks to close the connection gets its whole answer first (Connection: close, HTTP/1.0)', async () => {
    for (const [version, headers] of [['HTTP/1.1', { connection: 'close' }], ['HTTP/1.0', {}]]) {
      const sock = net.connect(gw.port, '127.0.0.1');
      await new Promise((r) => sock.on('connect', r));
      let got = '';
      sock.on('data', (d) => { got += d; });
      const closed = new Promise((r) => sock.on('close', r));
      const body = JSON.stringify({ model: 'chat', max_tokens: 64, messages: [{ role: 'user', content: PROMPT }] });
      sock.write(`POST /v1/chat/completions ${version}\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-app\r\nContent-Type: application/json\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}Content-Length: ${body.length}\r\n\r\n${body}`);
      await closed;
      assert.match(got, /^HTTP\/1\.[01] 200 /, `${version}: ${JSON.stringify(got.slice(0, 80))}`);
      const json = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4));
      assert.equal(json.choices[0].message.content, PROMPT);
    }
  });

  test('the key and Content-Length are judged before the body is read', async () => {
    // Headers only, no body: a server that read the body first would wait
    // for it and answer 408 at client_timeout_ms (400 ms) instead.
    const ask = (head) => new Promise((resolve, reject) => {
      const sock = net.connect(gw.port, '127.0.0.1');
      let got = '';
      sock.on('data', (d) => { got += d; });
      sock.on('error', reject);
      sock.on('close', () => resolve(got));
      sock.on('connect', () => sock.write(head));
    });
    const noKey = await ask('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n\r\n');
    assert.match(noKey, /^HTTP\/1\.1 401 /);
    assert.match(noKey, /"code":"missing_api_key"/);
    const tooBig = await ask('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-app\r\nContent-Length: 100000\r\n\r\n');
    assert.match(tooBig, /^HTTP\/1\.1 413 /);
    assert.match(tooBig, /"code":"request_too_large"/);
  });

  test('a slow client that never finishes its headers gets a 408 and is cut off', async () => {
    const sock = net.connect(gw.port, '127.0.0.1');
    await new Promise((r) => sock.on('connect', r));
    let answer = '';
    sock.on('data', (d) => { answer += d; });
    const closed = new Promise((r) => sock.on('close', r));
    sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n');
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
  test('at limits.max_connections with every connection mid-request new ones wait; an idle one is closed to make room', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), extra: 'limits:\n  max_connections: 2\n  client_timeout_ms: 10000' }));
    const conns = [];
    try {
      // Two connections each in the middle of a request head: none is idle.
      for (let i = 0; i < 2; i++) {
        const c = await rawConnect(gw.port);
        c.sock.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        conns.push(c);
      }
      await waitFor(() => /connection limit 2 reached/.test(gw.output()), { what: 'the limit reached' });
      // The third connection completes its TCP handshake (the kernel backlog
      // holds it) and sends its request, but the gateway does not take it.
      const third = await rawConnect(gw.port);
      conns.push(third);
      const thirdAnswer = third.request('GET', '/healthz');
      // The first finishes its request: answered with two connections
      // counted, so the third was still waiting while both were busy.
      const firstAnswer = new Promise((res) => conns[0].sock.once('data', (d) => res(d.toString())));
      conns[0].sock.write('\r\n');
      const first = await firstAnswer;
      assert.match(first, /^HTTP\/1.1 200/);
      assert.match(first, /"connections":2/, 'only two connections accepted');
      // The first is now idle: it is closed to make room, and the third is
      // taken and answered.
      const r = await thirdAnswer;
      assert.equal(r.status, 200);
      assert.equal(JSON.parse(r.body).connections, 2);
      await conns[0].closed;
      assert.match(gw.output(), /closed the longest-idle connection/);
    } finally {
      conns.forEach((c) => c.destroy());
      await gw.stop();
      await edge.stop();
    }
  });
});

describe('descriptors', () => {
  // The kernel doubles a process's descriptor table when a descriptor needs
  // more room, and in a process with threads each doubling waits for an RCU
  // grace period with the caller blocked: the loop stalled inside accept or
  // connect once per doubling of a burst of new streams. The gateway grows it
  // at start (and when a reload raises the limit) to what its connection
  // limit can hold, never past the process's limit.
  const fdSize = (pid) => Number(/^FDSize:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  const softLimit = (pid) => Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))[1]);

  test('sized for limits.max_connections at start and after a reload that raises it', async (t) => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const limits = (n) => `limits:\n  max_connections: ${n}`;
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), extra: limits(300) }));
    try {
      const soft = softLimit(gw.proc.pid);
      if (soft < 2 * 700 + 64) {
        t.skip(`the descriptor limit (${soft}) leaves nothing to grow`);
        return;
      }
      // an idle gateway holds a few dozen descriptors: without the sizing
      // its table would be 64 or 256 entries
      assert.ok(fdSize(gw.proc.pid) >= 2 * 300 + 64, `FDSize ${fdSize(gw.proc.pid)} at max_connections 300`);
      const reloads = () => (gw.output().match(/reloaded /g) || []).length;
      const before = reloads();
      writeFileSync(gw.configFile, config({ edge: edge.url, cloud: await deadPort(), extra: limits(700) }));
      gw.proc.kill('SIGHUP');
      await waitFor(() => reloads() > before, { timeout: 10000, what: 'the reload' });
      assert.ok(fdSize(gw.proc.pid) >= 2 * 700 + 64, `FDSize ${fdSize(gw.proc.pid)} at max_connections 700`);
      assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });

  // The lowest descriptor number free: a limit one above it leaves the
  // process that one descriptor, a limit at it none (the open ones stay).
  const lowestFree = (pid) => {
    const open = new Set(readdirSync(`/proc/${pid}/fd`).map(Number));
    let f = 0;
    while (open.has(f)) f++;
    return f;
  };
  // Sets a running process's soft open-files limit (the hard one stays).
  const setLimit = (pid, n) => new Promise((res, rej) =>
    execFile('prlimit', ['--pid', String(pid), `--nofile=${n}:`], (e) => (e ? rej(e) : res())));
  const metric = async (gw, re) => (await (await fetch(`${gw.url}/metrics`)).text()).match(re)?.[1];

  test('an upstream connection the gateway cannot open is its own limit, not the backend failing; a listener that cannot accept rests instead of spinning', async () => {
    // echo: a stream as long as its prompt, about 8 s of 160 tokens
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '20']);
    const longPrompt = (i) => `stream ${i}: ${'a few words more '.repeat(40)}`;
    // no health polls during the test: each would take a descriptor
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), slots: 8, extra: 'routing:\n  health_interval_ms: 3600000' }));
    const pid = gw.proc.pid;
    try {
      // More slow streams at once than upstream connections the gateway has
      // (the start-up check's and the health poll's): every pooled one is
      // taken, none is left idle.
      const oa = client(gw);
      const edgePort = new URL(edge.url).port;
      const conns0 = execFileSync('ss', ['-tnp', 'state', 'established', `dport = :${edgePort}`])
        .toString().split('\n').filter((l) => l.includes(`pid=${pid},`)).length;
      assert.ok(conns0 < 8, `${conns0} upstream connections before the test`);
      const streams = [];
      for (let i = 0; i <= conns0; i++) {
        const st = await oa.chat.completions.create({ model: 'local-only', stream: true, messages: [{ role: 'user', content: longPrompt(i) }] });
        const it = st[Symbol.asyncIterator]();
        await it.next();
        streams.push(it);
      }
      const soft = softLimit(pid);
      // One descriptor left: the next request is accepted, and its upstream
      // connection cannot open.
      await setLimit(pid, lowestFree(pid) + 1);
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ model: 'local-only', messages: [{ role: 'user', content: 'hello' }] }),
      });
      assert.equal(r.status, 503);
      const body = await r.json();
      assert.match(body.error.message, /local_limit: Too many open files/, body.error.message);
      // The backend was never asked: it is still up and its breaker closed.
      assert.equal(await metric(gw, /spillway_backend_up\{backend="edge",health="(\w+)"\}/), 'up');
      assert.equal(await metric(gw, /spillway_breaker_state\{backend="edge"\} (\d+)/), '0');

      // No descriptor left: a new connection cannot be accepted. The listener
      // rests, the connection waits in the backlog, and it is served once a
      // descriptor is free again.
      await setLimit(pid, lowestFree(pid));
      const waiting = fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ model: 'local-only', messages: [{ role: 'user', content: 'hello again' }] }),
      });
      await waitFor(() => /accept: Too many open files; not accepting for 100 ms/.test(gw.output()), { what: 'the listener resting' });
      await setLimit(pid, soft);
      const w = await waiting;
      assert.equal(w.status, 200);
      assert.equal(w.headers.get('x-spillway-backend'), 'edge');
      for (const it of streams)
        for (let x = await it.next(); !x.done; x = await it.next());
      // resting, not spinning: the pause is logged at its 1st, 2nd, 4th, ...
      const rests = (gw.output().match(/accept: Too many open files/g) || []).length;
      assert.ok(rests >= 1 && rests <= 8, `${rests} accept failures logged`);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });

  test('a health check the gateway cannot send for want of a descriptor says nothing of the box', async () => {
    // A box that closes every connection: each check needs a new socket.
    const box = http.createServer((req, res) => {
      res.setHeader('connection', 'close');
      res.setHeader('content-type', 'application/json');
      res.end(req.url === '/v1/models' ? '{"object":"list","data":[{"id":"edge-model","object":"model"}]}' : '{"status":"ok"}');
    });
    await new Promise((r) => box.listen(0, '127.0.0.1', r));
    const edge = { url: `http://127.0.0.1:${box.address().port}`, stop: () => new Promise((r) => box.close(r)) };
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), extra: 'routing:\n  health_interval_ms: 100' }));
    const pid = gw.proc.pid;
    try {
      const soft = softLimit(pid);
      await setLimit(pid, lowestFree(pid));
      // eight polls that could not open a socket (the log's 8th line)
      await waitFor(() => /health check of edge not sent: Too many open files \(8 time\(s\) so far\)/.test(gw.output()),
        { timeout: 15000, what: 'eight health checks not sent' });
      await setLimit(pid, soft);
      // An unanswered check would have marked the box down and counted
      // against its breaker (eight: open).
      assert.equal(await metric(gw, /spillway_breaker_state\{backend="edge"\} (\d+)/), '0');
      assert.equal(await metric(gw, /spillway_backend_up\{backend="edge",health="(\w+)"\}/), 'up');
    } finally {
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

      const fault = await fetch(`${edge.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ error_rate: 1, error_status: 503 }) });
      assert.equal(fault.status, 200, await fault.text());
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

  test('a local answer whose headers exceed 80 KiB is a failed attempt: the cloud answers instead', async () => {
    // A raw HTTP/1.1 server: every request gets a valid chat answer, with
    // `padKiB` KiB of header lines in front of it.
    const rawEdge = async (padKiB) => {
      const pad = Array.from({ length: padKiB }, (_, i) => `X-Pad-${i}: ${'p'.repeat(1010)}\r\n`).join('');
      const answer = JSON.stringify({
        id: 'c', object: 'chat.completion', created: 0, model: 'edge-model',
        choices: [{ index: 0, message: { role: 'assistant', content: 'from edge' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      });
      const srv = net.createServer((sock) => {
        let buf = Buffer.alloc(0);
        sock.on('data', (d) => {
          buf = Buffer.concat([buf, d]);
          for (;;) {
            const end = buf.indexOf('\r\n\r\n');
            if (end < 0) return;
            const head = buf.subarray(0, end).toString();
            const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
            if (buf.length < end + 4 + len) return;
            buf = buf.subarray(end + 4 + len);
            sock.write(`HTTP/1.1 200 OK\r\n${pad}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(answer)}\r\n\r\n${answer}`);
          }
        });
        sock.on('error', () => {});
      });
      await new Promise((r) => srv.listen(0, '127.0.0.1', r));
      return { srv, url: `http://127.0.0.1:${srv.address().port}` };
    };
    const ask = async (gw) => client(gw).chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 }).withResponse();
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo']);
    for (const [padKiB, backend] of [[70, 'edge'], [90, 'cloud']]) {
      const edge = await rawEdge(padKiB);
      const gw = await startSpillway(config({ edge: edge.url, cloud: cloud.url }));
      try {
        const r = await ask(gw);
        assert.equal(r.response.headers.get('x-spillway-backend'), backend, `${padKiB} KiB of answer headers`);
        assert.equal(r.data.choices[0].message.content, backend === 'edge' ? 'from edge' : 'hi');
      } finally {
        await gw.stop();
        await new Promise((res) => edge.srv.close(res));
      }
    }
    await cloud.stop();
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
      // the header's 300 ms, not the default 30 s request timeout
      assert.ok(Date.now() - t0 < 15000, `504 after ${Date.now() - t0} ms`);
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
      // 200 tokens at 5/s would take 40 s; the slot frees at once (the bound
      // only leaves room for a loaded machine).
      await waitFor(async () => (await stats(edge)).in_flight === 0, { timeout: 10000, what: 'llmsim in_flight to drop to 0' });
      assert.equal((await stats(edge)).aborted, 1);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });

  test('SIGTERM drains: new requests are refused, the in-flight stream finishes, then the process exits 0', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '20']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort() }));
    let late = null;
    try {
      // A keep-alive connection opened before the signal.
      const open = await rawConnect(gw.port);
      assert.equal((await open.request('GET', '/healthz')).status, 200);
      const stream = await client(gw).chat.completions.create({
        model: 'local-only', stream: true, max_tokens: 64, messages: [{ role: 'user', content: PROMPT }],
      });
      const it = stream[Symbol.asyncIterator]();
      let text = (await it.next()).value.choices[0]?.delta?.content ?? '';
      gw.proc.kill('SIGTERM');
      await waitFor(() => /SIGTERM: draining/.test(gw.output()), { what: 'the drain to start' });
      // A new request on that connection is refused: 503 shutting_down.
      const refused = await open.request('POST', '/v1/chat/completions', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'local-only', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(refused.status, 503);
      assert.equal(JSON.parse(refused.body).error.code, 'shutting_down');
      // A new connection is not served: refused, never answered, or 503.
      late = await rawConnect(gw.port).catch(() => null);
      const lateAnswer = late?.request('GET', '/v1/models').catch(() => null);

      for (let r = await it.next(); !r.done; r = await it.next()) text += r.value.choices[0]?.delta?.content ?? '';
      assert.equal(text, PROMPT);
      await gw.exited;
      assert.equal(gw.proc.exitCode, 0);
      const l = await lateAnswer;
      assert.ok(l === null || l === undefined || (l.status === 503 && /shutting_down/.test(l.body)), `a late connection was served: ${l?.status} ${l?.body}`);
      assert.equal((await stats(edge)).served, 1, 'only the stream reached the backend');
    } finally {
      late?.destroy();
      await gw.stop();
      await edge.stop();
    }
  });

  test('SIGTERM with a stream longer than limits.drain_timeout_ms: the stream is cut at the drain timeout, exit 0', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '10']);
    const drainMs = 1000;
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), extra: `limits:\n  drain_timeout_ms: ${drainMs}` }));
    try {
      let exitAt = 0;
      gw.proc.on('exit', () => { exitAt = Date.now(); });
      // 100 tokens at 10/s: about ten times the drain timeout.
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'local-only', stream: true, max_tokens: 100, messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 200);
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let text = dec.decode((await reader.read()).value, { stream: true });
      const sigAt = Date.now();
      gw.proc.kill('SIGTERM');
      const atSignal = text.length;
      let cut = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += dec.decode(value, { stream: true });
        }
      } catch {
        cut = true; // the connection closed inside the chunked body
      }
      await gw.exited;
      assert.equal(gw.proc.exitCode, 0);
      assert.ok(text.length > atSignal, 'the stream went on during the drain');
      assert.ok(!text.includes('data: [DONE]'), 'the stream was cut, not finished');
      assert.ok(cut || !text.includes('data: [DONE]'));
      const events = text.split('\n\n').filter((e) => e.startsWith('data: {'));
      assert.ok(events.length < 100, `${events.length} events: the stream did not finish`);
      // Not before the drain timeout (the in-flight request had until then).
      assert.ok(exitAt - sigAt >= drainMs - 50, `exited ${exitAt - sigAt} ms after SIGTERM`);
      // The upstream transfer was cut with it.
      await waitFor(async () => (await stats(edge)).in_flight === 0, { what: 'the upstream request aborted' });
      assert.equal((await stats(edge)).served, 0);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });
});

// An OpenAI-shaped streaming upstream in this process that writes events as
// fast as its socket takes them (waiting for 'drain' when it does not) and
// counts them: what a slow client lets through the gateway is visible here.
async function startFloodUpstream(totalEvents) {
  const st = { events: 0, bytes: 0, finished: false, blockedSince: 0 };
  const pad = 'x'.repeat(1000);
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method !== 'POST') { res.writeHead(404); res.end(); return; } // the start-up check's GET /v1/models
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const pump = () => {
        while (st.events < totalEvents) {
          const ev = `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'flood', choices: [{ index: 0, delta: { content: `<${st.events}>${pad}` }, finish_reason: null }] })}\n\n`;
          st.events++;
          st.bytes += ev.length;
          if (!res.write(ev)) {
            st.blockedSince = Date.now();
            res.once('drain', () => { st.blockedSince = 0; pump(); });
            return;
          }
        }
        res.end('data: [DONE]\n\n');
        st.finished = true;
      };
      pump();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { st, url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

// The body of a chunked HTTP/1.1 answer.
function dechunk(buf) {
  const parts = [];
  let i = buf.indexOf('\r\n\r\n') + 4;
  for (;;) {
    const eol = buf.indexOf('\r\n', i);
    const n = parseInt(buf.subarray(i, eol).toString(), 16);
    if (!n) break;
    parts.push(buf.subarray(eol + 2, eol + 2 + n));
    i = eol + 2 + n + 2;
  }
  return Buffer.concat(parts).toString();
}

describe('slow and vanishing clients', () => {
  test('a client that stops reading a long stream pauses the upstream; when it reads again it gets the whole stream', async () => {
    const TOTAL = 60000; // about 65 MB of events
    const up = await startFloodUpstream(TOTAL);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
backends:
  - { name: flood, tier: cloud, url: "${up.url}", model: flood }
models:
  - { name: chat, backends: [flood] }
`);
    const sock = net.connect(gw.port, '127.0.0.1');
    try {
      sock.pause(); // never read until told
      await new Promise((r) => sock.once('connect', r));
      const body = JSON.stringify({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'flood me' }] });
      sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      // The upstream is held back: its writes stop being taken, and stay so.
      await waitFor(() => up.st.finished || (up.st.blockedSince && Date.now() - up.st.blockedSince > 1000),
        { timeout: 30000, what: 'the upstream held back by the slow client' });
      assert.equal(up.st.finished, false, `the gateway took the whole ${up.st.bytes}-byte stream for a client that reads nothing`);
      assert.ok(up.st.events < TOTAL / 2, `${up.st.events} of ${TOTAL} events sent while the client read nothing`);

      // The client reads again: every event arrives, in order, then [DONE].
      const chunks = [];
      sock.on('data', (d) => chunks.push(d));
      const ended = new Promise((r) => {
        let tail = '';
        sock.on('data', (d) => { tail = (tail + d.toString('latin1')).slice(-16); if (tail.endsWith('0\r\n\r\n')) r(); });
        sock.on('close', r);
      });
      sock.resume();
      await ended;
      const text = dechunk(Buffer.concat(chunks));
      const events = text.split('\n\n').filter(Boolean);
      assert.equal(events.at(-1), 'data: [DONE]');
      const seq = events.slice(0, -1).map((e) => Number(JSON.parse(e.slice(6)).choices[0].delta.content.match(/^<(\d+)>/)[1]));
      assert.equal(seq.length, TOTAL);
      assert.ok(seq.every((n, k) => n === k), 'events in order, none lost');
      assert.ok(up.st.finished);
    } finally {
      sock.destroy();
      await gw.stop();
      await up.close();
    }
  });

  test('client abort while queued in Spillway: the request leaves the queue and never reaches the backend', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '20']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), slots: 1 }));
    const ask = (max_tokens, signal) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal,
      body: JSON.stringify({ model: 'local-only', max_tokens, messages: [{ role: 'user', content: 'x' }] }),
    }).then(async (r) => ({ status: r.status, text: await r.text() }));
    const inFlight = async () => (await getJSON(`${gw.url}/healthz`)).body.in_flight;
    try {
      const acLong = new AbortController();
      const long = ask(200, acLong.signal).catch((e) => e.name); // 10 s on the only slot
      await waitFor(async () => (await stats(edge)).in_flight === 1, { what: 'the slot busy' });
      const ac = new AbortController();
      const queued = ask(4, ac.signal).catch((e) => e.name);
      await waitFor(async () => (await inFlight()) === 2, { what: 'the second request waiting in Spillway' });
      ac.abort();
      assert.equal(await queued, 'AbortError');
      // It leaves Spillway's queue while the slot is still busy.
      await waitFor(async () => (await inFlight()) === 1, { what: 'the abandoned request gone' });
      const s = await stats(edge);
      assert.equal(s.in_flight, 1, 'the long request still holds the slot');
      assert.equal(s.served, 0);
      acLong.abort();
      assert.equal(await long, 'AbortError');
      await waitFor(async () => (await stats(edge)).in_flight === 0, { what: 'the slot freed' });
      // The next request takes the slot; the abandoned one was never sent.
      assert.equal((await ask(4)).status, 200);
      assert.equal((await received(edge)).length, 2, 'the backend saw the long request and the next one only');
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });

  test('client abort while queued on the backend and while in prefill: the backend drops it and frees the slot', async () => {
    // 200 ms of prefill per prompt token: a 60-token prompt sits in prefill for 12 s.
    const edge = await startLlmsim(['--model', 'edge-model', '--slots', '1', '--prefill-ms-per-token', '200']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort(), slots: 2 }));
    const ask = (content, signal) => fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal,
      body: JSON.stringify({ model: 'local-only', max_tokens: 1, messages: [{ role: 'user', content }] }),
    }).then(async (r) => ({ status: r.status, text: await r.text() }), (e) => e.name);
    try {
      const inPrefill = new AbortController();
      const a = ask('y'.repeat(224), inPrefill.signal);
      await waitFor(async () => (await stats(edge)).in_flight === 1, { what: 'the first request in prefill' });
      const inQueue = new AbortController();
      const b = ask('z'.repeat(224), inQueue.signal);
      await waitFor(async () => (await stats(edge)).queued === 1, { what: 'the second request queued on the backend' });

      inQueue.abort();
      assert.equal(await b, 'AbortError');
      await waitFor(async () => (await stats(edge)).queued === 0, { what: 'the backend queue to drop' });
      let s = await stats(edge);
      assert.equal(s.aborted, 1);
      assert.equal(s.in_flight, 1, 'the other request is still in prefill');

      inPrefill.abort();
      assert.equal(await a, 'AbortError');
      await waitFor(async () => (await stats(edge)).in_flight === 0, { what: 'the slot freed during prefill' });
      s = await stats(edge);
      assert.equal(s.aborted, 2);
      assert.equal(s.tokens_sent, 0, 'nothing was generated for them');
      // The freed slot serves the next request.
      const c = await ask('x');
      assert.equal(c.status, 200, c.text);
      assert.equal((await stats(edge)).served, 1);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });
});

describe('X-Request-Timeout-Ms', () => {
  test('may shorten the deadline, never extend it past routing.request_timeout_ms', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--hang']);
    const gw = await startSpillway(config({
      edge: edge.url, cloud: await deadPort(),
      extra: 'routing:\n  ttft_budget_ms: 200\n  request_timeout_ms: 500',
    }));
    try {
      // The backend never answers: the request ends at its deadline. Asking
      // for an hour must still end at the configured 500 ms (the signal
      // below only bounds the test; without the clamp it fires first).
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        signal: AbortSignal.timeout(30000),
        headers: { 'content-type': 'application/json', 'x-request-timeout-ms': '3600000' },
        body: JSON.stringify({ model: 'local-only', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 504);
      assert.equal((await r.json()).error.code, 'deadline_exceeded');
      const bad = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-timeout-ms': 'soon' },
        body: JSON.stringify({ model: 'local-only', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(bad.status, 400);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });
});

describe('limits.max_response_bytes', () => {
  test('an upstream answer larger than max_response_bytes is never relayed: the next backend answers; with none left the request fails', async () => {
    // A local backend whose whole answers are as large as the prompt asks:
    // "big" is 4000 bytes of content, anything else 1000.
    let calls = 0;
    const big = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        if (req.url === '/health') { res.writeHead(200); res.end('ok'); return; }
        if (req.method !== 'POST') { res.writeHead(404); res.end(); return; } // the start-up check's GET /v1/models
        calls++;
        const ask = JSON.parse(body).messages.at(-1).content;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          id: 'chatcmpl-big', object: 'chat.completion', created: 0, model: 'edge-model',
          choices: [{ index: 0, message: { role: 'assistant', content: 'z'.repeat(ask === 'big' ? 4000 : 1000) }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }));
      });
    });
    await new Promise((r) => big.listen(0, '127.0.0.1', r));
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const gw = await startSpillway(config({
      edge: `http://127.0.0.1:${big.address().port}`, cloud: cloud.url,
      extra: 'limits:\n  max_response_bytes: 2048',
    }));
    const post = async (model, content) => {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content }] }),
      });
      return { status: r.status, id: r.headers.get('x-request-id'), backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'), body: await r.json() };
    };
    try {
      // Under the limit: relayed from the local backend.
      const small = await post('chat', 'small');
      assert.equal(small.status, 200, JSON.stringify(small.body));
      assert.equal(small.backend, 'edge');
      assert.equal(small.body.choices[0].message.content.length, 1000);
      assert.equal(calls, 1);

      // Over it: the local answer is dropped and the cloud answers.
      const over = await post('chat', 'big');
      assert.equal(over.status, 200, JSON.stringify(over.body));
      assert.equal(over.backend, 'cloud');
      assert.equal(over.reason, 'fallback');
      assert.notEqual(over.body.choices[0].message.content, 'z'.repeat(4000));
      assert.equal(calls, 2, 'the local backend was tried first');
      assert.equal((await received(cloud)).length, 1);

      // No backend left: every backend failed, so 503 all_backends_failed
      // (docs/routing.md), in OpenAI's shape, naming the limit, never the answer.
      const none = await post('local-only', 'big');
      assert.equal(none.status, 503, JSON.stringify(none.body));
      assert.equal(none.body.error.code, 'all_backends_failed');
      assert.match(none.body.error.message, /answer larger than 2048 bytes/);
      assert.equal(calls, 3);
      const line = await waitFor(() => gw.output().split('\n').filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l))
        .find((l) => l.request_id === none.id), { what: 'the decision-log line' });
      assert.equal(line.decision, 'rejected');
      assert.equal(line.attempts.length, 1);
      assert.equal(line.attempts[0].backend, 'edge');
      assert.equal(line.attempts[0].outcome, 'failed');
    } finally {
      await gw.stop(); await cloud.stop();
      await new Promise((r) => big.close(r));
    }
  });
});

describe('IPv6 backends', () => {
  test('a backend at an IPv6 literal ([::1]) is reached, with a Host header in brackets as HTTP requires', async (t) => {
    const hosts = [];
    const v6 = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method !== 'POST') { res.writeHead(200); res.end('ok'); return; }
        hosts.push(req.headers.host);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          id: 'chatcmpl-v6', object: 'chat.completion', created: 0, model: 'edge-model',
          choices: [{ index: 0, message: { role: 'assistant', content: 'over six' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
        }));
      });
    });
    try {
      await new Promise((r, j) => { v6.once('error', j); v6.listen(0, '::1', r); });
    } catch (e) {
      t.skip(`no IPv6 loopback here: ${e.code}`);
      return;
    }
    const { port } = v6.address();
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const gw = await startSpillway(config({ edge: `http://[::1]:${port}`, cloud: cloud.url }));
    try {
      const r = await client(gw).chat.completions.create({ model: 'local-only', max_tokens: 4,
        messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(r.choices[0].message.content, 'over six');
      assert.deepEqual(hosts, [`[::1]:${port}`]);
    } finally {
      await gw.stop(); await cloud.stop();
      await new Promise((r) => v6.close(r));
    }
  });
});

// The TCP sockets of a process with their TCP_NODELAY, read by the helper
// build/tests/sockinfo (pidfd_getfd); null when this machine does not allow
// borrowing another process's fds.
function sockets(pid) {
  return new Promise((res, rej) => execFile(join(BUILD, 'tests', 'sockinfo'), [String(pid)], (err, out, errOut) => {
    if (err && err.code === 2) res({ unavailable: errOut.trim() });
    else if (err) rej(err);
    else res({ list: out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) });
  }));
}

const rssKiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);

describe('sockets and per-connection memory', () => {
  test('TCP_NODELAY is set on the accepted client sockets and on the upstream sockets to local and cloud', async (t) => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '5']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '5']);
    const gw = await startSpillway(config({
      edge: edge.url, cloud: cloud.url,
      models: '  - name: "local-only"\n    backends: [edge]\n  - name: "cloud-only"\n    backends: [cloud]',
    }));
    const ac = new AbortController();
    try {
      // Two streams held open (5 tokens/s): one on a local, one on a cloud
      // backend; their first bytes prove the upstream connections exist.
      const open = async (model) => {
        const r = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
          body: JSON.stringify({ model, stream: true, max_tokens: 200, messages: [{ role: 'user', content: 'hold' }] }),
        });
        assert.equal(r.status, 200);
        const rd = r.body.getReader();
        await rd.read();
        return rd;
      };
      await Promise.all([open('local-only'), open('cloud-only')]);
      const s = await sockets(gw.proc.pid);
      if (s.unavailable) { t.skip(`cannot read the gateway's sockets here: ${s.unavailable}`); return; }
      const front = s.list.filter((x) => x.local_port === gw.port && x.peer_port !== 0);
      const toEdge = s.list.filter((x) => x.peer_port === edge.port);
      const toCloud = s.list.filter((x) => x.peer_port === cloud.port);
      assert.ok(front.length >= 2, `the two client connections: ${JSON.stringify(s.list)}`);
      assert.ok(toEdge.length >= 1 && toCloud.length >= 1, `the upstream connections: ${JSON.stringify(s.list)}`);
      for (const x of [...front, ...toEdge, ...toCloud]) assert.equal(x.nodelay, 1, `TCP_NODELAY off: ${JSON.stringify(x)}`);
    } finally {
      ac.abort();
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('a client that pipelines requests and never reads stops being read: the gateway buffers at most the read-ahead', async () => {
    // The first request hangs upstream, so the connection stays busy; behind
    // it the client pushes 64 MiB of pipelined requests and reads nothing.
    const edge = await startLlmsim(['--model', 'edge-model', '--hang']);
    const gw = await startSpillway(config({ edge: edge.url, cloud: await deadPort() }));
    const sock = net.connect(gw.port, '127.0.0.1');
    try {
      sock.on('error', () => {});
      await new Promise((r) => sock.once('connect', r));
      sock.pause();
      const before = rssKiB(gw.proc.pid);
      const body = JSON.stringify({ model: 'local-only', messages: [{ role: 'user', content: 'hang' }] });
      sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await waitFor(async () => (await getJSON(`${edge.url}/admin/stats`)).body.hanging >= 1, { timeout: 10000, what: 'the first request upstream' });
      const chunk = Buffer.from('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(Math.floor((1 << 20) / 37)));
      const MiB = 64;
      for (let i = 0; i < MiB; i++) sock.write(chunk);
      const pushed = MiB * chunk.length;
      // Wait until the kernel takes no more: the bytes it accepted from the
      // client stay the same over four polls 250 ms apart.
      let last = -1, same = 0;
      const accepted = () => pushed - sock.writableLength;
      await waitFor(() => {
        const a = accepted();
        same = a === last ? same + 1 : 0;
        last = a;
        return same >= 4 || a === pushed;
      }, { timeout: 30000, every: 250, what: 'the client\'s writes to stop being taken' });
      const grown = rssKiB(gw.proc.pid) - before;
      assert.ok(accepted() < pushed / 2, `${accepted()} of ${pushed} pipelined bytes taken from a client that reads nothing`);
      assert.ok(grown < 16 * 1024, `the gateway grew by ${grown} KiB holding one connection's pipelined input`);
    } finally {
      sock.destroy();
      await gw.stop(); await edge.stop();
    }
  });
});
