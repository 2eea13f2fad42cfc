// Every privacy input on every endpoint is read one way, and whatever is
// ambiguous is refused rather than guessed: metadata.allow_cloud on chat,
// Messages and embeddings (null and other types a 400), near-miss spellings
// of a flag in metadata and headers, repeated credentials, whitespace before
// a header's colon, HTTP/0.9 lines and oversized chunks refused at once, idle
// connections that would lock clients out, and the browser-facing guard
// (Content-Type on the API, the Host check of listen_hosts).
//
// The model "cloudy" has only a cloud backend: whatever reaches it shows in
// the simulator's /admin/received, so "kept off the cloud" is asserted on
// what the cloud saw, not only on the status.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { rawConnect } from './lib/rawhttp.mjs';

const KEY = 'sk-inputs-app';
const KEY2 = 'sk-inputs-other';
const ADMIN = 'sk-inputs-admin';

function config({ edgeUrl, cloudUrl, keys = true, extra = '' }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
${keys ? `keys:\n  - { name: app, key: "${KEY}" }\n  - { name: other, key: "${KEY2}" }` : ''}
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: cloudy, backends: [cloud] }
  - { name: chat, backends: [edge, cloud] }
routing:
  health_interval_ms: 100
${extra}
`;
}

const chat = (extra = {}) => JSON.stringify({ model: 'cloudy', max_tokens: 4, messages: [{ role: 'user', content: 'what is a spillway for' }], ...extra });
const messages = (extra = {}) => JSON.stringify({ model: 'cloudy', max_tokens: 4, messages: [{ role: 'user', content: 'what is a spillway for' }], ...extra });
const embed = (extra = {}) => JSON.stringify({ model: 'cloudy', input: 'a spillway lets the overflow out', ...extra });
const SURFACES = [
  { name: 'chat', path: '/v1/chat/completions', body: chat },
  { name: 'messages', path: '/v1/messages', body: messages },
  { name: 'embeddings', path: '/v1/embeddings', body: embed },
];

async function post(gw, path, body, headers = {}) {
  const r = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { json = { raw: text }; }
  return { status: r.status, json, backend: r.headers.get('x-spillway-backend') };
}

// Refused for want of a backend it may use (the only one is cloud): what
// allow_cloud false, a sensitive flag or a key's policy answers here.
const KEPT_LOCAL = new Set(['local_capacity_insufficient', 'privacy_restricted']);
function keptLocal(r, what) {
  assert.notEqual(r.status, 200, what);
  assert.ok(KEPT_LOCAL.has(r.json.error.code), `${what}: ${JSON.stringify(r.json)}`);
}

// The error message in either API's shape.
const message = (r) => r.json?.error?.message ?? '';
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=1000`)).body.requests.filter((q) => q.path !== '/v1/models');

// Writes one request by hand (repeated headers, odd bytes) and reads the
// answer: { status, head, body }; resolves null when the connection closed
// without one.
function rawAsk(port, text) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let raw = Buffer.alloc(0);
    const done = () => {
      const s = raw.toString();
      const i = s.indexOf('\r\n\r\n');
      if (i < 0) return resolve(null);
      resolve({ status: Number(s.split(' ')[1]), head: s.slice(0, i), body: s.slice(i + 4) });
    };
    sock.on('data', (d) => { raw = Buffer.concat([raw, d]); });
    sock.on('close', done);
    sock.on('error', (e) => (e.code === 'ECONNRESET' ? done() : reject(e)));
    sock.write(text);
  });
}

function rawPost(port, path, body, lines) {
  const head = [['Host', '127.0.0.1'], ['Content-Type', 'application/json'], ['Content-Length', Buffer.byteLength(body)], ['Connection', 'close'], ...lines]
    .map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return rawAsk(port, `POST ${path} HTTP/1.1\r\n${head}\r\n${body}`);
}

describe('privacy inputs', () => {
  let edge, cloud, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--keep-received', '1000']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '1000']);
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
  });
  after(async () => {
    await gw?.stop(); await cloud?.stop(); await edge?.stop();
  });

  test('embeddings: metadata.allow_cloud false keeps the request off the cloud, as on chat', async () => {
    const before = (await received(cloud)).length;
    const ok = await post(gw, '/v1/embeddings', embed());
    assert.equal(ok.status, 200, 'the cloud serves a clean embedding');
    const sent = (await received(cloud)).slice(before);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].body.metadata, undefined, 'metadata.allow_cloud is not forwarded');
    for (const v of [false, 'false', 'no', 'off', '0']) {
      const n = (await received(cloud)).length;
      const r = await post(gw, '/v1/embeddings', embed({ metadata: { allow_cloud: v } }));
      keptLocal(r, `allow_cloud ${JSON.stringify(v)}`);
      assert.equal((await received(cloud)).length, n, `allow_cloud ${JSON.stringify(v)}: nothing reached the cloud`);
    }
    // a non-string metadata value other than allow_cloud is refused as on chat
    const bad = await post(gw, '/v1/embeddings', embed({ metadata: { team: 7 } }));
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'metadata.team');
  });

  test('metadata.allow_cloud null or of another type is a 400 naming it, on every surface', async () => {
    const n = (await received(cloud)).length;
    for (const s of SURFACES) {
      for (const v of [null, 0, 1, [], {}, 'maybe', '']) {
        const r = await post(gw, s.path, s.body({ metadata: { allow_cloud: v } }));
        assert.equal(r.status, 400, `${s.name} allow_cloud ${JSON.stringify(v)}: ${JSON.stringify(r.json)}`);
        assert.match(message(r), /metadata\.allow_cloud/, `${s.name}: the message names the field`);
        if (s.name !== 'messages') assert.equal(r.json.error.param, 'metadata.allow_cloud');
      }
    }
    assert.equal((await received(cloud)).length, n, 'none reached the cloud');
  });

  test('a near-miss spelling of metadata.allow_cloud is a 400 naming the key, on every surface', async () => {
    const n = (await received(cloud)).length;
    for (const s of SURFACES) {
      for (const k of ['Allow_Cloud', 'allow-cloud', 'allow_cloud ', 'allowCloud', 'ALLOW_CLOUD', 'allow cloud', ' allow_cloud', 'AllowCloud']) {
        const r = await post(gw, s.path, s.body({ metadata: { [k]: 'false' } }));
        assert.equal(r.status, 400, `${s.name} metadata ${JSON.stringify(k)}: ${JSON.stringify(r.json)}`);
        assert.ok(message(r).includes(`metadata.${k}`), `${s.name}: the message names ${k}: ${message(r)}`);
        if (s.name !== 'messages') assert.equal(r.json.error.param, `metadata.${k}`);
      }
    }
    assert.equal((await received(cloud)).length, n, 'none reached the cloud');
    // the exact spelling still works on each surface
    for (const s of SURFACES) {
      const r = await post(gw, s.path, s.body({ metadata: { allow_cloud: false } }));
      if (s.name !== 'messages') keptLocal(r, s.name);
      else assert.notEqual(r.status, 200, s.name);
    }
    assert.equal((await received(cloud)).length, n);
  });

  test('a near-miss spelling of a flag header is a 400 naming it, on every surface', async () => {
    const n = (await received(cloud)).length;
    const names = [
      'X_Spillway_Allow_Cloud', 'X-Spillway-Allow_Cloud', 'X-Spillway-AllowCloud', 'XSpillwayAllowCloud',
      'X_Spillway_Sensitive', 'X-SpillwaySensitive',
      'X_Spillway_Latency_Critical', 'X-Spillway-LatencyCritical',
    ];
    for (const s of SURFACES) {
      for (const h of names) {
        const r = await post(gw, s.path, s.body(), { [h]: 'false' });
        assert.equal(r.status, 400, `${s.name} ${h}: ${JSON.stringify(r.json)}`);
        assert.ok(message(r).toLowerCase().includes(h.toLowerCase()), `${s.name}: names ${h}: ${message(r)}`);
      }
    }
    assert.equal((await received(cloud)).length, n, 'none reached the cloud');
    // any case of the right spelling is the header itself
    keptLocal(await post(gw, '/v1/chat/completions', chat(), { 'x-spillway-allow-cloud': 'false' }), 'lower-case header');
  });

  test('whitespace between a header name and its colon is a 400, not a header ignored', async () => {
    const n = (await received(cloud)).length;
    for (const name of ['X-Spillway-Allow-Cloud ', 'X-Spillway-Allow-Cloud\t', 'X-Spillway-Sensitive ']) {
      const r = await rawPost(gw.port, '/v1/chat/completions', chat(), [['Authorization', `Bearer ${KEY}`], [name, 'false']]);
      assert.equal(r.status, 400, JSON.stringify(name));
      assert.equal(JSON.parse(r.body).error.code, 'invalid_http');
    }
    assert.equal((await received(cloud)).length, n, 'none reached the cloud');
  });

  test('two Authorization or x-api-key headers, or both with different keys, are refused 401 ambiguous_api_key', async () => {
    const cases = [
      [['Authorization', `Bearer ${KEY}`], ['Authorization', `Bearer ${KEY2}`]],
      [['Authorization', `Bearer ${KEY}`], ['Authorization', `Bearer ${KEY}`]],
      [['x-api-key', KEY], ['x-api-key', KEY2]],
      [['Authorization', `Bearer ${KEY}`], ['x-api-key', KEY2]],
      [['x-api-key', KEY2], ['Authorization', `Bearer ${KEY}`]],
    ];
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/embeddings']) {
      for (const lines of cases) {
        const body = path === '/v1/embeddings' ? embed() : chat();
        const r = await rawPost(gw.port, path, body, lines);
        assert.equal(r.status, 401, `${path} ${JSON.stringify(lines)}: ${r.body}`);
        assert.match(r.body, /more than one API key/);
      }
    }
    // the admin API: two Authorization headers are refused too
    const adm = await rawAsk(gw.port, `GET /admin/state HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN}\r\nAuthorization: Bearer nope\r\nConnection: close\r\n\r\n`);
    assert.equal(adm.status, 401);
    // one key, given both ways alike, is one key
    const same = await rawPost(gw.port, '/v1/chat/completions', chat({ model: 'chat' }), [['Authorization', `Bearer ${KEY}`], ['x-api-key', KEY]]);
    assert.equal(same.status, 200, same.body);
  });

  test('a privacy header repeated with conflicting values keeps the most restrictive', async () => {
    const n = (await received(cloud)).length;
    const r = await rawPost(gw.port, '/v1/chat/completions', chat(), [['Authorization', `Bearer ${KEY}`], ['X-Spillway-Allow-Cloud', 'true'], ['X-Spillway-Allow-Cloud', 'false']]);
    keptLocal({ status: r.status, json: JSON.parse(r.body) }, 'allow-cloud true then false');
    const s = await rawPost(gw.port, '/v1/chat/completions', chat(), [['Authorization', `Bearer ${KEY}`], ['X-Spillway-Sensitive', 'false'], ['x-spillway-sensitive', 'true']]);
    keptLocal({ status: s.status, json: JSON.parse(s.body) }, 'sensitive false then true');
    assert.equal((await received(cloud)).length, n, 'none reached the cloud');
  });

  test('the API takes only Content-Type: application/json (415 otherwise, in the API\'s shape)', async () => {
    const n = (await received(cloud)).length;
    const paths = [...SURFACES, { name: 'count_tokens', path: '/v1/messages/count_tokens', body: messages }];
    for (const s of paths) {
      for (const ct of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', null]) {
        const headers = ct === null ? {} : { 'content-type': ct };
        const r = await fetch(`${gw.url}${s.path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, ...headers }, body: Buffer.from(s.body()) });
        assert.equal(r.status, 415, `${s.name} ${ct}`);
        const j = await r.json();
        if (s.path.startsWith('/v1/messages')) {
          assert.equal(j.type, 'error');
          assert.equal(j.error.type, 'invalid_request_error');
        } else {
          assert.equal(j.error.code, 'unsupported_media_type');
        }
      }
      for (const ct of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
        const r = await post(gw, s.path, s.body({ model: 'chat' }), { 'content-type': ct });
        assert.equal(r.status, 200, `${s.name} ${ct}: ${JSON.stringify(r.json)}`);
      }
    }
    assert.equal((await received(cloud)).length, n, 'no refused request reached the cloud');
  });
});

describe('HTTP framing refused at once', () => {
  let edge, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model']);
    // A long client timeout: an answer that waited for it would come far
    // later than the bound each test waits.
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: edge.url, extra: 'limits:\n  client_timeout_ms: 120000\n  max_body_bytes: 4096\n  max_connections: 16' }));
  });
  after(async () => {
    await gw?.stop(); await edge?.stop();
  });

  // Resolves with the answer, or fails once `ms` passed (a fraction of the
  // client timeout: an answer only the timeout would give never comes).
  const within = (p, ms, what) => Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`no answer to ${what} within ${ms} ms`)), ms))]);

  test('an HTTP/0.9 request line is a 400 as soon as the line is in', async () => {
    for (const line of ['GET /\r\n', 'GET /healthz\n', 'hello\r\n']) {
      const r = await within(rawAsk(gw.port, line), 10000, JSON.stringify(line));
      assert.equal(r.status, 400, JSON.stringify(line));
      assert.equal(JSON.parse(r.body).error.code, 'invalid_http');
    }
  });

  test('a chunk announced beyond max_body_bytes is a 413 as soon as its size line is in', async () => {
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    for (const chunks of ['100000\r\n{"model"', '10\r\n{"model":"chat",\r\n1000\r\n']) {
      const r = await within(rawAsk(gw.port, head + chunks), 10000, chunks);
      assert.equal(r.status, 413, JSON.stringify(chunks));
      assert.equal(JSON.parse(r.body).error.code, 'request_too_large');
    }
  });

  test('idle connections up to the limit do not lock a client out: the longest idle is closed for it', async () => {
    const idle = [];
    try {
      // max_connections 16: open 24 connections that send nothing
      for (let i = 0; i < 24; i++) idle.push(await rawConnect(gw.port));
      const r = await within(fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } }), 10000, 'a request past idle connections');
      assert.equal(r.status, 200);
      await r.text();
      // the oldest idle ones were closed, the newest still stand
      await waitFor(() => idle.filter((c) => c.isClosed).length >= 24 - 15, { timeout: 10000, what: 'idle connections closed' });
      assert.ok(idle[0].isClosed, 'the oldest idle connection was closed first');
      assert.ok(!idle[23].isClosed, 'the newest idle connection is still open');
      const h = await getJSON(`${gw.url}/healthz`);
      assert.ok(h.body.connections <= 16, `connections ${h.body.connections} within the limit`);
      const closed = idle.filter((c) => c.isClosed).length;
      const m = await (await fetch(`${gw.url}/metrics`)).text();
      const counted = Number((m.match(/^spillway_idle_connections_closed_total (\S+)$/m) || [])[1]);
      assert.ok(counted >= closed, `spillway_idle_connections_closed_total ${counted} counts the ${closed} closed`);
    } finally {
      idle.forEach((c) => c.destroy());
    }
  });
});

describe('listen_hosts', () => {
  test('no keys: only the loopback names and the listen host are answered (421 otherwise); /healthz always', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: edge.url, keys: false }));
    try {
      const ask = (host, path = '/v1/models') => rawAsk(gw.port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      for (const host of ['evil.example', `evil.example:${gw.port}`, '127.0.0.2', 'localhost.evil.example', '0.0.0.0']) {
        const r = await ask(host);
        assert.equal(r.status, 421, host);
        assert.equal(JSON.parse(r.body).error.code, 'host_not_allowed');
      }
      const body = chat({ model: 'chat' });
      const post = await rawAsk(gw.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: rebind.example:${gw.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      assert.equal(post.status, 421);
      for (const host of ['localhost', `localhost:${gw.port}`, `127.0.0.1:${gw.port}`, `[::1]:${gw.port}`, 'LOCALHOST']) {
        assert.equal((await ask(host)).status, 200, host);
      }
      assert.equal((await ask('evil.example', '/healthz')).status, 200, '/healthz answers any Host');
      const two = await rawAsk(gw.port, 'GET /v1/models HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n');
      assert.equal(two.status, 400, 'two Host headers');
    } finally {
      await gw.stop(); await edge.stop();
    }
  });

  test('listen_hosts set: the listed names (ports when given) are answered, others 421; "*" answers any', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: edge.url, extra: 'listen_hosts: [gateway.internal, "api.example:8443"]' }));
    const any = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: edge.url, keys: false, extra: 'listen_hosts: ["*"]' }));
    try {
      const ask = (g, host) => rawAsk(g.port, `GET /v1/models HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`);
      assert.equal((await ask(gw, 'gateway.internal')).status, 200);
      assert.equal((await ask(gw, 'Gateway.Internal:9000')).status, 200);
      assert.equal((await ask(gw, 'api.example:8443')).status, 200);
      assert.equal((await ask(gw, 'api.example:8444')).status, 421);
      assert.equal((await ask(gw, 'api.example')).status, 421);
      assert.equal((await ask(gw, 'localhost')).status, 421, 'a set list replaces the defaults');
      assert.equal((await ask(any, 'whatever.example')).status, 200);
    } finally {
      await any.stop(); await gw.stop(); await edge.stop();
    }
  });
});
