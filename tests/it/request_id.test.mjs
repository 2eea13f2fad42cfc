// X-Request-Id on every answer: every endpoint of every surface (OpenAI,
// Anthropic, embeddings, models, operator endpoints) with each outcome it can
// have (200, streamed 200, 400, 401, 404, 405, 413, 415, 421, 431, ...),
// including the errors the HTTP server answers itself before any handler
// runs. Each id is the gateway's shape and no two answers share one.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway } from './lib/harness.mjs';
import { rawConnect } from './lib/rawhttp.mjs';

const KEY = 'sk-rid';
const ADMIN = 'admin-rid';
const ID = /^sw-[0-9a-f]{8}-[0-9a-f]{6}$/;

const config = (edge, claude) => `
listen: "127.0.0.1:0"
listen_hosts: ["127.0.0.1"]
keys:
  - { name: app, key: "${KEY}" }
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edge}", model: edge-model }
  - { name: claude, tier: cloud, url: "${claude}", model: claude-upstream, dialect: anthropic, api_key: "sk-ant-up" }
models:
  - { name: chat, backends: [edge] }
  - { name: claude, backends: [claude] }
  - { name: emb, backends: [edge] }
limits: { max_body_bytes: 4096, max_header_bytes: 2048 }
pii: { policy: "off" }
`;

const bearer = { authorization: `Bearer ${KEY}` };
const json = { 'content-type': 'application/json' };
const anth = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' };
const chat = (model = 'chat', extra = {}) => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, ...extra });
const msg = (model = 'claude', extra = {}) => JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], ...extra });
const big = 'x'.repeat(5000);

// [name, method, path, headers, body, expected status]
const CASES = [
  ['chat 200', 'POST', '/v1/chat/completions', { ...bearer, ...json }, chat(), 200],
  ['chat streamed 200', 'POST', '/v1/chat/completions', { ...bearer, ...json }, chat('chat', { stream: true }), 200],
  ['chat 400 body', 'POST', '/v1/chat/completions', { ...bearer, ...json }, '{"model":', 400],
  ['chat 400 header', 'POST', '/v1/chat/completions', { ...bearer, ...json, 'x-spillway-allow-cloud': 'maybe' }, chat(), 400],
  ['chat 401', 'POST', '/v1/chat/completions', json, chat(), 401],
  ['chat 404 model', 'POST', '/v1/chat/completions', { ...bearer, ...json }, chat('nope'), 404],
  ['chat 405', 'GET', '/v1/chat/completions', bearer, '', 405],
  ['chat 413', 'POST', '/v1/chat/completions', { ...bearer, ...json }, chat('chat', { pad: big }), 413],
  ['chat 415', 'POST', '/v1/chat/completions', { ...bearer, 'content-type': 'text/plain' }, chat(), 415],
  ['embeddings 200', 'POST', '/v1/embeddings', { ...bearer, ...json }, JSON.stringify({ model: 'emb', input: 'hi' }), 200],
  ['embeddings 400', 'POST', '/v1/embeddings', { ...bearer, ...json }, JSON.stringify({ model: 'emb' }), 400],
  ['embeddings 401', 'POST', '/v1/embeddings', json, JSON.stringify({ model: 'emb', input: 'hi' }), 401],
  ['embeddings 415', 'POST', '/v1/embeddings', bearer, JSON.stringify({ model: 'emb', input: 'hi' }), 415],
  ['messages 200', 'POST', '/v1/messages', { ...anth, ...json }, msg(), 200],
  ['messages streamed 200', 'POST', '/v1/messages', { ...anth, ...json }, msg('claude', { stream: true }), 200],
  ['messages 400', 'POST', '/v1/messages', { ...anth, ...json }, '{"model":"claude"}', 400],
  ['messages 400 header', 'POST', '/v1/messages', { ...anth, ...json, 'anthropic-version': 'yesterday' }, msg(), 400],
  ['messages 401', 'POST', '/v1/messages', json, msg(), 401],
  ['messages 404 model', 'POST', '/v1/messages', { ...anth, ...json }, msg('nope'), 404],
  ['messages 413', 'POST', '/v1/messages', { ...anth, ...json }, msg('claude', { pad: big }), 413],
  ['messages 415', 'POST', '/v1/messages', anth, msg(), 415],
  ['count_tokens 200', 'POST', '/v1/messages/count_tokens', { ...anth, ...json }, msg(), 200],
  ['count_tokens 401', 'POST', '/v1/messages/count_tokens', json, msg(), 401],
  ['count_tokens 404', 'POST', '/v1/messages/count_tokens', { ...anth, ...json }, msg('nope'), 404],
  ['models 200', 'GET', '/v1/models', bearer, '', 200],
  ['models HEAD 200', 'HEAD', '/v1/models', bearer, '', 200],
  ['models anthropic 200', 'GET', '/v1/models', anth, '', 200],
  ['models 401', 'GET', '/v1/models', {}, '', 401],
  ['models anthropic 401', 'GET', '/v1/models', { 'anthropic-version': '2023-06-01' }, '', 401],
  ['models 405', 'POST', '/v1/models', { ...bearer, ...json }, '{}', 405],
  ['model 200', 'GET', '/v1/models/chat', bearer, '', 200],
  ['model 404', 'GET', '/v1/models/nope', bearer, '', 404],
  ['model 401', 'GET', '/v1/models/chat', {}, '', 401],
  ['model 405', 'DELETE', '/v1/models/chat', bearer, '', 405],
  ['unknown path 404', 'GET', '/v2/nothing', bearer, '', 404],
  ['unknown path 404 no key', 'POST', '/v1/conversations', json, '{}', 404],
  ['responses 401', 'POST', '/v1/responses', json, '{}', 401],
  ['healthz 200', 'GET', '/healthz', {}, '', 200],
  ['metrics 200', 'GET', '/metrics', {}, '', 200],
  ['dashboard 200', 'GET', '/dashboard', {}, '', 200],
  ['admin 200', 'GET', '/admin/state', { authorization: `Bearer ${ADMIN}` }, '', 200],
  ['admin 401', 'GET', '/admin/state', {}, '', 401],
  ['admin 404', 'GET', '/admin/nothing', { authorization: `Bearer ${ADMIN}` }, '', 404],
  ['admin 405', 'GET', '/admin/breakers/edge/reset', { authorization: `Bearer ${ADMIN}` }, '', 405],
  ['admin 400', 'GET', '/admin/decisions?n=0', { authorization: `Bearer ${ADMIN}` }, '', 400],
  ['host 421', 'GET', '/v1/models', { ...bearer, host: 'evil.example' }, '', 421],
  ['header block 431', 'GET', '/v1/models', { ...bearer, 'x-pad': 'y'.repeat(3000) }, '', 431],
];

// The head of the answer to one raw request on a new connection (a streamed
// answer's head is all that is read: the id is set before its first byte).
async function ask(port, method, path, headers, body) {
  const c = await rawConnect(port);
  try {
    const h = { host: '127.0.0.1', connection: 'close', ...headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) };
    const text = `${method} ${path} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    c.sock.write(text);
    // A body the server refuses by its size is never sent: the answer comes first.
    if (body && Buffer.byteLength(body) <= 4096) c.sock.write(body);
    let data = '';
    await new Promise((res) => {
      c.sock.on('data', (d) => { data += d.toString(); if (data.includes('\r\n\r\n')) res(); });
      c.closed.then(res);
    });
    const head = data.slice(0, data.indexOf('\r\n\r\n'));
    return { status: Number(head.split(' ')[1]), head };
  } finally {
    c.destroy();
  }
}

const idOf = (head) => head.match(/\r\nx-request-id: ([^\r\n]*)/i)?.[1];

describe('X-Request-Id on every answer', () => {
  let edge, claude, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    claude = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(config(edge.url, claude.url));
  });
  after(async () => { await gw?.stop(); await edge?.stop(); await claude?.stop(); });

  test('every endpoint and outcome answers with one id, all distinct', async () => {
    const seen = new Map();
    for (const [name, method, path, headers, body, status] of CASES) {
      const r = await ask(gw.port, method, path, headers, body);
      assert.equal(r.status, status, `${name}: status\n${r.head}`);
      const ids = r.head.split('\r\n').filter((l) => /^x-request-id:/i.test(l));
      assert.equal(ids.length, 1, `${name}: one X-Request-Id\n${r.head}`);
      const id = idOf(r.head);
      assert.match(id, ID, name);
      assert.ok(!seen.has(id), `${name}: id ${id} already used by ${seen.get(id)}`);
      seen.set(id, name);
    }
    assert.equal(seen.size, CASES.length);
  });

  test('the errors the HTTP server answers itself: a malformed request line, a body over the limit while it streams in', async () => {
    const c = await rawConnect(gw.port);
    c.sock.write('GARBAGE\r\n\r\n');
    let data = '';
    c.sock.on('data', (d) => { data += d.toString(); });
    await c.closed;
    assert.equal(Number(data.split(' ')[1]), 400, data);
    assert.match(idOf(data.slice(0, data.indexOf('\r\n\r\n'))), ID);

    const d = await rawConnect(gw.port);
    d.sock.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEY}\r\n`
      + 'content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n');
    d.sock.write(`1388\r\n${'z'.repeat(5000)}\r\n`);
    let out = '';
    d.sock.on('data', (x) => { out += x.toString(); });
    await d.closed;
    assert.equal(Number(out.split(' ')[1]), 413, out);
    assert.match(idOf(out.slice(0, out.indexOf('\r\n\r\n'))), ID);
  });
});
