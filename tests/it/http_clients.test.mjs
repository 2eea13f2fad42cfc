// The HTTP client matrix: the clients users put in front of Spillway (and of
// llmsim, which tests use as a backend) get complete, correct answers. Each
// target is called with curl, Python's urllib and http.client, Node's http
// (with and without keep-alive), fetch, the openai SDK, ApacheBench and raw
// sockets (pipelining, HTTP/1.0, Connection: close, 100-continue, chunked
// bodies, HEAD, folded headers, 431, 413, 408).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, tempDir } from './lib/harness.mjs';
import { run, python, rawConnect, rawRequest, sseData, abReport } from './lib/clients.mjs';

// Echoed back by llmsim --reply echo: 44 bytes, 11 tokens, under max_tokens.
const PROMPT = 'The quick brown fox jumps over the lazy dog.';
const CHAT = '/v1/chat/completions';

function gatewayConfig(backendUrl, clientTimeoutMs) {
  return `
listen: "127.0.0.1:0"
backends:
  - name: edge
    tier: local
    url: "${backendUrl}"
    model: "edge-model"
    slots: 8
models:
  - name: "chat"
    backends: [edge]
limits:
  max_body_bytes: 65536
  max_header_bytes: 8192
  client_timeout_ms: ${clientTimeoutMs}
`;
}

// The two targets, filled in by before().
const targets = {
  spillway: { health: '/healthz', model: 'chat', maxHeader: 8192, maxBody: 65536 },
  llmsim: { health: '/health', model: 'sim-model', maxHeader: 64 << 10, maxBody: 8 << 20 },
};
let procs = [];
let anth; // llmsim --dialect anthropic with a short client timeout

before(async () => {
  const start = async (p) => { const s = await p; procs.push(s); return s; };
  const sim = await start(startLlmsim(['--reply', 'echo', '--slots', '8', '--decode-tps', '500']));
  const simSlow = await start(startLlmsim(['--client-timeout-ms', '300']));
  // An idle connection is closed after client_timeout_ms: far longer than any
  // wait for a close below, so a close seen there is the answer's own.
  const gw = await start(startSpillway(gatewayConfig(sim.url, 60000)));
  const gwSlow = await start(startSpillway(gatewayConfig(sim.url, 300)));
  anth = await start(startLlmsim(['--dialect', 'anthropic', '--client-timeout-ms', '300']));
  Object.assign(targets.spillway, { url: gw.url, port: gw.port, slowPort: gwSlow.port });
  Object.assign(targets.llmsim, { url: sim.url, port: sim.port, slowPort: simSlow.port });
});

after(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  procs = [];
});

const chatBody = (model, extra = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 64, ...extra });

// A non-streamed answer: complete, valid JSON, the whole echo.
function assertChat(text, model) {
  let j;
  assert.doesNotThrow(() => { j = JSON.parse(text); }, `not complete JSON: ${text.slice(0, 300)}`);
  assert.equal(j.object, 'chat.completion');
  assert.equal(j.model, model);
  assert.equal(j.choices[0].message.content, PROMPT);
  assert.equal(j.choices[0].finish_reason, 'stop');
}

// A streamed answer: every event valid JSON, the whole echo, [DONE] last.
function assertStream(text) {
  const data = sseData(text);
  assert.equal(data.at(-1), '[DONE]', `stream did not end with [DONE]: ${text.slice(-300)}`);
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), PROMPT);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
}

// The server's own error body: OpenAI shape.
function assertOpenAIError(text) {
  const e = JSON.parse(text).error;
  assert.equal(typeof e.message, 'string');
  assert.equal(typeof e.type, 'string');
}

// Node http with an explicit agent; resolves when the body is read.
function nodeRequest(url, { method = 'GET', headers = {}, body, parts, agent } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text,
        reusedSocket: req.reusedSocket, socket: res.socket }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (parts) { for (const p of parts) req.write(p); req.end(); } else req.end(body);
  });
}

const socketClosed = (sock) => waitFor(() => sock.destroyed || sock.readyState === 'closed',
  { timeout: 10000, what: 'the connection to close' });

for (const name of ['spillway', 'llmsim']) {
  const T = targets[name];
  const json = { 'Content-Type': 'application/json' };

  describe(`${name}: HTTP clients`, () => {
    test('curl: non-streamed answer complete; default keep-alive reuses the connection', async () => {
      const r = await run('curl', ['-sS', '-H', 'content-type: application/json', '-d', chatBody(T.model), `${T.url}${CHAT}`]);
      assert.equal(r.code, 0, r.stderr);
      assertChat(r.stdout, T.model);
      const k = await run('curl', ['-sS', '-o', '/dev/null', '-o', '/dev/null', '-w', '%{http_code} %{num_connects}\n',
        `${T.url}${T.health}`, `${T.url}${T.health}`]);
      assert.equal(k.stdout, '200 1\n200 0\n'); // the second request reused the first connection
    });

    test('curl -N: streamed answer complete up to data: [DONE]', async () => {
      const r = await run('curl', ['-sS', '-N', '-H', 'content-type: application/json', '-d',
        chatBody(T.model, { stream: true }), `${T.url}${CHAT}`]);
      assert.equal(r.code, 0, r.stderr);
      assertStream(r.stdout);
    });

    test('curl --http1.0: non-streamed and streamed (close-delimited) answers complete', async () => {
      const a = await run('curl', ['-sS', '--http1.0', '-H', 'content-type: application/json', '-d',
        chatBody(T.model), `${T.url}${CHAT}`]);
      assert.equal(a.code, 0, a.stderr);
      assertChat(a.stdout, T.model);
      const b = await run('curl', ['-sS', '-N', '--http1.0', '-H', 'content-type: application/json', '-d',
        chatBody(T.model, { stream: true }), `${T.url}${CHAT}`]);
      assert.equal(b.code, 0, b.stderr);
      assertStream(b.stdout);
    });

    test('curl -H "Connection: close": answered with Connection: close, one connection per request', async () => {
      const r = await run('curl', ['-sS', '-o', '/dev/null', '-o', '/dev/null', '-D', '-', '-w', 'W %{http_code} %{num_connects}\n',
        '-H', 'Connection: close', `${T.url}${T.health}`, `${T.url}${T.health}`]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((r.stdout.match(/^connection: close\r$/gim) || []).length, 2);
      assert.deepEqual(r.stdout.match(/^W .*$/gm), ['W 200 1', 'W 200 1']);
    });

    test('curl -I: HEAD answered with headers only (a second HEAD on the same connection works)', async () => {
      const r = await run('curl', ['-sS', '-I', '-w', 'W %{http_code} %{num_connects}\n',
        `${T.url}${T.health}`, `${T.url}${T.health}`]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((r.stdout.match(/^HTTP\/1\.1 200 /gm) || []).length, 2);
      assert.match(r.stdout, /^content-length: [1-9]\d*\r$/im);
      assert.deepEqual(r.stdout.match(/^W .*$/gm), ['W 200 1', 'W 200 0']);
    });

    test('curl Expect: 100-continue: 100 Continue, then the answer', async () => {
      const r = await run('curl', ['-sS', '-v', '-H', 'Expect: 100-continue', '-H', 'content-type: application/json',
        '--data-binary', '@-', `${T.url}${CHAT}`], { input: chatBody(T.model) });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^< HTTP\/1\.1 100 Continue/m);
      assertChat(r.stdout, T.model);
    });

    test('curl: chunked request body', async () => {
      const r = await run('curl', ['-sS', '-v', '-H', 'Transfer-Encoding: chunked', '-H', 'content-type: application/json',
        '--data-binary', '@-', `${T.url}${CHAT}`], { input: chatBody(T.model) });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^> Transfer-Encoding: chunked/m);
      assertChat(r.stdout, T.model);
    });

    test('curl: a body over the limit gets 413 while curl is still sending it', async () => {
      const r = await run('curl', ['-sS', '-H', 'Expect:', '-H', 'content-type: application/json',
        '--data-binary', '@-', '-w', '\nW %{http_code}', `${T.url}${CHAT}`], { input: 'x'.repeat(T.maxBody + 1) });
      assert.match(r.stdout, /\nW 413$/, r.stderr);
      assertOpenAIError(r.stdout.slice(0, r.stdout.lastIndexOf('\nW ')));
    });

    test('python urllib: non-streamed, streamed and health answers complete', async () => {
      const base = { mode: 'urllib', host: '127.0.0.1', port: T.port };
      const a = await python({ ...base, path: CHAT, body: chatBody(T.model), headers: json });
      assert.equal(a.status, 200);
      assertChat(a.body, T.model);
      const b = await python({ ...base, path: CHAT, body: chatBody(T.model, { stream: true }), headers: json });
      assert.equal(b.status, 200);
      assertStream(b.body);
      const h = await python({ ...base, path: T.health });
      assert.equal(h.status, 200);
      assert.equal(JSON.parse(h.body).status, 'ok');
    });

    test('python http.client: keep-alive, HTTP/1.0, chunked body, HEAD', async () => {
      const base = { host: '127.0.0.1', port: T.port, path: CHAT, health: T.health, body: chatBody(T.model) };
      const ka = await python({ ...base, mode: 'hc-keepalive' });
      assert.deepEqual(ka.map((x) => x.status), [200, 200, 200]);
      assert.deepEqual(ka.map((x) => x.reused), [false, true, true]); // one connection for all three
      assertChat(ka[1].body, T.model);
      const h10 = await python({ ...base, mode: 'hc-http10' });
      assert.equal(h10.status, 200);
      assert.equal(h10.will_close, true); // an HTTP/1.0 request without keep-alive: the server closes
      assertChat(h10.body, T.model);
      const ch = await python({ ...base, mode: 'hc-chunked' });
      assert.equal(ch.status, 200);
      assertChat(ch.body, T.model);
      const head = await python({ ...base, mode: 'hc-head' });
      assert.deepEqual(head.map((x) => x.status), [200, 200]);
      assert.equal(head[0].body, '');
      assert.ok(Number(head[0].headers['content-length']) > 0);
      assert.equal(head[1].reused, true);
      assert.equal(JSON.parse(head[1].body).status, 'ok');
    });

    test('node http: a keep-alive agent reuses the socket; keepAlive false gets Connection: close', async () => {
      const ka = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const a = await nodeRequest(`${T.url}${CHAT}`, { method: 'POST', headers: json, body: chatBody(T.model), agent: ka });
        assertChat(a.body, T.model);
        const b = await nodeRequest(`${T.url}${T.health}`, { agent: ka });
        assert.equal(b.status, 200);
        assert.equal(b.reusedSocket, true);
      } finally { ka.destroy(); }
      const nk = new http.Agent({ keepAlive: false });
      const c = await nodeRequest(`${T.url}${CHAT}`, { method: 'POST', headers: json, body: chatBody(T.model), agent: nk });
      assertChat(c.body, T.model);
      assert.equal(c.headers.connection, 'close');
      await socketClosed(c.socket);
      const d = await nodeRequest(`${T.url}${T.health}`, { agent: false });
      assert.equal(d.status, 200);
    });

    test('node http: streamed answer and a chunked request body', async () => {
      const agent = new http.Agent({ keepAlive: true });
      try {
        const s = await nodeRequest(`${T.url}${CHAT}`, { method: 'POST', headers: json, body: chatBody(T.model, { stream: true }), agent });
        assert.equal(s.status, 200);
        assert.match(s.headers['content-type'], /^text\/event-stream/);
        assertStream(s.body);
        const body = chatBody(T.model);
        const c = await nodeRequest(`${T.url}${CHAT}`, { method: 'POST', headers: json, parts: [body.slice(0, 7), body.slice(7)], agent });
        assert.equal(c.status, 200);
        assertChat(c.body, T.model);
      } finally { agent.destroy(); }
    });

    test('fetch: non-streamed, streamed, health and HEAD', async () => {
      const a = await fetch(`${T.url}${CHAT}`, { method: 'POST', headers: json, body: chatBody(T.model) });
      assert.equal(a.status, 200);
      assertChat(await a.text(), T.model);
      const s = await fetch(`${T.url}${CHAT}`, { method: 'POST', headers: json, body: chatBody(T.model, { stream: true }) });
      assert.equal(s.status, 200);
      assertStream(await s.text());
      const h = await fetch(`${T.url}${T.health}`);
      assert.equal(h.status, 200);
      assert.equal((await h.json()).status, 'ok');
      const head = await fetch(`${T.url}${T.health}`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
    });

    test('openai SDK: non-streamed and streamed', async () => {
      const c = new OpenAI({ baseURL: `${T.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });
      const r = await c.chat.completions.create({ model: T.model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 64 });
      assert.equal(r.choices[0].message.content, PROMPT);
      const stream = await c.chat.completions.create({ model: T.model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 64, stream: true });
      let text = '';
      let finish = null;
      for await (const ch of stream) {
        text += ch.choices[0]?.delta?.content ?? '';
        finish = ch.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(text, PROMPT);
      assert.equal(finish, 'stop');
    });

    test('ab: 50 GETs and 50 POSTs, 5 at a time, with and without -k, all answered', async () => {
      const dir = tempDir('spillway-ab-');
      const file = join(dir, 'body.json');
      writeFileSync(file, chatBody(T.model));
      const runs = [
        ['-n', '50', '-c', '5', `${T.url}${T.health}`],
        ['-k', '-n', '50', '-c', '5', `${T.url}${T.health}`],
        ['-n', '50', '-c', '5', '-p', file, '-T', 'application/json', `${T.url}${CHAT}`],
        ['-k', '-n', '50', '-c', '5', '-p', file, '-T', 'application/json', `${T.url}${CHAT}`],
      ];
      for (const args of runs) {
        const r = await run('ab', ['-q', '-s', '30', ...args]);
        assert.equal(r.code, 0, `ab ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
        const rep = abReport(r.stdout);
        assert.equal(rep.complete, 50, r.stdout);
        // Length failures only say two bodies differ in size (healthz counts
        // connections); a cut or refused answer is a Connect, Receive or
        // Exceptions failure, or a non-2xx.
        assert.equal((rep.connect ?? 0) + (rep.receive ?? 0) + (rep.exceptions ?? 0), 0, r.stdout);
        assert.equal(rep.non2xx, 0, r.stdout);
        if (args[0] === '-k') assert.equal(rep.keepAlive, 50, r.stdout); // HTTP/1.0 keep-alive honoured
      }
    });

    test('raw socket: pipelined GET, HEAD, POST, GET answered in order on one connection', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(rawRequest('GET', T.health) + rawRequest('HEAD', T.health)
          + rawRequest('POST', CHAT, { headers: json, body: chatBody(T.model) }) + rawRequest('GET', '/v1/models'),
        'GET', 'HEAD', 'POST', 'GET');
        const { responses, rest } = await c.responses(4);
        assert.deepEqual(responses.map((r) => r.status), [200, 200, 200, 200]);
        assert.equal(JSON.parse(responses[0].body).status, 'ok');
        assert.equal(responses[1].body, '');
        assert.equal(responses[1].headers['content-length'], responses[0].headers['content-length']);
        assertChat(responses[2].body, T.model);
        assert.ok(Array.isArray(JSON.parse(responses[3].body).data));
        assert.equal(rest, '');
      } finally { c.destroy(); }
    });

    test('raw socket: HTTP/1.0 answered then closed; with keep-alive kept for the next request', async () => {
      const a = await rawConnect(T.port);
      try {
        a.send(rawRequest('GET', T.health, { version: '1.0' }), 'GET');
        const { responses } = await a.responses(1);
        assert.equal(responses[0].status, 200);
        assert.equal(responses[0].headers.connection, 'close');
        await a.closed();
      } finally { a.destroy(); }
      const b = await rawConnect(T.port);
      try {
        b.send(rawRequest('GET', T.health, { version: '1.0', headers: { Connection: 'keep-alive' } }), 'GET');
        const first = (await b.responses(1)).responses[0];
        assert.equal(first.status, 200);
        assert.match(first.headers.connection, /keep-alive/i);
        b.send(rawRequest('POST', CHAT, { version: '1.0', headers: { ...json, Connection: 'keep-alive' }, body: chatBody(T.model) }), 'POST');
        const second = (await b.responses(2)).responses[1];
        assert.equal(second.status, 200);
        assertChat(second.body, T.model);
      } finally { b.destroy(); }
    });

    test('raw socket: a stream to an HTTP/1.0 client is close-delimited and complete', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(rawRequest('POST', CHAT, { version: '1.0', headers: json, body: chatBody(T.model, { stream: true }) }), 'POST');
        await c.closed();
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 200);
        assert.equal(responses[0].headers['transfer-encoding'], undefined);
        assertStream(responses[0].body);
      } finally { c.destroy(); }
    });

    test('raw socket: Connection: close is answered, then the server closes', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(rawRequest('POST', CHAT, { headers: { ...json, Connection: 'close' }, body: chatBody(T.model) }), 'POST');
        const { responses } = await c.responses(1);
        assert.equal(responses[0].headers.connection, 'close');
        assertChat(responses[0].body, T.model);
        await c.closed();
      } finally { c.destroy(); }
    });

    test('raw socket: a folded header line is refused with 400', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(`GET ${T.health} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Folded: a\r\n b\r\n\r\n`, 'GET');
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 400);
        assertOpenAIError(responses[0].body);
        await c.closed();
      } finally { c.destroy(); }
    });

    test('raw socket: headers over the limit get 431', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(rawRequest('GET', T.health, { headers: { 'X-Big': 'y'.repeat(T.maxHeader + 100) } }), 'GET');
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 431);
        assertOpenAIError(responses[0].body);
      } finally { c.destroy(); }
    });

    test('raw socket: a Content-Length over the limit gets 413 before any body byte is sent', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(`POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${T.maxBody + 1}\r\n\r\n`, 'POST');
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 413);
        assertOpenAIError(responses[0].body);
      } finally { c.destroy(); }
    });

    test('raw socket: a request not finished within client_timeout_ms gets 408 and is closed', async () => {
      const c = await rawConnect(T.slowPort);
      try {
        c.send(`POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n{"a"`, 'POST');
        await c.closed();
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 408);
        assertOpenAIError(responses[0].body);
      } finally { c.destroy(); }
    });
  });
}

describe('llmsim --dialect anthropic: errors the HTTP server answers are in the Anthropic shape', () => {
  const anthropicError = (res, status, type) => {
    assert.equal(res.status, status);
    const j = JSON.parse(res.body);
    assert.equal(j.type, 'error');
    assert.equal(j.error.type, type);
    assert.equal(typeof j.error.message, 'string');
  };
  const one = async (text, closes = false) => {
    const c = await rawConnect(anth.port);
    try {
      c.send(text, text.split(' ')[0]);
      if (closes) await c.closed();
      return (await c.responses(1)).responses[0];
    } finally { c.destroy(); }
  };

  test('folded header 400, 431, 413 and 408', async () => {
    anthropicError(await one('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Folded: a\r\n\tb\r\n\r\n'), 400, 'invalid_request_error');
    anthropicError(await one(rawRequest('GET', '/health', { headers: { 'X-Big': 'y'.repeat(70000) } })), 431, 'invalid_request_error');
    anthropicError(await one(`POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${(8 << 20) + 1}\r\n\r\n`), 413, 'request_too_large');
    anthropicError(await one('POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n', true), 408, 'invalid_request_error');
  });
});

// Framing, limits and connection handling of the HTTP server both share,
// driven over a raw socket.
for (const name of ['spillway', 'llmsim']) {
  const T = targets[name];

  describe(`${name}: HTTP server framing and limits`, () => {
    test('raw socket: a chunked body is cut with 413 as soon as it crosses the limit, before its last chunk', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(`POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, 'POST');
        // Over the limit in 64 KiB chunks; the terminating 0-chunk is never sent,
        // so only a server that counts as it reads can answer.
        const chunk = 'x'.repeat(65536);
        for (let sent = 0; sent <= T.maxBody; sent += chunk.length) c.send(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 413);
        assertOpenAIError(responses[0].body);
      } finally { c.destroy(); }
    });

    test('raw socket: Content-Length together with Transfer-Encoding: chunked is refused with 400', async () => {
      const c = await rawConnect(T.port);
      try {
        const body = chatBody(T.model);
        c.send(`POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n`
          + `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`, 'POST');
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 400);
        assertOpenAIError(responses[0].body);
        await c.closed();
      } finally { c.destroy(); }
    });

    for (const version of ['2.0', '3.0', '1.2']) {
      test(`raw socket: a request line of HTTP/${version} gets 505 and the connection closes`, async () => {
        const c = await rawConnect(T.port);
        try {
          c.send(`GET ${T.health} HTTP/${version}\r\nHost: 127.0.0.1\r\n\r\n`, 'GET');
          const { responses } = await c.responses(1);
          assert.equal(responses[0].status, 505);
          assertOpenAIError(responses[0].body);
          await c.closed();
        } finally { c.destroy(); }
      });
    }

    test('raw socket: a Transfer-Encoding other than chunked gets 501', async () => {
      const c = await rawConnect(T.port);
      try {
        c.send(`POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\nabc`, 'POST');
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 501);
        assertOpenAIError(responses[0].body);
        await c.closed();
      } finally { c.destroy(); }
    });

    test('raw socket: a chat request then 200 pipelined requests in one write, well past the 64 KiB read-ahead, are all answered in order', async () => {
      const c = await rawConnect(T.port);
      try {
        // The chat answer takes a while (the upstream generates it): meanwhile
        // the pipelined bytes fill the read-ahead and reading pauses; it must
        // resume once the answer is out. Three kinds in turn after it, so an
        // answer out of order or missing shows.
        const kinds = [[T.health, 200], ['/v1/models', 200], ['/no-such-path', 404]];
        const pad = 'p'.repeat(500);
        let text = rawRequest('POST', CHAT, { headers: { 'Content-Type': 'application/json' }, body: chatBody(T.model) });
        const want = [200];
        for (let i = 0; i < 200; i++) {
          const [path, status] = kinds[i % 3];
          text += rawRequest('GET', path, { headers: { 'X-Pad': pad } });
          want.push(status);
        }
        assert.ok(text.length > 64 * 1024 + 20000, `${text.length} bytes pipelined`);
        c.send(text, 'POST', ...want.slice(1).map(() => 'GET'));
        const { responses, rest } = await c.responses(want.length, 60000);
        assert.deepEqual(responses.map((r) => r.status), want);
        assertChat(responses[0].body, T.model);
        responses.slice(1).forEach((r, i) => {
          if (i % 3 === 0) assert.equal(JSON.parse(r.body).status, 'ok');
          if (i % 3 === 1) assert.ok(Array.isArray(JSON.parse(r.body).data));
          if (i % 3 === 2) assertOpenAIError(r.body);
        });
        assert.equal(rest, '');
        assert.equal(c.isClosed, false, 'the connection stays open for more');
      } finally { c.destroy(); }
    });

    test('raw socket: a client that keeps sending a refused body still receives its 413 (the server lingers before closing)', async () => {
      const c = await rawConnect(T.port);
      try {
        const over = T.maxBody + (1 << 20);
        // Headers and the whole body in one go, without waiting for an answer.
        c.send(`POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${over}\r\n\r\n`, 'POST');
        const piece = 'x'.repeat(64 * 1024);
        for (let sent = 0; sent < over; sent += piece.length) c.send(piece.slice(0, Math.min(piece.length, over - sent)));
        await c.closed();
        const { responses } = await c.responses(1);
        assert.equal(responses[0].status, 413);
        assertOpenAIError(responses[0].body);
      } finally { c.destroy(); }
    });
  });
}

// Bodies of agent size (hundreds of KB) arrive in many reads: each must reach
// the backend byte for byte, and a request pipelined right after a body must
// stay a request of its own, wherever the client's writes split them.
describe('large bodies, pipelined and split at any byte', () => {
  let sim; let gw;
  before(async () => {
    sim = await startLlmsim(['--reply', 'echo', '--slots', '4', '--decode-tps', '1000000']);
    gw = await startSpillway(`
listen: "127.0.0.1:0"
backends:
  - { name: edge, tier: local, url: "${sim.url}", model: "edge-model", slots: 4 }
models:
  - { name: "chat", backends: [edge] }
limits: { max_body_bytes: 2097152 }
`);
  });
  after(async () => { await Promise.all([gw?.stop(), sim?.stop()]); });

  // What people paste: prose and code, accented and non-Latin letters, JSON
  // escapes; different for each seed, so a body swapped or cut shows.
  const words = ['return', 'the', 'buffer', 'naïve', 'café', 'größe', 'данные', '数据', 'if (x)',
    '{ "k": [1, 2] }', 'tab\there', 'line\nbreak', 'quote "q"', 'back\\slash'];
  const prompt = (seed, bytes) => {
    let s = `request ${seed}:`;
    for (let i = 0; s.length < bytes; i++) s += ' ' + words[(i * 7 + seed * 3) % words.length];
    return s;
  };
  const body = (text) => JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: text }], max_tokens: 1000000 });

  test('two 300 KB POSTs and a GET in one stream of writes cut at odd sizes are each answered with their own body', async () => {
    const prompts = [prompt(1, 300000), prompt(2, 310000)];
    const text = rawRequest('POST', CHAT, { headers: { 'Content-Type': 'application/json' }, body: body(prompts[0]) })
      + rawRequest('POST', CHAT, { headers: { 'Content-Type': 'application/json' }, body: body(prompts[1]) })
      + rawRequest('GET', '/healthz');
    const raw = Buffer.from(text, 'utf8').toString('latin1');
    const c = await rawConnect(gw.port);
    try {
      c.send('', 'POST', 'POST', 'GET');
      // Pieces of 1, 7, 4093, 65537, ... bytes: a cut inside a head, right
      // after one, inside a body and across the end of one body into the next
      // request; each waits for the socket to drain, so they arrive apart.
      const sizes = [1, 7, 4093, 65537, 131071, 3, 200000];
      for (let at = 0, i = 0; at < raw.length; i++) {
        const n = sizes[i % sizes.length];
        await new Promise((res) => c.sock.write(raw.slice(at, at + n), 'latin1', res));
        at += n;
      }
      const { responses, rest } = await c.responses(3, 60000);
      assert.deepEqual(responses.map((r) => r.status), [200, 200, 200]);
      for (let i = 0; i < 2; i++) {
        const j = JSON.parse(Buffer.from(responses[i].body, 'latin1').toString('utf8'));
        assert.equal(j.choices[0].message.content, prompts[i], `answer ${i} echoes its own body`);
      }
      assert.equal(JSON.parse(responses[2].body).status, 'ok');
      assert.equal(rest, '');
    } finally { c.destroy(); }
  });

  test('a client that stops halfway through a large body is dropped, and the next connection is served', async () => {
    const b = body(prompt(3, 200000));
    const c = await rawConnect(gw.port);
    const head = `POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n`;
    c.send(head + b.slice(0, 100000));
    c.sock.end();
    await c.closed();
    const r = await fetch(`${gw.url}${CHAT}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body('after') });
    assert.equal(r.status, 200);
    assert.equal((await r.json()).choices[0].message.content, 'after');
  });
});
