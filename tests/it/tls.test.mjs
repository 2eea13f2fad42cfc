// HTTPS upstreams: certificates are verified (system CAs by default, or a
// backend's ca_file), and keep-alive connections are reused. The upstream is a
// minimal OpenAI-shaped HTTPS server in this process with a certificate made
// for the test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSpillway, getJSON, tempDir } from './lib/harness.mjs';

let server, port, dir;
const sockets = new Set();
let requests = 0;
let handshakes = 0; // TLS connections the upstream accepted
let lastBody = null; // the last request body the upstream got, parsed

before(async () => {
  dir = tempDir('spillway-tls-');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.method !== 'POST') { res.writeHead(404); res.end(); return; } // the start-up check's GET /v1/models
      requests++;
      lastBody = JSON.parse(body);
      const { model } = lastBody;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        id: 'chatcmpl-tls', object: 'chat.completion', created: 0, model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'over TLS' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      }));
    });
  });
  server.keepAliveTimeout = 60000; // idle between the start-up check and the first request: keep it
  server.on('secureConnection', (s) => { handshakes++; sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  port = server.address().port;
});
after(() => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(r); }));

const cfg = (extra) => `
listen: "127.0.0.1:0"
backends:
  - { name: tls, tier: cloud, url: "https://127.0.0.1:${port}", model: m${extra} }
models:
  - { name: chat, backends: [tls] }
`;
const ask = (gw) => getJSON(`${gw.url}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }),
});

test('a certificate the system does not trust is refused', async () => {
  const gw = await startSpillway(cfg(''));
  try {
    const before = requests;
    const r = await ask(gw);
    assert.equal(r.status, 503);
    assert.match(r.body.error.message, /tls: connect_error/);
    assert.equal(requests, before, 'nothing was sent over the untrusted connection');
  } finally {
    await gw.stop();
  }
});

test('the backend CA in ca_file is trusted, and the connection is kept alive', async () => {
  // Counted from before the start: the start-up check (GET /v1/models) opens
  // the connection the three requests then reuse.
  const before = { handshakes, requests };
  const gw = await startSpillway(cfg(`, ca_file: "${join(dir, 'cert.pem')}"`));
  try {
    for (let i = 0; i < 3; i++) {
      const r = await ask(gw);
      assert.equal(r.status, 200);
      assert.equal(r.body.choices[0].message.content, 'over TLS');
      assert.equal(r.body.model, 'chat');
      // the client's bytes with the backend's model in them, whole over TLS
      assert.deepEqual(lastBody, { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    }
    assert.equal(requests - before.requests, 3);
    assert.equal(handshakes - before.handshakes, 1, 'the start-up check and three requests over one TLS connection, made once');
  } finally {
    await gw.stop();
  }
});

test('tls_verify: false lets a backend with a self-signed certificate answer; with verification on the same backend fails', async () => {
  const on = await startSpillway(cfg(', tls_verify: true'));
  const off = await startSpillway(cfg(', tls_verify: false'));
  try {
    const before = requests;
    const refused = await ask(on);
    assert.equal(refused.status, 503);
    assert.match(refused.body.error.message, /tls: connect_error/);
    assert.equal(requests, before, 'nothing was sent with verification on');

    const r = await ask(off);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.choices[0].message.content, 'over TLS');
    assert.equal(r.headers.get('x-spillway-backend'), 'tls');
    assert.equal(requests, before + 1);
  } finally {
    await on.stop(); await off.stop();
  }
});
