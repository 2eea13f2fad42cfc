// The prefill warm-up (backends[].prefill_warmup): where a local box reports
// no prefill figures and no prefill_tps is set, one timed request at start
// measures the rate the router assumes (source "warmup"). Two boxes slowed
// per prompt token (llmsim 2 and 0.25 ms/token) are measured at their own
// order of magnitude and in the right ratio; a box with the switch off keeps
// the default, one with prefill_tps keeps its prior and gets no probe; a box
// that comes back from cold is measured again. Asserts ratios, not times.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

const ADMIN = 'sk-admin-warmup';
const auth = { authorization: `Bearer ${ADMIN}` };

const config = (slow, fast, off, cfg) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: slow, tier: local, url: "${slow}", model: m, prefill_warmup: true }
  - { name: fast, tier: local, url: "${fast}", model: m, prefill_warmup: true }
  - { name: off, tier: local, url: "${off}", model: m }
  - { name: prior, tier: local, url: "${cfg}", model: m, prefill_warmup: true, prefill_tps: 3000 }
models:
  - { name: chat, backends: [slow, fast, off, prior] }
routing:
  health_interval_ms: 200
pii:
  policy: off
`;

const rates = async (gw) => {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^spillway_prefill_tokens_per_second\{backend="(\w+)",source="(\w+)"\} (\S+)$/gm))
    out[m[1]] = { source: m[2], tps: Number(m[3]) };
  return out;
};
const probes = async (sim) => (await getJSON(`${sim.url}/admin/received?n=50`)).body.requests
  .filter((q) => q.headers['x-request-id'] === 'sw-prefill-warmup');

test('prefill warm-up: measured per box at start and after a comeback, off by switch, never over a prior', async () => {
  const sim = (ms, extra = []) => startLlmsim(['--model', 'm', '--prefill-ms-per-token', String(ms), '--decode-tps', '0',
    '--keep-received', '50', ...extra]);
  const slow = await sim(2);
  const fast = await sim(0.25, ['--cold-start-ms', '200']);
  const off = await sim(1);
  const prior = await sim(1);
  const gw = await startSpillway(config(slow.url, fast.url, off.url, prior.url));
  try {
    await waitFor(async () => { const r = await rates(gw); return r.slow?.source === 'warmup' && r.fast?.source === 'warmup'; },
      { timeout: 20000, what: 'both boxes measured' });
    const r = await rates(gw);
    // llmsim's rates: 500 and 4000 prompt tokens/s
    assert.ok(r.slow.tps > 250 && r.slow.tps < 1000, `slow ${r.slow.tps}`);
    assert.ok(r.fast.tps > 2000 && r.fast.tps < 8000, `fast ${r.fast.tps}`);
    const ratio = r.fast.tps / r.slow.tps;
    assert.ok(ratio > 4 && ratio < 16, `ratio ${ratio}`);
    assert.deepEqual(r.off, { source: 'default', tps: 1000 });
    assert.deepEqual(r.prior, { source: 'config', tps: 3000 });
    const st = (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.backends;
    assert.equal(st.find((b) => b.name === 'slow').prefill_source, 'warmup');

    // one probe each, a fixed prompt of a few hundred tokens, one token out
    const [ps] = [await probes(slow)];
    assert.equal(ps.length, 1);
    assert.equal(ps[0].body.max_tokens, 1);
    assert.ok(ps[0].body.messages[0].content.length > 1600);
    assert.equal((await probes(fast)).length, 1);
    assert.equal((await probes(off)).length, 0);
    assert.equal((await probes(prior)).length, 0);

    // fast goes cold and comes back: measured again once it is up
    await getJSON(`${fast.url}/admin/unload`, { method: 'POST' });
    await waitFor(async () => (await probes(fast)).length === 2, { timeout: 20000, what: 'a second probe after the comeback' });
    await waitFor(async () => (await rates(gw)).fast?.source === 'warmup', { timeout: 10000, what: 'fast measured again' });
    assert.equal((await probes(slow)).length, 1, 'a box that stayed up is not measured again');
    const again = (await rates(gw)).fast.tps;
    assert.ok(again > 2000 && again < 8000, `fast again ${again}`);
  } finally {
    await gw.stop();
    for (const s of [slow, fast, off, prior]) await s.stop();
  }
});
