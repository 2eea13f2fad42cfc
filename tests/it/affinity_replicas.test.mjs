// Prefix affinity across replicas sharing one Redis: a turn answered
// through replica A by the second local box is announced on the shared
// event channel, so replica B sends the conversation's next turn to that
// box (reason affinity) although its least-wait choice is the first box;
// with Redis gone, a replica keeps its own table and still routes by it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { startRedis } from './lib/redis.mjs';

const ADMIN = 'sk-admin-affinity-replicas';
const auth = { authorization: `Bearer ${ADMIN}` };

const config = (redis, a, b) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
state: { redis: "${redis}", key_prefix: "aff${process.pid}:", timeout_ms: 500 }
backends:
  - { name: edge, tier: local, url: "${a}", model: m, slots: 1, prefill_tps: 1000000 }
  - { name: edge2, tier: local, url: "${b}", model: m, slots: 1 }
models:
  - { name: chat, backends: [edge, edge2] }
  - { name: second, backends: [edge2] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 20000
pii:
  policy: off
`;

const system = 'you are a careful coding agent; read before you write. '.repeat(100);

async function ask(gw, model, messages) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 4, messages }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  return { backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'),
    content: body.choices[0].message.content };
}

const entries = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.state.affinity_entries;

test('replicas share the affinity table through Redis and keep their own when it is gone', async () => {
  const redis = await startRedis();
  const args = ['--model', 'm', '--prefix-cache', '4', '--prefill-ms-per-token', '0.05', '--decode-tps', '0'];
  const a = await startLlmsim(args);
  const b = await startLlmsim(args);
  const yaml = config(redis.url, a.url, b.url);
  const gwA = await startSpillway(yaml);
  const gwB = await startSpillway(yaml);
  try {
    await waitFor(async () => (await getJSON(`${gwB.url}/admin/state`, { headers: auth })).body.state.degraded === null,
      { timeout: 10000, what: 'replica B connected to Redis' });
    const msgs = [{ role: 'system', content: system }, { role: 'user', content: 'fix the build' }];
    const t1 = await ask(gwA, 'second', msgs);
    assert.equal(t1.backend, 'edge2');
    await waitFor(async () => (await entries(gwB)) >= 2, { timeout: 10000, what: 'replica B learns the prefix' });
    // B counts A's requests from the shared state, up to a sync period late:
    // the first turn must be over there too, or the box looks busy for seconds.
    await waitFor(async () => (await getJSON(`${gwB.url}/admin/state`, { headers: auth })).body.backends
      .find((x) => x.name === 'edge2').in_flight === 0, { timeout: 10000, what: 'replica B sees edge2 idle' });
    msgs.push({ role: 'assistant', content: t1.content }, { role: 'user', content: 'step 2' });
    assert.deepEqual(await ask(gwB, 'chat', msgs).then((t) => [t.backend, t.reason]), ['edge2', 'affinity']);

    // Redis gone: replica A still holds what it served and routes by it.
    await redis.kill();
    await waitFor(async () => (await getJSON(`${gwA.url}/admin/state`, { headers: auth })).body.state.degraded === 'redis',
      { timeout: 10000, what: 'replica A degraded' });
    const other = [{ role: 'system', content: system + ' other' }, { role: 'user', content: 'hi' }];
    const o1 = await ask(gwA, 'second', other);
    assert.equal(o1.backend, 'edge2');
    other.push({ role: 'assistant', content: o1.content }, { role: 'user', content: 'and then' });
    assert.deepEqual(await ask(gwA, 'chat', other).then((t) => [t.backend, t.reason]), ['edge2', 'affinity']);
  } finally {
    await Promise.all([gwA.stop(), gwB.stop()]);
    await Promise.all([a.stop(), b.stop()]);
    await redis.kill();
  }
});
