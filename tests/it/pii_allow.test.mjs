// Known-safe text (pii.allow, keys[].pii_allow, models[].pii_allow): a
// vendor's address in an agent's system prompt does not make the request
// sensitive, so it may use the cloud; any other value in the same request
// still does; a masked request keeps the allowed value and masks the rest;
// each list applies where it is set; the decision log counts allowed matches.
//
// The model "cloudy" has only a cloud backend, so a sensitive request is
// refused (local_only) and a clean one reaches the cloud: what the cloud
// received (/admin/received) is the evidence.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

const KEY = 'sk-allow-app';
const KEY2 = 'sk-allow-ops';
const ADMIN = 'sk-allow-admin';
const VENDOR = 'Bugs go to no-reply@agents.vendor.example and docs at help@vendor.example.';

function config(cloudUrl, policy = 'local_only') {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: app, key: "${KEY}" }
  - { name: ops, key: "${KEY2}", pii_allow: { values: ["192.0.2.10"] } }
backends:
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: cloudy, backends: [cloud], pii_allow: { domains: [vendor.example] } }
  - { name: plain, backends: [cloud] }
pii:
  policy: ${policy}
  allow: { values: ["Security@Corp.example"] }
`;
}

const body = (model, system, user) => JSON.stringify({
  model, max_tokens: 8,
  messages: [{ role: 'system', content: system }, { role: 'user', content: user }],
});

async function post(gw, b, key = KEY) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: b,
  });
  return { status: r.status, json: await r.json().catch(() => null), backend: r.headers.get('x-spillway-backend') };
}
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=1000`)).body.requests;
const lastDecision = async (gw, id) => {
  let d;
  await waitFor(async () => (d = (await getJSON(`${gw.url}/admin/decisions?n=50`, { headers: { authorization: `Bearer ${ADMIN}` } }))
    .body.decisions.find((x) => x.request_id === id)), { timeout: 10000, what: `the decision of ${id}` });
  return d;
};

describe('pii.allow under local_only', () => {
  let cloud, gw;
  before(async () => {
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '1000']);
    gw = await startSpillway(config(cloud.url));
  });
  after(async () => { await gw?.stop(); await cloud?.stop(); });

  test('a vendor address at an allowed domain leaves; the decision log counts it as allowed', async () => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body('cloudy', VENDOR, 'summarise the README'),
    });
    assert.equal(r.status, 200, await r.text());
    assert.equal(r.headers.get('x-spillway-backend'), 'cloud');
    const d = await lastDecision(gw, r.headers.get('x-request-id'));
    assert.equal(d.pii_allowed, 2);
    assert.deepEqual(d.pii, {});
    assert.ok(JSON.stringify((await received(cloud)).at(-1)).includes('no-reply@agents.vendor.example'));
  });

  test('the file-wide value is allowed on every model, in any case', async () => {
    const r = await post(gw, body('plain', 'Report issues to security@corp.example.', 'hello'));
    assert.equal(r.status, 200, JSON.stringify(r.json));
  });

  test('another address next to the allowed ones keeps the request local: refused (422) here, never sent', async () => {
    const before = (await received(cloud)).length;
    const r = await post(gw, body('cloudy', VENDOR, 'and mail the result to jan.devries@gmail.com'));
    assert.equal(r.status, 422, JSON.stringify(r.json));
    assert.equal((await received(cloud)).length, before);
  });

  test("a model's list does not apply to another model", async () => {
    const r = await post(gw, body('plain', VENDOR, 'summarise the README'));
    assert.equal(r.status, 422, JSON.stringify(r.json));
  });

  test("a key's list applies to that key only", async () => {
    const q = body('plain', 'You run on 192.0.2.10.', 'hello');
    assert.equal((await post(gw, q, KEY2)).status, 200);
    assert.equal((await post(gw, q, KEY)).status, 422);
  });
});

describe('pii.allow under mask', () => {
  let cloud, gw;
  before(async () => {
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '1000']);
    gw = await startSpillway(config(cloud.url, 'mask'));
  });
  after(async () => { await gw?.stop(); await cloud?.stop(); });

  test('the allowed address goes as it is, the other one masked and restored', async () => {
    const r = await post(gw, body('cloudy', VENDOR, 'reply to jan.devries@gmail.com'));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const sent = JSON.stringify((await received(cloud)).at(-1));
    assert.ok(sent.includes('no-reply@agents.vendor.example'), sent);
    assert.ok(!sent.includes('jan.devries@gmail.com'), sent);
    assert.ok(sent.includes('[EMAIL_1]'), sent);
  });
});
