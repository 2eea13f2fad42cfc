// An agent-sized prompt (~9000 tokens estimated) on an idle local box. With
// no prefill figure yet (the default prior, 1 ms/token: 9 s over an 800 ms
// budget) it still runs locally, reason long_prompt: the box is idle and the
// prompt's own prefill is what breaks the budget. Once the box's /metrics
// report its prefill rate (llmsim at 0.05 ms/token: 450 ms), the same prompt
// runs locally at baseline; with the box's only slot held, it spills to the
// cloud (overflow). The rate in force shows in /metrics and /admin/state
// with its source, and no prompt text appears there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';

const ADMIN = 'sk-admin-prefill';
const auth = { authorization: `Bearer ${ADMIN}` };
const CANARY = 'prefill-canary-7f3a';

const config = (edgeUrl, cloudUrl) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1,
      load: { source: llamacpp, poll_ms: 50 } }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: chat, backends: [edge, cloud] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 800
pii:
  policy: off
`;

// ~36 kB of text: about 9000 tokens by the gateway's estimate.
const agentPrompt = `${CANARY} ` + 'read the file and fix the failing test please '.repeat(780);

async function ask(gw) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', max_tokens: 16, messages: [{ role: 'user', content: agentPrompt }] }),
  });
  const body = await r.text();
  assert.equal(r.status, 200, body);
  return { backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
}

const edgeState = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.backends.find((b) => b.name === 'edge');
const prefillGauge = async (gw) => {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = text.match(/^spillway_prefill_tokens_per_second\{backend="edge",source="(\w+)"\} (\S+)$/m);
  return m ? { source: m[1], tps: Number(m[2]), text } : { source: null, tps: 0, text };
};

test('an agent-sized prompt: long_prompt on an idle box with no figure, baseline once the box reports its prefill rate, overflow while its slot is held', async () => {
  const edge = await startLlmsim(['--model', 'edge-model', '--prefill-ms-per-token', '0.05', '--decode-tps', '0']);
  const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
  const gw = await startSpillway(config(edge.url, cloud.url));
  try {
    // Nothing reported yet: the default prior.
    let g = await prefillGauge(gw);
    assert.equal(g.source, 'default');
    assert.equal(g.tps, 1000);
    assert.equal((await edgeState(gw)).prefill_source, 'default');
    await waitFor(async () => (await edgeState(gw)).load.stale === false,
      { timeout: 10000, what: 'a fresh load signal from the box' });

    // 1. Idle box, the default guess says 9 s: it stays local all the same.
    assert.deepEqual(await ask(gw), { backend: 'edge', reason: 'long_prompt' });

    // 2. The box's /metrics now count that prompt (~9000 tokens in ~0.45 s):
    //    the rate in force is the server's, about 20000 tokens/s.
    await waitFor(async () => (await prefillGauge(gw)).source === 'server',
      { timeout: 10000, what: 'the prefill rate read from the box' });
    g = await prefillGauge(gw);
    assert.ok(g.tps > 10000 && g.tps < 40000, `server rate ${g.tps}`);
    const st = await edgeState(gw);
    assert.equal(st.prefill_source, 'server');
    assert.ok(st.prefill_ms_per_token > 0.025 && st.prefill_ms_per_token < 0.1, `${st.prefill_ms_per_token}`);
    assert.deepEqual(await ask(gw), { backend: 'edge', reason: 'baseline' });

    // 3. Under load (its only slot held): the same prompt spills.
    const hold = await holdLocal(gw, edge, { admin: ADMIN });
    try {
      assert.deepEqual(await ask(gw), { backend: 'cloud', reason: 'overflow' });
    } finally {
      await hold.release();
    }

    // No prompt text in what operators read.
    assert.ok(!g.text.includes(CANARY));
    assert.ok(!(await (await fetch(`${gw.url}/metrics`)).text()).includes(CANARY));
    assert.ok(!JSON.stringify((await getJSON(`${gw.url}/admin/state`, { headers: auth })).body).includes(CANARY));
  } finally {
    await gw.stop(); await edge.stop(); await cloud.stop();
  }
});
