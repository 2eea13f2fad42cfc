// Replicas: N gateways sharing one Redis act as one (docs/scaling.md). Three
// real spillway processes share a real redis-server (started here) in front
// of real llmsim backends; clients are the official openai SDK. Every wait is
// a bounded wait on a condition.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, startProcess, waitFor, getJSON, tempDir, removeTempDir, BUILD } from './lib/harness.mjs';
import { startRedis } from './lib/redis.mjs';

const ADMIN = 'sk-admin-test';
const admin = { authorization: `Bearer ${ADMIN}` };
const PRICE = 400; // USD per million tokens, in and out: one request costs about 0.01 USD and is
// reserved at about 0.04 (a token per body byte, plus max_tokens)
const CAP = 0.06; // two or three requests: replicas racing for the last of it must not all win
const MAX_TOKENS = 16;

let redis, local, one, cloud, free, flaky, metered, yaml;
const gws = [];

// limits.client_timeout_ms: the clients below share Node's keep-alive pool
// across tests, with maxRetries 0. A gateway closes a connection idle for
// client_timeout_ms (15 s by default, advertised in Keep-Alive); a loaded
// client that read the last answer on it seconds late still counts it as
// fresh, and its next request written while the close is in flight fails
// with "Connection error" (no retry here). The idle limit is set above any
// test's length so that idle connections stay open.
function config(redisUrl, prefix) {
  return `
listen: "127.0.0.1:0"
limits:
  client_timeout_ms: 300000
admin:
  key: "${ADMIN}"
state:
  redis: "${redisUrl}"
  key_prefix: "${prefix}"
  timeout_ms: 500
  replicas: 3
backends:
  - { name: "local", tier: local, url: "${local.url}", model: "m", slots: 2, queue_max: 1000 }
  - { name: "cloud", tier: cloud, url: "${cloud.url}", model: "m",
      price: { input_usd_per_mtok: ${PRICE}, output_usd_per_mtok: ${PRICE} } }
  - { name: "free", tier: cloud, url: "${free.url}", model: "m" }
  - { name: "flaky", tier: local, url: "${flaky.url}", model: "m", slots: 8 }
  - { name: "one", tier: local, url: "${one.url}", model: "m", slots: 1, prefill_ms_per_token: 10 }
  - { name: "metered", tier: cloud, url: "${metered.url}", model: "m", rpm: 20 }
models:
  - { name: "paid", backends: [cloud] }
  - { name: "spill", backends: [local, free] }
  - { name: "flaky", backends: [flaky, free] }
  - { name: "metered", backends: [metered] }
  - { name: "one", backends: [one, free] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 400
  breaker: { failures: 3, cooldown_ms: 600000 }
  spend: { cap_usd: ${CAP}, on_cap: shed }
`;
}

const client = (gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });

// One chat request; { status, backend } whatever happened (never throws).
async function chat(gw, model, content = 'hello there') {
  try {
    const { response } = await client(gw).chat.completions
      .create({ model, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content }] }).withResponse();
    return { status: response.status, backend: response.headers.get('x-spillway-backend') };
  } catch (e) {
    return { status: e.status ?? 0, backend: null, error: e.status ? null : String(e) };
  }
}

const state = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: admin })).body;
const simStats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;

async function metrics(gw) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

describe('replicas sharing one Redis', () => {
  before(async () => {
    redis = await startRedis();
    local = await startLlmsim(['--slots', '8', '--decode-tps', '40']);
    one = await startLlmsim(['--slots', '1', '--decode-tps', '0', '--prefill-ms-per-token', '10']);
    cloud = await startLlmsim(["--decode-tps", "0", "--latency-ms", "200", "--keep-received", "0"]);
    free = await startLlmsim(['--decode-tps', '0', '--keep-received', '0']);
    flaky = await startLlmsim(['--error-rate', '1', '--error-status', '503']);
    // The provider's limit, a little above the configured rpm (the bucket refills meanwhile).
    metered = await startLlmsim(['--decode-tps', '0', '--rpm', '25']);
    yaml = config(redis.url, `it${process.pid}:`);
    for (let i = 0; i < 3; i++) gws.push(await startSpillway(yaml));
    await waitFor(async () => (await Promise.all(gws.map(state))).every((s) => s.state.degraded === null),
      { timeout: 10000, what: 'every replica connected to Redis' });
  });
  after(async () => {
    for (const g of gws) {
      if (g.proc.exitCode !== null || g.proc.signalCode !== null) console.log(`a replica died:\n${g.output()}`);
    }
    await Promise.all(gws.map((g) => g.stop()));
    await Promise.all([local, one, cloud, free, flaky, metered].filter(Boolean).map((s) => s.stop()));
    await redis?.stop();
  });

  test('a local backend with 2 slots never runs more than 2 across the replicas; overflow spills', async () => {
    const res = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(gws[i % 3], 'spill')));
    assert.deepEqual(res.filter((r) => r.status !== 200), [], 'every request answered');
    const st = await simStats(local);
    assert.ok(st.concurrent_max <= 2, `local llmsim held ${st.concurrent_max} requests at once`);
    assert.ok(res.some((r) => r.backend === 'local'), 'local served some');
    assert.ok(res.some((r) => r.backend === 'free'), 'the overflow spilled to the cloud');
  });

  test("a replica's own answer frees the slot for its next request at once: back-to-back requests on a 1-slot box stay local", async () => {
    // Each prompt holds the box's one slot for about 0.4 s (40 tokens at 10 ms),
    // over two 200 ms syncs, so every sync during it counts its lease; once
    // answered, the slot is free for this replica's next request although
    // Redis was last read with the lease in it. (Over the 400 ms budget on
    // its own prefill, an idle box keeps it with reason long_prompt; a box
    // seen busy would send it to the cloud.)
    const prompt = 'x '.repeat(80);
    for (let i = 0; i < 4; i++) {
      const r = await chat(gws[0], 'one', prompt);
      assert.equal(r.status, 200);
      assert.equal(r.backend, 'one', `request ${i} was served by ${r.backend}`);
    }
    assert.equal((await simStats(one)).chat_requests, 4);
  });

  test('600 concurrent requests across replicas: settled spend stays within the cap plus one reservation', async () => {
    const res = await Promise.all(Array.from({ length: 600 }, (_, i) => chat(gws[i % 3], 'paid')));
    assert.deepEqual(res.filter((r) => r.status !== 200 && r.status !== 429), [],
      'every request answered: served, or shed by the cap');
    const served = res.filter((r) => r.status === 200).length;
    assert.ok(served > 0 && served < 600, `the cap both served and shed (${served} served)`);
    const settled = (await Promise.all(gws.map(metrics)))
      .reduce((s, m) => s + (m['spillway_cloud_cost_usd_total{backend="cloud"}'] || 0), 0);
    const st = await simStats(cloud);
    // What the cloud billed, at the configured price.
    const billed = (st.prompt_tokens + st.tokens_generated) * PRICE / 1e6;
    assert.equal(st.chat_requests, served, 'the cloud saw exactly the requests that were served');
    assert.ok(Math.abs(billed - settled) < 1e-6, `settled ${settled} = billed ${billed}`);
    // One request's reservation: its prompt estimate + max_tokens, priced.
    const oneReservation = (st.prompt_tokens / served + MAX_TOKENS) * PRICE / 1e6;
    assert.ok(settled <= CAP + oneReservation, `settled ${settled} <= cap ${CAP} + ${oneReservation}`);
    const s = await state(gws[1]);
    assert.ok(s.spend_usd >= settled - oneReservation, `replica B sees the shared spend (${s.spend_usd})`);
  });

  test('an emergency declared on one replica is in force on the others', async () => {
    const r = await getJSON(`${gws[0].url}/admin/emergency`, {
      method: 'POST', headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ declared: true, reason: 'replica test' }),
    });
    assert.equal(r.status, 200);
    // pub/sub carries it (a replica that lost the subscription reads the
    // flags again when it reconnects); the bound leaves room for the admin
    // round trips of a loaded sanitizer build
    const t0 = Date.now();
    await waitFor(async () => (await Promise.all(gws.slice(1).map(state))).every((s) => s.emergency === true),
      { timeout: 5000, what: 'the emergency on replicas B and C' });
    console.log(`emergency in force on replicas B and C after ${Date.now() - t0} ms`);
    const s = await state(gws[2]);
    assert.equal(s.emergency_reason, 'replica test');
    // Stored: a replica that starts now reads it.
    await gws[2].stop();
    gws[2] = await startSpillway(yaml);
    await waitFor(async () => (await state(gws[2])).emergency === true,
      { timeout: 5000, what: 'the emergency on a restarted replica' });
  });

  test('a breaker opened by one replica keeps the others off that backend', async () => {
    await waitFor(async () => {
      await chat(gws[0], 'flaky');
      return (await state(gws[0])).backends.find((b) => b.name === 'flaky').breaker === 'open';
    }, { timeout: 10000, every: 1, what: "replica A's breaker on flaky" });
    await waitFor(async () => (await Promise.all(gws.slice(1).map(state)))
      .every((s) => s.backends.find((b) => b.name === 'flaky').breaker === 'open'),
    // pub/sub carries it at once, the 200 ms sync catches a lost message; the
    // bound leaves room for three admin round trips on a loaded sanitizer build
    { timeout: 3000, what: 'the breaker open on B and C' });
    const before = (await simStats(flaky)).chat_requests;
    const res = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(gws[1 + (i % 2)], 'flaky')));
    assert.ok(res.every((r) => r.status === 200 && r.backend === 'free'), JSON.stringify(res));
    assert.equal((await simStats(flaky)).chat_requests, before, 'B and C sent nothing to flaky');
    // An operator's reset on one replica closes it on all.
    const r = await getJSON(`${gws[1].url}/admin/breakers/flaky/reset`, { method: 'POST', headers: admin });
    assert.equal(r.status, 200);
    await waitFor(async () => (await Promise.all(gws.map(state)))
      .every((s) => s.backends.find((b) => b.name === 'flaky').breaker === 'closed'),
    { timeout: 3000, what: 'the breaker closed on every replica' });
  });

  test("a provider's rpm is counted over all replicas: the provider never answers 429", async () => {
    const res = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(gws[i % 3], 'metered')));
    assert.deepEqual(res.filter((r) => r.status === 0), [], 'every request answered');
    const st = await simStats(metered);
    assert.ok(st.chat_requests >= 20, `the limit was used (${st.chat_requests})`);
    assert.ok(st.chat_requests <= 22, `at most the rpm (and its refill) reached the provider: ${st.chat_requests}`);
    assert.equal(st.status['429'] ?? 0, 0, 'the provider never refused one');
    assert.equal(res.filter((r) => r.status === 200).length, st.chat_requests);
  });

  test('Redis killed mid-load: every request answered, the cap fails closed, degradation shown; back when Redis returns', async () => {
    const cloudBefore = (await simStats(cloud)).chat_requests;
    const load = Promise.all(Array.from({ length: 60 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 10)); // spread over the kill
      return chat(gws[i % 3], i % 2 ? 'spill' : 'paid');
    }));
    await redis.kill();
    await waitFor(async () => (await Promise.all(gws.map(state))).every((s) => s.state.degraded === 'redis'),
      { timeout: 5000, what: 'every replica degraded: redis' });
    const m = await metrics(gws[0]);
    assert.equal(m['spillway_state_degraded{reason="redis"}'], 1);
    // A replica that starts while Redis is down serves too.
    gws.push(await startSpillway(yaml));
    assert.equal((await chat(gws[3], 'spill')).status, 200);
    assert.equal((await state(gws[3])).state.degraded, 'redis');
    const res = await load;
    assert.deepEqual(res.filter((r) => r.status !== 200 && r.status !== 429), [], 'no request lost');
    assert.ok(res.filter((_, i) => i % 2).every((r) => r.status === 200), 'local traffic kept flowing');
    // The cap was reached before the kill, and without Redis it fails closed.
    assert.equal((await simStats(cloud)).chat_requests, cloudBefore, 'no cloud spend without the shared counter');
    const paid = await chat(gws[1], 'paid');
    assert.equal(paid.status, 429, 'paid traffic shed while degraded');

    await redis.restart(); // empty: a crash without persistence
    await waitFor(async () => (await Promise.all(gws.map(state))).every((s) => s.state.degraded === null),
      { timeout: 10000, what: 'every replica back on Redis' });
    assert.equal((await metrics(gws[2]))['spillway_state_degraded{reason="redis"}'], 0);
    // The new (empty) shared window lets paid traffic through again.
    await waitFor(async () => (await chat(gws[2], 'paid')).status === 200,
      { timeout: 5000, what: 'paid traffic on the fresh shared counter' });
  });

  test('Redis slower than timeout_ms: requests still answered, degraded while slow, shared again after', async () => {
    const sleeping = redis.command('DEBUG', 'SLEEP', '2'); // blocks the server for 2 s
    await waitFor(async () => (await Promise.all(gws.map(state))).every((s) => s.state.degraded === 'redis'),
      { timeout: 5000, what: 'every replica degraded while Redis is slow' });
    const res = await Promise.all(gws.map((g) => chat(g, 'spill')));
    assert.deepEqual(res.map((r) => r.status), gws.map(() => 200));
    await sleeping;
    await waitFor(async () => (await Promise.all(gws.map(state))).every((s) => s.state.degraded === null),
      { timeout: 10000, what: 'every replica shared again' });
  });
});

// Redis that answers every command with an error while its connection stays
// up: a long script another client runs (busy-reply-threshold passed: BUSY).
// The gateway learns it is degraded only from the answers; a reservation
// refused that way fails closed as the cap does, and the request's next
// decision applies the cap's policy (shed: 429) instead of trying the same
// cloud again and reporting every backend failed.
describe('Redis answering errors', () => {
  test('a reservation answered with an error fails closed: 429 budget_exhausted, nothing sent to the cloud, served again after', async () => {
    const r = await startRedis({ args: ['--busy-reply-threshold', '50'] });
    const sim = await startLlmsim(['--decode-tps', '0', '--keep-received', '0']);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin:
  key: "${ADMIN}"
state:
  redis: "${r.url}"
  key_prefix: "busy${process.pid}:"
  timeout_ms: 5000
backends:
  - { name: "cloud", tier: cloud, url: "${sim.url}", model: "m",
      price: { input_usd_per_mtok: ${PRICE}, output_usd_per_mtok: ${PRICE} } }
models:
  - { name: "paid", backends: [cloud] }
routing:
  spend: { cap_usd: 100, on_cap: shed }
`);
    const ask = () => getJSON(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'paid', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hello there' }] }),
    });
    let busy;
    try {
      await waitFor(async () => (await state(gw)).state.degraded === null,
        { timeout: 10000, what: 'the gateway connected to Redis' });
      assert.equal((await ask()).status, 200, 'served under the cap');
      busy = r.command('EVAL', 'while true do end', '0'); // answered when killed
      await waitFor(async () => (await r.command('PING')).startsWith('-BUSY'),
        { timeout: 5000, what: 'Redis answering BUSY' });
      const before = (await simStats(sim)).chat_requests;
      const res = await ask();
      assert.equal(res.status, 429, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'budget_exhausted');
      assert.equal((await simStats(sim)).chat_requests, before, 'nothing reached the cloud');
      await r.command('SCRIPT', 'KILL');
      await busy;
      await waitFor(async () => (await ask()).status === 200,
        { timeout: 5000, what: 'served again once Redis answers' });
    } finally {
      await gw.stop();
      await sim.stop();
      await r.stop();
    }
  });
});

// A Redis host name is looked up on the event loop: while the name server
// does not answer, the gateway starts and serves (degraded: redis), and once
// the name resolves it shares state again. The gateway runs in its own mount
// namespace whose /etc/resolv.conf names a name server started here (UDP
// port 53 on a loopback address of its own), so the answer is the test's to give.
describe('Redis by host name', () => {
  test('a name server that does not answer never stalls the gateway; once the name resolves, the replica shares state', async (t) => {
    const NS = '127.83.0.53';
    const dns = createSocket('udp4');
    try {
      await new Promise((res, rej) => { dns.once('error', rej); dns.bind(53, NS, res); });
    } catch (e) {
      t.skip(`cannot serve DNS on ${NS}:53 here: ${e.code}`);
      return;
    }
    const probe = spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind /dev/null /etc/resolv.conf']);
    if (probe.status !== 0) {
      dns.close();
      t.skip(`no bind mount in a mount namespace here: ${probe.stderr}`);
      return;
    }
    const dir = tempDir('spillway-dns-');
    const r = await startRedis();
    const sim = await startLlmsim(['--decode-tps', '0']);
    let answer = false;
    const asked = [];
    dns.on('message', (msg, rinfo) => {
      // a query for A (type 1) or AAAA: answer A 127.0.0.1 once allowed
      let i = 12;
      while (msg[i]) i += msg[i] + 1;
      const qtype = msg.readUInt16BE(i + 1);
      const name = [];
      for (let j = 12; msg[j]; j += msg[j] + 1) name.push(msg.subarray(j + 1, j + 1 + msg[j]).toString());
      asked.push(`${name.join('.').toLowerCase()}/${qtype}`); // evdns mixes the case (0x20)
      if (!answer) return; // silence: the resolver waits
      const q = msg.subarray(12, i + 5);
      const head = Buffer.from([msg[0], msg[1], 0x81, 0x80, 0, 1, 0, qtype === 1 ? 1 : 0, 0, 0, 0, 0]);
      const rr = qtype === 1 ? Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 127, 0, 0, 1]) : Buffer.alloc(0);
      dns.send(Buffer.concat([head, q, rr]), rinfo.port, rinfo.address);
    });
    writeFileSync(join(dir, 'resolv.conf'), `nameserver ${NS}\noptions timeout:30 attempts:1\n`);
    writeFileSync(join(dir, 'spillway.yaml'), `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
state: { redis: "redis://redis.spillway.test:${r.port}/0", key_prefix: "dns${process.pid}:", timeout_ms: 500 }
backends:
  - { name: "local", tier: local, url: "${sim.url}", model: "m", slots: 4 }
models:
  - { name: "chat", backends: [local] }
`);
    let gw;
    try {
      gw = await startProcess('unshare', ['-m', 'sh', '-c',
        `mount --bind "${join(dir, 'resolv.conf')}" /etc/resolv.conf && exec "${join(BUILD, 'spillway')}" -c "${join(dir, 'spillway.yaml')}"`],
      { timeout: 20000 });
      await waitFor(() => asked.some((a) => a.startsWith('redis.spillway.test/')), { timeout: 10000, what: 'the name asked for' });
      // the name server is silent: the gateway answers anyway, degraded
      const ok = await client(gw).chat.completions.create({ model: 'chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] });
      assert.ok(ok.choices[0].message.content.length > 0);
      await waitFor(async () => (await state(gw)).state.degraded === 'redis', { timeout: 10000, what: 'degraded: redis' });
      // the name resolves: the replica connects and shares state
      answer = true;
      await waitFor(async () => (await state(gw)).state.degraded === null, { timeout: 15000, what: 'connected to Redis by name' });
    } finally {
      await gw?.stop();
      await sim.stop();
      await r.stop();
      dns.close();
      removeTempDir(dir);
    }
  });
});
