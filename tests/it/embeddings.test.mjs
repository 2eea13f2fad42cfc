// POST /v1/embeddings through the gateway with the official openai client:
// served on either tier with the backend's vectors and usage, spilled to the
// cloud when the local box is saturated, kept local when the input carries
// PII under local_only, masked on the way to the cloud under mask, priced on
// prompt tokens only, and refused with clear 400s when the input is wrong.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';

const ADMIN = 'sk-admin-embed';
const auth = { authorization: `Bearer ${ADMIN}` };
const EMAIL = 'jane.doe.4711@example.org';

function config({ edgeUrl, cloudUrl, policy = 'local_only', models = null }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-embed, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-embed,
      price: { input_usd_per_mtok: 1000, output_usd_per_mtok: 5000 } }
models:
${models ?? '  - { name: emb, backends: [edge, cloud] }'}
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
pii:
  policy: ${policy}
`;
}

const client = (gw) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });

async function metrics(gw) {
  const out = {};
  for (const line of (await (await fetch(`${gw.url}/metrics`)).text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}
const decisions = async (gw, n = 20) => (await getJSON(`${gw.url}/admin/decisions?n=${n}`, { headers: auth })).body.decisions;
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=1000`)).body.requests;
const gwBackend = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.backends.find((b) => b.name === name);

// What llmsim answers for the same input asked directly: the gateway must
// pass the backend's vectors through untouched.
async function direct(sim, body) {
  const r = await getJSON(`${sim.url}/v1/embeddings`, { method: 'POST', body: JSON.stringify(body) });
  assert.equal(r.status, 200);
  return r.body;
}

describe('embeddings', () => {
  test('local tier: the backend\'s vectors (float and base64, dimensions honoured) and usage come back; logged as api embeddings and counted', async () => {
    const edge = await startLlmsim(['--model', 'edge-embed']);
    const cloud = await startLlmsim(['--model', 'cloud-embed']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      const oa = client(gw);
      const { data: res, response } = await oa.embeddings.create({ model: 'emb', input: ['first text', 'second text'], dimensions: 8 }).withResponse();
      assert.equal(response.headers.get('x-spillway-backend'), 'edge');
      assert.equal(response.headers.get('x-spillway-tier'), 'local');
      assert.equal(res.model, 'emb', 'the public model name');
      assert.equal(res.data.length, 2);
      const want = await direct(edge, { model: 'x', input: ['first text', 'second text'], dimensions: 8 });
      for (let i = 0; i < 2; i++) {
        assert.equal(res.data[i].index, i);
        assert.equal(res.data[i].embedding.length, 8);
        // the openai client asks for base64 and decodes float32: same values
        res.data[i].embedding.forEach((v, k) => assert.ok(Math.abs(v - want.data[i].embedding[k]) < 1e-6));
      }
      assert.deepEqual(res.usage, want.usage);
      const flt = await oa.embeddings.create({ model: 'emb', input: 'first text', dimensions: 8, encoding_format: 'float' });
      assert.deepEqual(flt.data[0].embedding, want.data[0].embedding);

      const got = (await received(edge)).filter((q) => q.path === '/v1/embeddings' && q.body.model !== 'x');
      assert.equal(got.length, 2);
      assert.equal(got[0].body.model, 'edge-embed', 'the backend\'s model name upstream');
      assert.equal((await received(cloud)).length, 0);

      const d = (await decisions(gw, 2))[1]; // newest first: the two-input request
      assert.equal(d.api, 'embeddings');
      assert.equal(d.backend, 'edge');
      assert.equal(d.tokens_in, want.usage.prompt_tokens);
      assert.equal(d.tokens_out, 0);
      const m = await metrics(gw);
      assert.equal(m['spillway_embeddings_requests_total{model="emb",backend="edge",tier="local"}'], 2);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('cloud tier: spend is priced on prompt tokens only', async () => {
    const edge = await startLlmsim(['--model', 'edge-embed']);
    const cloud = await startLlmsim(['--model', 'cloud-embed']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, models: '  - { name: emb, backends: [cloud] }' }));
    try {
      const { data: res, response } = await client(gw).embeddings.create({ model: 'emb', input: ['a'.repeat(400), 'b'.repeat(40)] }).withResponse();
      assert.equal(response.headers.get('x-spillway-tier'), 'cloud');
      assert.equal(res.usage.prompt_tokens, 110);
      const m = await metrics(gw);
      assert.ok(Math.abs(m['spillway_cloud_cost_usd_total{backend="cloud"}'] - 110 * 1000 / 1e6) < 1e-9,
        `cost ${m['spillway_cloud_cost_usd_total{backend="cloud"}']}`);
      assert.equal(m['spillway_tokens_total{backend="cloud",direction="in"}'], 110);
      assert.equal(m['spillway_tokens_total{backend="cloud",direction="out"}'], 0);
      const d = (await decisions(gw, 1))[0];
      assert.equal(d.api, 'embeddings');
      assert.ok(Math.abs(d.cost_usd - 0.11) < 1e-9);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('local saturated: a clean embedding overflows to the cloud; one with PII (local_only) waits for local and the cloud never sees it', async () => {
    const edge = await startLlmsim(['--model', 'edge-embed', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-embed']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      const oa = client(gw);
      const hold = await holdLocal(gw, edge, { admin: ADMIN, model: 'emb' });
      const { response } = await oa.embeddings.create({ model: 'emb', input: 'a clean sentence' }).withResponse();
      assert.equal(response.headers.get('x-spillway-backend'), 'cloud');
      assert.equal(response.headers.get('x-spillway-reason'), 'overflow');

      const pii = oa.embeddings.create({ model: 'emb', input: ['clean', `mail ${EMAIL} please`] }).withResponse();
      await waitFor(async () => (await gwBackend(gw, 'edge')).queued === 1, { timeout: 10000, what: 'the PII embedding waiting for local' });
      await hold.release();
      const r = await pii;
      assert.equal(r.response.headers.get('x-spillway-backend'), 'edge');
      assert.equal(r.data.data.length, 2);
      const cloudSaw = JSON.stringify(await received(cloud));
      assert.ok(cloudSaw.includes('a clean sentence'), 'the clean one reached the cloud');
      assert.ok(!cloudSaw.includes('4711'), 'no fragment of the PII input reached the cloud');
      const d = (await decisions(gw, 5)).find((e) => e.api === 'embeddings' && e.backend === 'edge');
      assert.equal(d.pii_outcome, 'kept_local');
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('mask: PII in every input string is masked before the cloud; token inputs cannot be scanned and stay local', async () => {
    const edge = await startLlmsim(['--model', 'edge-embed', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-embed']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, policy: 'mask' }));
    try {
      const oa = client(gw);
      const hold = await holdLocal(gw, edge, { admin: ADMIN, model: 'emb' });
      const { data: res, response } = await oa.embeddings.create({ model: 'emb', input: [`write to ${EMAIL}`, 'nothing here', `cc ${EMAIL}`] }).withResponse();
      assert.equal(response.headers.get('x-spillway-backend'), 'cloud');
      assert.equal(res.data.length, 3);
      const got = (await received(cloud)).at(-1).body;
      assert.equal(got.input.length, 3);
      assert.ok(!JSON.stringify(got).includes('4711'), `masked: ${JSON.stringify(got)}`);
      assert.match(got.input[0], /^write to \[EMAIL_1\]$/);
      assert.equal(got.input[2], 'cc [EMAIL_1]', 'the same value gets the same placeholder');
      assert.equal(got.input[1], 'nothing here');
      const d = (await decisions(gw, 1))[0];
      assert.equal(d.pii_outcome, 'masked_cloud');
      assert.equal(d.api, 'embeddings');

      // Token ids are text the scanner cannot read: never to the cloud.
      const before = (await received(cloud)).length;
      const tok = oa.embeddings.create({ model: 'emb', input: [[101, 2023, 102]] }).withResponse();
      await waitFor(async () => (await gwBackend(gw, 'edge')).queued === 1, { timeout: 10000, what: 'the token input waiting for local' });
      await hold.release();
      assert.equal((await tok).response.headers.get('x-spillway-backend'), 'edge');
      assert.equal((await received(cloud)).length, before);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('bad input: clear 400s in OpenAI\'s shape, nothing sent upstream', async () => {
    const edge = await startLlmsim(['--model', 'edge-embed']);
    const cloud = await startLlmsim(['--model', 'cloud-embed']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      const oa = client(gw);
      const cases = [
        [{ model: 'emb', input: '' }, 'input', 'invalid_value'],
        [{ model: 'emb', input: [] }, 'input', 'invalid_value'],
        [{ model: 'emb', input: ['ok', 7] }, 'input[1]', 'invalid_type'],
        [{ model: 'emb', input: { text: 'x' } }, 'input', 'invalid_type'],
        [{ model: 'emb', input: [[1, -2]] }, 'input[0][1]', 'invalid_type'],
        [{ model: 'emb', input: Array(2049).fill('x') }, 'input', 'invalid_value'],
        [{ model: 'emb' }, 'input', 'missing_required_parameter'],
        [{ model: 'emb', input: 'x', dimensions: 0 }, 'dimensions', 'invalid_value'],
        [{ model: 'emb', input: 'x', encoding_format: 'int8' }, 'encoding_format', 'invalid_value'],
      ];
      for (const [body, param, code] of cases) {
        await assert.rejects(oa.embeddings.create(body), (e) => {
          assert.ok(e instanceof OpenAI.BadRequestError, `${JSON.stringify(body).slice(0, 80)}: ${e}`);
          assert.equal(e.param, param);
          assert.equal(e.code, code);
          assert.ok(e.message.length > 20);
          return true;
        });
      }
      await assert.rejects(oa.embeddings.create({ model: 'nope', input: 'x' }), (e) => e.status === 404 && e.code === 'model_not_found');
      assert.equal((await received(edge)).length, 0);
      const d = (await decisions(gw, 1))[0];
      assert.equal(d.api, 'embeddings');
      assert.equal(d.decision, 'rejected');
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});
