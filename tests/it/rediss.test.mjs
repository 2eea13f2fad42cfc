// Native Redis over TLS (state.redis: rediss://, state.tls; docs/scaling.md):
// replicas reach a real TLS-only redis-server (started here, with its own
// test CA and an ACL user) directly, and share what they share over
// redis://. A certificate the replica does not trust, or one for another
// name, leaves it degraded with the spend cap failing closed; it never
// falls back to plain text. Clients are the official openai SDK.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON, tempDir, removeTempDir } from './lib/harness.mjs';
import { startRedis, freePort, makeTestCerts } from './lib/redis.mjs';

const ADMIN = 'sk-admin-test';
const admin = { authorization: `Bearer ${ADMIN}` };
const PRICE = 400; // USD per million tokens: one request costs about 0.01 USD, reserved at about 0.04
const CAP = 0.06;
const PASSWORD = 'app-pw-0f3c9a'; // the ACL user's, given to the replicas through ${REDIS_PASSWORD}
const env = { REDIS_PASSWORD: PASSWORD };

let dir, redis, local, cloud;
const gws = [];

// url: the host:port part; tls: the state.tls mapping (YAML flow); password:
// a literal, else ${REDIS_PASSWORD}.
function config({ host = `127.0.0.1:${redis.port}`, tls = `{ ca_file: "${join(dir, 'ca.crt')}" }`,
  password = '${REDIS_PASSWORD}' } = {}) {
  return `
listen: "127.0.0.1:0"
limits:
  client_timeout_ms: 300000
admin:
  key: "${ADMIN}"
state:
  redis: "rediss://app:${password}@${host}/0"
  tls: ${tls}
  key_prefix: "rediss${process.pid}:"
  timeout_ms: 500
backends:
  - { name: "local", tier: local, url: "${local.url}", model: "m", slots: 2 }
  - { name: "cloud", tier: cloud, url: "${cloud.url}", model: "m",
      price: { input_usd_per_mtok: ${PRICE}, output_usd_per_mtok: ${PRICE} } }
models:
  - { name: "chat", backends: [local] }
  - { name: "paid", backends: [cloud] }
routing:
  spend: { cap_usd: ${CAP}, on_cap: shed }
`;
}

const state = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: admin })).body;
const simStats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;

async function metric(gw, name) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : undefined;
}

// One paid chat request; its HTTP status (0: no answer).
async function paid(gw) {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  try {
    const { response } = await client.chat.completions
      .create({ model: 'paid', max_tokens: 16, messages: [{ role: 'user', content: 'hello there' }] }).withResponse();
    return response.status;
  } catch (e) {
    return e.status ?? 0;
  }
}

async function start(opts) {
  const gw = await startSpillway(config(opts), { env });
  gws.push(gw);
  return gw;
}

// A replica that cannot reach Redis over TLS: degraded (admin state and
// metric), the paid model shed (the spend cap fails closed) without the
// cloud seeing a request, and its log says why.
async function assertDegraded(gw, why) {
  await waitFor(() => why.test(gw.output()),
    { timeout: 15000, what: `the reason in the replica's log:\n${gw.output()}` });
  assert.doesNotMatch(gw.output(), /back: shared state again/);
  const s = await state(gw);
  assert.equal(s.state.degraded, 'redis');
  assert.equal(await metric(gw, 'spillway_state_degraded{reason="redis"}'), 1);
  const before = (await simStats(cloud)).chat_requests;
  assert.equal(await paid(gw), 429, 'paid traffic shed: the spend cap fails closed');
  assert.equal((await simStats(cloud)).chat_requests, before, 'no cloud spend without the shared counter');
  assert.doesNotMatch(gw.output(), new RegExp(PASSWORD), 'the password is never logged');
}

describe('Redis over TLS, native (rediss://)', () => {
  before(async () => {
    dir = tempDir('spillway-rediss-');
    makeTestCerts(dir);
    // TLS only; the default user needs a password nobody here has, the
    // replicas log in as the ACL user "app"
    redis = await startRedis({
      tls: { cert: join(dir, 'server.crt'), key: join(dir, 'server.key') },
      args: ['--requirepass', 'default-pw-unused', '--user', 'app', 'on', `>${PASSWORD}`, '~*', '&*', '+@all'],
    });
    local = await startLlmsim(['--decode-tps', '0']);
    cloud = await startLlmsim(['--decode-tps', '0']);
  });
  after(async () => {
    await Promise.all(gws.map((g) => g.stop()));
    await local?.stop();
    await cloud?.stop();
    await redis?.stop();
    if (dir) removeTempDir(dir);
  });

  test('replicas over rediss:// (test CA, ACL user and password from ${ENV}) share the emergency flag and the spend window', async () => {
    // one checks the certificate against server_name, the other against the URL's IP
    const a = await start({ tls: `{ ca_file: "${join(dir, 'ca.crt')}", server_name: localhost }` });
    const b = await start();
    await waitFor(async () => (await Promise.all([a, b].map(state))).every((s) => s.state.degraded === null),
      { timeout: 10000, what: `both replicas on Redis over TLS:\n${a.output()}\n${b.output()}` });
    assert.match(a.output(), /state: shared on Redis 127\.0\.0\.1:\d+ db 0 over TLS/);
    assert.equal(await metric(b, 'spillway_state_degraded{reason="redis"}'), 0);

    const r = await getJSON(`${a.url}/admin/emergency`, {
      method: 'POST', headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ declared: true, reason: 'rediss test' }),
    });
    assert.equal(r.status, 200);
    await waitFor(async () => (await state(b)).emergency === true,
      { timeout: 5000, what: 'the emergency on the other replica (pub/sub over TLS)' });
    assert.equal((await state(b)).emergency_reason, 'rediss test');
    const off = await getJSON(`${a.url}/admin/emergency`, {
      method: 'POST', headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ declared: false }),
    });
    assert.equal(off.status, 200);
    await waitFor(async () => (await state(b)).emergency === false,
      { timeout: 5000, what: 'the emergency cleared on the other replica' });

    // Spend on A until the shared cap sheds; B then sheds too, with its own
    // counter at zero: only the window in Redis says the cap is reached.
    const statuses = [];
    for (let i = 0; i < 20 && !statuses.includes(429); i++) statuses.push(await paid(a));
    assert.ok(statuses.includes(429), `the cap shed on A: ${statuses}`);
    assert.ok(statuses.filter((s) => s === 200).length >= 1, `A served before the cap: ${statuses}`);
    assert.deepEqual(statuses.filter((s) => s !== 200 && s !== 429), []);
    const before = (await simStats(cloud)).chat_requests;
    assert.equal(await paid(b), 429, 'B sheds: the spend window is shared');
    assert.equal((await simStats(cloud)).chat_requests, before, 'B sent nothing to the cloud');
    const settled = await metric(a, 'spillway_cloud_cost_usd_total{backend="cloud"}');
    assert.ok(settled > 0);
    const sb = await state(b);
    assert.ok(sb.spend_usd >= settled - 1e-9, `B sees A's spend (${sb.spend_usd} >= ${settled})`);
  });

  test('a server certificate from a CA the replica does not trust: degraded, the spend cap fails closed', async () => {
    const gw = await start({ tls: `{ ca_file: "${join(dir, 'other.crt')}" }` });
    await assertDegraded(gw, /lost the connection to Redis 127\.0\.0\.1:\d+: TLS: certificate not accepted/);
  });

  test('a server certificate for another name (state.tls.server_name): degraded, the spend cap fails closed', async () => {
    const gw = await start({ tls: `{ ca_file: "${join(dir, 'ca.crt')}", server_name: redis.wrong.example }` });
    await assertDegraded(gw, /lost the connection to Redis 127\.0\.0\.1:\d+: TLS: certificate not accepted: hostname mismatch/);
  });

  test('verify: false is never silent: it connects without checking the certificate and warns at start', async () => {
    const gw = await start({ tls: `{ ca_file: "${join(dir, 'other.crt')}", verify: false }` });
    await waitFor(async () => (await state(gw)).state.degraded === null,
      { timeout: 10000, what: `the replica on Redis without verification:\n${gw.output()}` });
    assert.match(gw.output(), /warn state: state\.tls\.verify is false: the certificate of Redis 127\.0\.0\.1:\d+ is NOT checked/);
  });

  test('a wrong password over TLS: refused by Redis, degraded, the password never logged', async () => {
    const gw = await start({ password: 'not-the-password' });
    await assertDegraded(gw, /Redis 127\.0\.0\.1:\d+ refused the connection: WRONGPASS/);
    assert.doesNotMatch(gw.output(), /not-the-password/);
  });

  test('never plain text: every connection to a rediss:// address opens with a TLS handshake, the password never on the wire', async () => {
    // A listener that records what the replica sends and never answers.
    const conns = [];
    const srv = createServer((sock) => {
      const c = { sock, bytes: Buffer.alloc(0) };
      conns.push(c);
      sock.on('data', (d) => { c.bytes = Buffer.concat([c.bytes, d]); });
      sock.on('error', () => {});
    });
    const port = await freePort();
    await new Promise((res) => srv.listen(port, '127.0.0.1', res));
    try {
      const gw = await start({ host: `127.0.0.1:${port}` });
      // two connections (commands, pub/sub) per attempt; a retry after the connect timeout
      await waitFor(() => conns.filter((c) => c.bytes.length > 0).length >= 4,
        { timeout: 15000, what: `the replica's connection attempts (${conns.length})` });
      for (const c of conns.filter((x) => x.bytes.length > 0)) {
        assert.equal(c.bytes[0], 0x16, 'a TLS handshake record');
        assert.equal(c.bytes[1], 0x03);
        assert.ok(!c.bytes.includes(PASSWORD), 'the password is not on the wire');
        assert.ok(!c.bytes.includes('PING') && !c.bytes.includes('AUTH'), 'no RESP in clear');
      }
      assert.equal((await state(gw)).state.degraded, 'redis');
    } finally {
      for (const c of conns) c.sock.destroy();
      await new Promise((res) => srv.close(res));
    }
  });

  test('Redis over TLS lost and back: degraded while away, shared again over TLS without a restart', async () => {
    const gw = await start();
    await waitFor(async () => (await state(gw)).state.degraded === null,
      { timeout: 10000, what: `the replica on Redis over TLS:\n${gw.output()}` });
    await redis.restart(); // killed (a crash, nothing kept) and started again on the same port
    await waitFor(() => /state: lost the connection to Redis 127\.0\.0\.1:\d+: /.test(gw.output()),
      { timeout: 10000, what: `the loss in the replica's log:\n${gw.output()}` });
    await waitFor(async () => (await state(gw)).state.degraded === null,
      { timeout: 15000, what: `shared again after the restart:\n${gw.output()}` });
    assert.match(gw.output(), /state: Redis 127\.0\.0\.1:\d+ back: shared state again/);
    // the scripts are loaded again: a paid request is admitted through them
    const r = await getJSON(`${gw.url}/admin/thresholds`, {
      method: 'PUT', headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ spend_cap_usd: 100 }),
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await waitFor(async () => (await state(gw)).spend_cap_usd === 100, { timeout: 5000, what: 'the raised cap' });
    const before = (await simStats(cloud)).chat_requests;
    assert.equal(await paid(gw), 200, 'a paid request admitted through Redis over TLS again');
    assert.equal((await simStats(cloud)).chat_requests, before + 1);
  });
});
