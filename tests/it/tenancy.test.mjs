// Tenancy: per-key and per-team budgets, rate limits and model access
// (docs/configuration.md "Keys and teams", docs/scaling.md). Three real
// spillway replicas share a real redis-server (started here) in front of real
// llmsim backends; one more gateway runs without Redis (the memory ledgers).
// Every wait is a bounded wait on a condition.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { startRedis } from './lib/redis.mjs';
import { holdLocal } from './lib/hold.mjs';

const ADMIN = 'sk-admin-test';
const admin = { authorization: `Bearer ${ADMIN}` };
const PRICE = 100; // USD per million tokens, in and out
const N_RANDOM_KEYS = 8;

// A seeded generator: the same keys, budgets and requests on every run.
function rng(seed) {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}
const rand = rng(7);
const budgets = Array.from({ length: N_RANDOM_KEYS }, () => Math.round((0.05 + rand() * 0.07) * 1e4) / 1e4);
// keys r0..r3 share it: less than their budgets together, so the team's binds too
const TEAM_BUDGET = Math.round(0.75 * budgets.slice(0, 4).reduce((a, b) => a + b) * 1e4) / 1e4;

let redis, local, slow, cloud, gws = [], mem;

function keysYaml() {
  const rk = budgets.map((b, i) => `  - { name: r${i}, key: sk-r${i}, id: r${i}, budget: { usd: ${b} }${i < 4 ? ', team: red' : ''} }`);
  return `teams:
  - { name: red, budget: { usd: ${TEAM_BUDGET}, window: month } }
keys:
${rk.join('\n')}
  - { name: free, key: sk-free }
  - { name: keep, key: sk-keep, id: keep, budget: { usd: 0.000001 } }
  - { name: rej, key: sk-rej, id: rej, budget: { usd: 0.000001 }, on_budget: reject }
  - { name: roll, key: sk-roll, id: roll, budget: { usd: 0.025, rolling: 2s } }
  - { name: burst, key: sk-burst, id: burst, rpm: 5 }
  - { name: toks, key: sk-toks, id: toks, tpm: 300 }
  - { name: only, key: sk-only, id: only, models: ["local*", "long*"] }
  - { name: edge, key: sk-edge, id: edge, max_tier: local }
  - { name: kr, key: sk-kr, id: kr, budget: { usd: 100 } }
`;
}

function config(redisUrl) {
  return `
listen: "127.0.0.1:0"
limits:
  client_timeout_ms: 300000
admin:
  key: "${ADMIN}"
${redisUrl ? `state:
  redis: "${redisUrl}"
  key_prefix: "tn-it:"
  timeout_ms: 300
  replicas: 3` : ''}
${keysYaml()}
backends:
  - { name: "local", tier: local, url: "${local.url}", model: "m", slots: 8, queue_max: 1000 }
  - { name: "slow", tier: local, url: "${slow.url}", model: "m", slots: 1, queue_max: 10, prefill_ms_per_token: 10 }
  - { name: "cloud", tier: cloud, url: "${cloud.url}", model: "m",
      price: { input_usd_per_mtok: ${PRICE}, output_usd_per_mtok: ${PRICE} } }
models:
  - { name: "paid", backends: [cloud] }
  - { name: "local-only", backends: [local] }
  - { name: "longp", backends: [slow, cloud] }
  - { name: "slow-only", backends: [slow] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
`;
}

const oai = (gw, key) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 30000 });

// One chat request: { status, backend, reason, headers, body } (throws only
// when no answer came within 30 s).
async function chat(gw, key, model, { max_tokens = 8, content = 'hello there', path = 'chat' } = {}) {
  const r = await fetch(`${gw.url}/v1/${path === 'chat' ? 'chat/completions' : 'messages'}`, {
    method: 'POST', signal: AbortSignal.timeout(30000),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`,
      ...(path === 'messages' ? { 'anthropic-version': '2023-06-01' } : {}) },
    body: JSON.stringify({ model, max_tokens, messages: [{ role: 'user', content }] }),
  });
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'),
    headers: r.headers, body };
}

async function metrics(gw) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out = {};
  for (const l of text.split('\n')) {
    const m = /^(spillway_(?:key|team)_[a-z_]+)\{(?:key_id|team)="([^"]+)"\} (\S+)$/.exec(l);
    if (m) out[`${m[1]}/${m[2]}`] = Number(m[3]);
    const u = /^spillway_key_ledger_unavailable_total (\S+)$/.exec(l);
    if (u) out.unavailable = Number(u[1]);
  }
  return out;
}

// Over every replica: what they settled and the largest reservation for a key or team.
async function settled(label, kind = 'key') {
  let spent = 0, maxResv = 0;
  for (const gw of gws) {
    const m = await metrics(gw);
    spent += m[`spillway_${kind}_cloud_cost_usd_total/${label}`] ?? 0;
    if (kind === 'key') {
      const k = (await getJSON(`${gw.url}/admin/keys/${label}`, { headers: admin })).body;
      maxResv = Math.max(maxResv, k.usage.max_reserved_usd);
    }
  }
  return { spent, maxResv };
}

before(async () => {
  redis = await startRedis();
  local = await startLlmsim(['--model', 'm', '--slots', '64', '--decode-tps', '0']);
  slow = await startLlmsim(['--model', 'm', '--slots', '1', '--decode-tps', '0', '--prefill-ms-per-token', '10']);
  cloud = await startLlmsim(['--model', 'm', '--slots', '64', '--decode-tps', '0']);
  for (let i = 0; i < 3; i++) gws.push(await startSpillway(config(redis.url)));
  mem = await startSpillway(config(null));
  await waitFor(async () => {
    for (const gw of gws) {
      const s = (await getJSON(`${gw.url}/admin/state`, { headers: admin })).body;
      if (s.state?.degraded ?? s.state_degraded) return false;
    }
    return true;
  }, { timeout: 10000, what: 'every replica on Redis' });
});

after(async () => {
  for (const p of [...gws, mem, cloud, slow, local, redis]) if (p) await p.stop();
});

// Holds the one slot of "slow" through gateway gw with a request the box
// accepts and does not answer until release() (lib/hold.mjs), and resolves
// once the gateway counts it in flight: a request for "longp" then
// overflows to the cloud unless something keeps it local, however late it
// comes.
const holdSlow = (gw) => holdLocal(gw, slow, { admin: ADMIN, model: 'slow-only', backend: 'slow',
  headers: { authorization: 'Bearer sk-free' } });

// Resolves once gateway gw holds a request in its queue for "slow", or once
// `pending` (that request) was answered without waiting there: the caller's
// assertions on the answer then say where it went.
async function queuedForSlow(gw, pending) {
  let answered = false;
  pending.then(() => { answered = true; }, () => { answered = true; });
  await waitFor(async () => answered ||
    (await getJSON(`${gw.url}/admin/state`, { headers: admin })).body.backends.find((b) => b.name === 'slow').queued === 1,
  { timeout: 10000, what: 'a request queued for slow' });
}

describe('model access and tiers, from the key', () => {
  test('a model outside the key\'s allow-list is 404 in the API\'s own shape', async () => {
    const r = await chat(gws[0], 'sk-only', 'paid');
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'model_not_found');
    assert.match(r.body.error.message, /does not have access/);
    const a = await chat(gws[1], 'sk-only', 'paid', { path: 'messages' });
    assert.equal(a.status, 404);
    assert.equal(a.body.type, 'error');
    assert.equal(a.body.error.type, 'not_found_error');
    const ok = await chat(gws[2], 'sk-only', 'local-only');
    assert.equal(ok.status, 200, '"local*" matches local-only');
  });

  test('max_tier: local keeps a request the cloud would take on the local tier', async () => {
    const hold = await holdSlow(gws[0]);
    try {
      const control = await chat(gws[0], 'sk-free', 'longp');
      assert.equal(control.backend, 'cloud', 'a key without limits overflows to the cloud');
      assert.equal(control.reason, 'overflow');
      // the edge key's request waits for the held slot instead
      const edge = chat(gws[0], 'sk-edge', 'longp');
      await queuedForSlow(gws[0], edge);
      await hold.release();
      const r = await edge;
      assert.equal(r.status, 200);
      assert.equal(r.backend, 'slow');
    } finally {
      await hold.release();
    }
  });
});

describe('budgets', () => {
  test('over budget with keep_local: served by the local tier, reason budget; reject: 429', async () => {
    const hold = await holdSlow(gws[1]);
    let r;
    try {
      const keep = chat(gws[1], 'sk-keep', 'longp');
      await queuedForSlow(gws[1], keep);
      await hold.release();
      r = await keep;
    } finally {
      await hold.release();
    }
    assert.equal(r.status, 200);
    assert.equal(r.backend, 'slow', 'kept on the local tier instead of overflowing');
    assert.equal(r.reason, 'budget');
    const paid = await chat(gws[1], 'sk-keep', 'paid');
    assert.equal(paid.status, 429, 'no local backend for this model: budget_exhausted');
    assert.equal(paid.body.error.code, 'budget_exhausted');
    // reject: the cloud the request would take is refused with 429, even where
    // a local backend could serve it (slow busy: it would overflow)
    const hold2 = await holdSlow(gws[2]);
    let rej;
    try {
      rej = await chat(gws[2], 'sk-rej', 'longp');
    } finally {
      await hold2.release();
    }
    assert.equal(rej.status, 429);
    assert.equal(rej.body.error.code, 'budget_exhausted');
    assert.match(rej.body.error.message, /on_budget: reject/);
    assert.ok(Number(rej.headers.get('retry-after')) >= 1);
    const logged = (await getJSON(`${gws[1].url}/admin/decisions?limit=20`, { headers: admin })).body;
    const line = JSON.stringify(logged);
    assert.ok(line.includes('"key_id":"keep"'), 'the decision log names the key_id');
    assert.ok(!line.includes('sk-keep'), 'never the key');
  });

  test('randomized concurrent requests from many keys over 3 replicas: settled <= budget + largest reservation', async () => {
    const r = rng(11);
    const jobs = Array.from({ length: 240 }, () => ({
      key: Math.floor(r() * N_RANDOM_KEYS), gw: Math.floor(r() * 3),
      max_tokens: 20 + Math.floor(r() * 40), content: 'word '.repeat(1 + Math.floor(r() * 6)),
    }));
    const counts = {};
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const j = jobs[next++];
        const res = await chat(gws[j.gw], `sk-r${j.key}`, 'paid', j);
        const c = (counts[j.key] ??= {});
        c[res.status] = (c[res.status] ?? 0) + 1;
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    const rows = [];
    for (let i = 0; i < N_RANDOM_KEYS; i++) {
      const s = await settled(`r${i}`);
      rows.push({ key: `r${i}`, budget: budgets[i], settled: +s.spent.toFixed(6), max_reservation: +s.maxResv.toFixed(6),
        overspend: +Math.max(0, s.spent - budgets[i]).toFixed(6), status: counts[i] });
    }
    const team = await settled('red', 'team');
    console.log('tenancy randomized: per key (USD)');
    console.table(rows);
    console.log(`team red: budget ${TEAM_BUDGET}, settled ${team.spent.toFixed(6)}`);
    const maxAll = Math.max(...rows.map((x) => x.max_reservation));
    for (const row of rows) {
      assert.ok(row.settled <= row.budget + row.max_reservation + 1e-9, `${row.key}: ${JSON.stringify(row)}`);
      assert.ok(row.status[429] > 0, `${row.key} reached its budget: ${JSON.stringify(row.status)}`);
      if (Number(row.key.slice(1)) >= 4) // r0..r3 may be held back by their team's budget
        assert.ok(row.settled > row.budget / 2, `${row.key} spent most of its budget: ${row.settled}`);
    }
    assert.ok(team.spent <= TEAM_BUDGET + maxAll + 1e-9, `team red settled ${team.spent}`);
    // the window's spend as replicas read it, for the dashboard and the team-budget alert
    const m0 = await metrics(gws[0]);
    assert.ok(m0['spillway_team_window_spend_usd/red'] > 0, 'spillway_team_window_spend_usd{team="red"}');
    assert.equal(m0['spillway_team_budget_usd/red'], TEAM_BUDGET);
    const page = await (await fetch(`${gws[0].url}/dashboard`)).text();
    assert.ok(page.includes('data-testid="tenancy"'), 'the dashboard has the spend-by-team-and-key card');
    // what the cloud itself billed equals what the replicas settled
    const st = (await getJSON(`${cloud.url}/admin/stats`)).body;
    const bill = ((st.prompt_tokens + st.tokens_generated) * PRICE) / 1e6;
    let all = 0;
    for (const gw of gws) {
      const m = await metrics(gw);
      for (const [k, v] of Object.entries(m)) if (k.startsWith('spillway_key_cloud_cost_usd_total/')) all += v;
    }
    assert.ok(all <= bill + 1e-9, `settled ${all} <= billed ${bill}`);
  });

  test('a rolling window gives the budget back once the spend has left it', async () => {
    // t0 before the first request: its cost settles after t0, so it leaves
    // the window no earlier than t0 + 2 s, however long the answer took
    const t0 = Date.now();
    const first = await chat(gws[0], 'sk-roll', 'paid', { max_tokens: 100 });
    assert.equal(first.status, 200);
    const second = await chat(gws[1], 'sk-roll', 'paid', { max_tokens: 100 });
    assert.equal(second.status, 429, 'the window holds one request');
    const back = await waitFor(async () => (await chat(gws[2], 'sk-roll', 'paid', { max_tokens: 100 })).status === 200,
      { timeout: 5000, every: 100, what: 'the rolling window to let the spend go' });
    assert.ok(back);
    const waited = Date.now() - t0;
    assert.ok(waited >= 2000, `given back after ${waited} ms, not before the window (2 s)`);
  });
});

describe('rate limits', () => {
  test('rpm: a burst over three replicas admits exactly the limit, the rest 429 with x-ratelimit-*', async () => {
    const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => chat(gws[i % 3], 'sk-burst', 'local-only')));
    const ok = rs.filter((r) => r.status === 200), limited = rs.filter((r) => r.status === 429);
    console.log(`rpm 5 burst of 12: ${ok.length} allowed, ${limited.length} x 429`);
    assert.ok(ok.length >= 5 && ok.length <= 6, `${ok.length} allowed`);
    assert.equal(ok.length + limited.length, 12);
    const l = limited[0];
    assert.equal(l.body.error.code, 'rate_limit_exceeded');
    assert.equal(l.body.error.type, 'rate_limit_error');
    assert.ok(Number(l.headers.get('retry-after')) >= 1);
    assert.equal(l.headers.get('x-ratelimit-limit-requests'), '5');
    assert.equal(l.headers.get('x-ratelimit-remaining-requests'), '0');
    assert.match(l.headers.get('x-ratelimit-reset-requests'), /^\d+(\.\d+)?(ms|s)$|^\d+m\d+s$/);
    assert.equal(ok[0].headers.get('x-ratelimit-limit-requests'), '5');
    // Anthropic's clients get Anthropic's shape
    const a = await chat(gws[0], 'sk-burst', 'local-only', { path: 'messages' });
    assert.equal(a.status, 429);
    assert.equal(a.body.type, 'error');
    assert.equal(a.body.error.type, 'rate_limit_error');
    assert.ok(a.headers.get('retry-after'));
  });

  test('tpm: prompt estimate + max_tokens count; a burst gets 429 past the limit', async () => {
    const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => chat(gws[i % 3], 'sk-toks', 'local-only', { max_tokens: 100 })));
    const ok = rs.filter((r) => r.status === 200).length, limited = rs.filter((r) => r.status === 429);
    console.log(`tpm 300 burst of 8 x ~105 tokens: ${ok} allowed, ${limited.length} x 429`);
    assert.ok(ok >= 2 && ok <= 3, `${ok} allowed`);
    assert.equal(limited[0].headers.get('x-ratelimit-limit-tokens'), '300');
    assert.match(limited[0].body.error.message, /tokens per minute/);
  });
});

describe('runtime keys', () => {
  const post = (gw, path, body, method = 'POST') => getJSON(`${gw.url}${path}`,
    { method, headers: { ...admin, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });

  // Every change reaches every replica through Redis: pub/sub at once, or
  // the next 200 ms sync of a replica that missed the message (nothing
  // else, no reload, no expiry, would). The bounds below only leave room
  // for the round trips of a loaded sanitizer build; the times are printed.
  test('created on one replica, usable on all; updated; revoked: refused on every replica', async () => {
    const c = await post(gws[0], '/admin/keys', { name: 'ci-bot', id: 'ci-bot', rpm: 1000, budget: { usd: 1, window: 'day' } });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const secret = c.body.key;
    assert.match(secret, /^sk-sw-[0-9a-f]{32}$/);
    assert.equal(c.body.id, 'ci-bot');
    // shown once: never again, on any replica, nor in Redis
    const listed = await getJSON(`${gws[1].url}/admin/keys`, { headers: admin });
    assert.ok(!JSON.stringify(listed.body).includes(secret));
    // answered once Redis has it
    const stored = await redis.command('HGET', 'tn-it:vkeys', 'ci-bot');
    assert.ok(!stored.startsWith('$-1'), 'in Redis when answered');
    assert.ok(stored.includes('"h":') && !stored.includes(secret), 'Redis holds the SHA-256, not the key');
    const t0 = Date.now();
    await waitFor(async () => {
      for (const gw of gws) if ((await chat(gw, secret, 'local-only')).status !== 200) return false;
      return true;
    }, { timeout: 10000, every: 20, what: 'the new key on every replica' });
    console.log(`runtime key usable on all 3 replicas after ${Date.now() - t0} ms`);
    const r = await chat(gws[2], secret, 'paid');
    assert.equal(r.status, 200);
    const logged = JSON.stringify((await getJSON(`${gws[2].url}/admin/decisions?limit=5`, { headers: admin })).body);
    assert.ok(logged.includes('"key_id":"ci-bot"') && !logged.includes(secret));
    // updated on replica 1: rpm 1 takes effect everywhere
    const u = await post(gws[1], '/admin/keys/ci-bot', { rpm: 1 });
    assert.equal(u.status, 200, JSON.stringify(u.body));
    await waitFor(async () => (await chat(gws[0], secret, 'local-only')).status === 429,
      { timeout: 10000, every: 20, what: 'the update on replica 0' });
    const d = await post(gws[2], '/admin/keys/ci-bot', null, 'DELETE');
    assert.equal(d.status, 200);
    const tr = Date.now();
    await waitFor(async () => {
      for (const gw of gws) if ((await chat(gw, secret, 'local-only')).status !== 401) return false;
      return true;
    }, { timeout: 10000, every: 10, what: 'the revoked key refused on every replica' });
    console.log(`revoked key refused on all 3 replicas after ${Date.now() - tr} ms`);
    assert.equal((await post(gws[0], '/admin/keys/ci-bot', null, 'DELETE')).status, 404);
    const bad = await post(gws[0], '/admin/keys', { name: 'x', team: 'nobody' });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /not a team/);
    assert.equal((await post(gws[0], '/admin/keys/r0', { rpm: 1 })).status, 409, 'a configured key changes in the file');
  });
});

describe('runtime keys when Redis does not take writes', () => {
  const post = (gw, path, body, method = 'POST') => getJSON(`${gw.url}${path}`,
    { method, headers: { ...admin, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const everywhere = (secret, status, what) => waitFor(async () => {
    for (const gw of gws) if ((await chat(gw, secret, 'local-only')).status !== status) return false;
    return true;
  }, { timeout: 10000, every: 20, what });

  // min-replicas-to-write with no replica: Redis answers reads, refuses writes.
  test('a change Redis refuses is answered 503: no key is created; a revocation holds on the replica asked and reaches the others once Redis takes writes again', async () => {
    const c = await post(gws[0], '/admin/keys', { name: 'rk-bot', id: 'rk-bot' });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const secret = c.body.key;
    await everywhere(secret, 200, 'the new key on every replica');
    assert.match(await redis.command('CONFIG', 'SET', 'min-replicas-to-write', '1'), /^\+OK/);
    try {
      const n = await post(gws[0], '/admin/keys', { name: 'lost-bot', id: 'lost-bot' });
      assert.equal(n.status, 503, JSON.stringify(n.body));
      assert.equal(n.body.error.code, 'key_store_unavailable');
      assert.ok(!JSON.stringify(n.body).includes('sk-sw-'), 'no secret shown for a key not created');
      const listed = JSON.stringify((await getJSON(`${gws[0].url}/admin/keys`, { headers: admin })).body);
      assert.ok(!listed.includes('lost-bot'), 'not listed on the replica asked');
      const d = await post(gws[1], '/admin/keys/rk-bot', null, 'DELETE');
      assert.equal(d.status, 503, JSON.stringify(d.body));
      assert.equal((await chat(gws[1], secret, 'local-only')).status, 401, 'refused on the replica asked');
      assert.equal((await chat(gws[2], secret, 'local-only')).status, 200, 'Redis does not have it: the others still take it');
    } finally {
      await redis.command('CONFIG', 'SET', 'min-replicas-to-write', '0');
    }
    const t0 = Date.now();
    await everywhere(secret, 401, 'the revocation written again and seen by every replica');
    console.log(`revocation reached every replica ${Date.now() - t0} ms after Redis took writes again`);
    assert.ok((await redis.command('HGET', 'tn-it:vkeys', 'lost-bot')).startsWith('$-1'), 'the refused key is not in Redis');
  });
});

describe('Redis down', () => {
  test('killed mid-load: key budgets fail closed for the cloud, local service continues, then back', async () => {
    const load = [];
    for (let i = 0; i < 30; i++) {
      load.push(chat(gws[i % 3], 'sk-kr', i % 2 ? 'local-only' : 'paid'));
      if (i === 10) await redis.kill();
    }
    const rs = await Promise.all(load);
    for (const [i, r] of rs.entries()) {
      if (i % 2) assert.equal(r.status, 200, `local request ${i}: ${r.status}`);
      else assert.ok(r.status === 200 || r.status === 429, `cloud request ${i}: ${r.status}`);
    }
    // while down: the cloud is refused to a budgeted key (budget_exhausted), local serves
    await waitFor(async () => (await chat(gws[0], 'sk-kr', 'paid')).status === 429, { timeout: 5000, what: 'fail closed' });
    assert.equal((await chat(gws[1], 'sk-kr', 'local-only')).status, 200);
    assert.equal((await chat(gws[1], 'sk-free', 'paid')).status, 200, 'a key without a budget still reaches the cloud');
    assert.ok((await metrics(gws[0])).unavailable > 0, 'counted in spillway_key_ledger_unavailable_total');
    await redis.restart();
    await waitFor(async () => (await chat(gws[2], 'sk-kr', 'paid')).status === 200,
      { timeout: 10000, every: 100, what: 'budgets on Redis again' });
  });
});

describe('one gateway, memory ledgers', () => {
  test('sequential requests stop at the budget; GET /admin/keys/{id} shows the window', async () => {
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await chat(mem, 'sk-r0', 'paid', { max_tokens: 100 })).status);
    assert.ok(statuses.includes(200) && statuses.includes(429), `${statuses}`);
    const k = (await getJSON(`${mem.url}/admin/keys/r0`, { headers: admin })).body;
    assert.equal(k.id, 'r0');
    assert.ok(!JSON.stringify(k).includes('sk-r0'), 'the secret is never shown');
    assert.ok(k.usage.window_spent_usd <= budgets[0] + 1e-12, `${k.usage.window_spent_usd} <= ${budgets[0]}`);
    assert.equal(k.usage.reserved_usd, 0);
    const list = (await getJSON(`${mem.url}/admin/keys`, { headers: admin })).body;
    assert.equal(list.keys.length, N_RANDOM_KEYS + 9);
    // memory runtime keys: created and used on this one gateway
    const c = await getJSON(`${mem.url}/admin/keys`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'tmp' }) });
    assert.equal(c.status, 201);
    assert.equal((await chat(mem, c.body.key, 'local-only')).status, 200);
    assert.match(c.body.id, /^k-[0-9a-f]{12}$/, 'an id derived from the secret');
    assert.equal(list.teams[0].name, 'red');
    assert.equal((await getJSON(`${mem.url}/admin/keys/nope`, { headers: admin })).status, 404);
  });
});
