// The spend cap holds against the real bill: a cloud whose tokenizer counts
// more tokens than bytes / 4 (digits between commas) must not take
// the window above the cap, whether requests come one by one or all at once.
// The cloud is llmsim with --tokenizer pieces, which reports honest usage for
// such text; the bill is read from the cloud itself (its prompt and output
// token counters) and from the gateway's /metrics.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, getJSON } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml, withProcs } from './lib/gateway.mjs';

const PRICE = 100;          // USD per million tokens, input and output
const CAP = 0.05;           // USD: 500 tokens at PRICE

// Numbers as people paste them: a list of readings, comma-separated.
function readings(n) {
  const out = [];
  let x = 17;
  for (let i = 0; i < n; i++) {
    x = (x * 37 + 11) % 97;
    out.push(String(x % 10 === 0 ? x + 1 : x % 10));
  }
  return out.join(',');
}

async function chat(gw, content) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'cloudy', max_tokens: 8, messages: [{ role: 'user', content }] }),
  });
  await r.text();
  return r.status;
}

async function setup(track) {
  const cloud = await track(startLlmsim(['--model', 'cloud-model', '--tokenizer', 'pieces']));
  const gw = await track(startSpillway(yaml({
    backends: [{ name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model',
      price: { raw: `{ input_usd_per_mtok: ${PRICE}, output_usd_per_mtok: ${PRICE} }` } }],
    models: [{ name: 'cloudy', backends: ['cloud'] }],
    routing: `  spend: { cap_usd: ${CAP}, on_cap: shed }`,
  })));
  return { cloud, gw };
}

// What the cloud billed: its own token counters at PRICE.
async function billed(cloud) {
  const s = (await getJSON(`${cloud.url}/admin/stats`)).body;
  return ((s.prompt_tokens + s.tokens_generated) * PRICE) / 1e6;
}

async function gatewaySpend(gw) {
  const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
  const m = await (await fetch(`${gw.url}/metrics`)).text();
  const cost = m.split('\n').filter((l) => l.startsWith('spillway_cloud_cost_usd_total{'))
    .reduce((a, l) => a + Number(l.split(' ').pop()), 0);
  return { spend: st.spend_usd, cost };
}

describe('spend cap: reserved at an upper bound of the prompt, settled on the usage', () => {
  test('sequential requests never bill above the cap', () => withProcs(async (track) => {
      const { cloud, gw } = await setup(track);
      const statuses = [];
      for (let i = 0; i < 8; i++) statuses.push(await chat(gw, readings(100)));
      assert.ok(statuses.includes(200), `some requests were served: ${statuses}`);
      assert.ok(statuses.includes(429), `the cap was reached: ${statuses}`);
      const bill = await billed(cloud);
      assert.ok(bill <= CAP + 1e-9, `the cloud billed ${bill} USD, above the cap of ${CAP}`);
      const g = await gatewaySpend(gw);
      assert.ok(Math.abs(g.cost - bill) < 1e-9, `the gateway settled ${g.cost} USD, the cloud billed ${bill}`);
      assert.ok(g.spend <= CAP + 1e-9, `spend_usd ${g.spend}`);
  }));

  test('concurrent requests never bill above the cap', () => withProcs(async (track) => {
    const { cloud, gw } = await setup(track);
    const statuses = await Promise.all(Array.from({ length: 12 }, () => chat(gw, readings(100))));
    assert.ok(statuses.includes(200) && statuses.includes(429), `${statuses}`);
    const bill = await billed(cloud);
    assert.ok(bill <= CAP + 1e-9, `the cloud billed ${bill} USD, above the cap of ${CAP}`);
    const g = await gatewaySpend(gw);
    assert.ok(Math.abs(g.cost - bill) < 1e-9, `the gateway settled ${g.cost} USD, the cloud billed ${bill}`);
  }));
});
