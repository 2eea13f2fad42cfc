// The PII scan-verdict cache (limits.scan_cache_bytes) through the gateway:
// a multi-turn agent conversation (bench/agent_trace.py) gets cache hits on
// its later turns (/metrics); a value added in turn 3 to an earlier message's
// copy (one byte changed) is still caught and masked; a reload empties the
// cache; with scan_cache_bytes 0 nothing is cached. The parse memo is off
// here: with it, a message it holds keeps its whole verdict and its texts
// are not looked up again (it/parse_cache), so this file tests the cache
// that every text of every other body goes through.
//
// The model has only a cloud backend and the policy is mask: what the cloud
// received (/admin/received) is the evidence.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { trace, metric } from './lib/agent.mjs';
import { startLlmsim, startSpillway, waitFor, getJSON, tempDir, removeTempDir } from './lib/harness.mjs';

const KEY = 'sk-cache-app';
const ADMIN = 'sk-cache-admin';
const PLANTED = 'build.lead@corp-mail.example';

const config = (cloudUrl, cacheBytes) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: app, key: "${KEY}" }
backends:
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: chat, backends: [cloud] }
pii: { policy: mask }
limits: { scan_cache_bytes: ${cacheBytes}, parse_cache_bytes: 0 }
`;

async function post(gw, body) {
  const short = JSON.stringify({ ...JSON.parse(body), max_tokens: 8 });   // a short answer
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: short,
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return text;
}
const lastReceived = async (sim) => JSON.stringify((await getJSON(`${sim.url}/admin/received?n=1`)).body.requests.at(-1));

describe('scan cache on', () => {
  let cloud, gw, dir;
  before(async () => {
    dir = tempDir('spillway-trace-');
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '100']);
    gw = await startSpillway(config(cloud.url, 16777216));
  });
  after(async () => { await gw?.stop(); await cloud?.stop(); removeTempDir(dir); });

  test('later turns hit; a value planted in turn 3 in an earlier message copy is masked', async () => {
    const clean = trace(join(dir, 'clean'), 5);
    const planted = trace(join(dir, 'planted'), 5, ['--plant', '3']);
    assert.ok(planted[3].includes(PLANTED) && !planted[2].includes(PLANTED));
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_hits_total'), 0);
    await post(gw, clean[1]);
    const m1 = await metric(gw, 'spillway_pii_scan_cache_misses_total');
    assert.ok(m1 > 0);
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_hits_total'), 0);
    await post(gw, clean[2]);
    const h2 = await metric(gw, 'spillway_pii_scan_cache_hits_total');
    assert.ok(h2 > 0, 'turn 2 resends turn 1: hits');
    // Turn 3 with the first user message's copy changed by one byte: that
    // message is a miss, scanned, and its new address masked.
    const misses = await metric(gw, 'spillway_pii_scan_cache_misses_total');
    await post(gw, planted[3]);
    assert.ok(await metric(gw, 'spillway_pii_scan_cache_misses_total') > misses);
    const sent = await lastReceived(cloud);
    assert.ok(!sent.includes(PLANTED), 'the planted address never reaches the cloud');
    assert.ok(sent.includes('[EMAIL_1]'));
    // The same body again: every long text a hit, still masked.
    const hits = await metric(gw, 'spillway_pii_scan_cache_hits_total');
    await post(gw, planted[3]);
    assert.ok(await metric(gw, 'spillway_pii_scan_cache_hits_total') > hits);
    const again = await lastReceived(cloud);
    assert.ok(!again.includes(PLANTED));
    assert.ok(again.includes('[EMAIL_1]'));
    assert.ok(await metric(gw, 'spillway_pii_scan_cache_bytes') > 0);
    assert.ok(await metric(gw, 'spillway_pii_scan_cache_entries') > 0);
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_max_bytes'), 16777216);
  });

  test('a reload empties the cache', async () => {
    assert.ok(await metric(gw, 'spillway_pii_scan_cache_entries') > 0);
    const r = await fetch(`${gw.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 200, await r.text());
    await waitFor(async () => (await metric(gw, 'spillway_pii_scan_cache_entries')) === 0,
      { timeout: 5000, what: 'the cache emptied by the reload' });
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_bytes'), 0);
  });
});

describe('scan cache off', () => {
  let cloud, gw, dir;
  before(async () => {
    dir = tempDir('spillway-trace-');
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '100']);
    gw = await startSpillway(config(cloud.url, 0));
  });
  after(async () => { await gw?.stop(); await cloud?.stop(); removeTempDir(dir); });

  test('scan_cache_bytes 0: no entry, no hit, the planted value still masked', async () => {
    const planted = trace(join(dir, 'p'), 3, ['--plant', '3']);
    await post(gw, planted[2]);
    await post(gw, planted[3]);
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_hits_total'), 0);
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_entries'), 0);
    assert.equal(await metric(gw, 'spillway_pii_scan_cache_max_bytes'), 0);
    const sent = await lastReceived(cloud);
    assert.ok(!sent.includes(PLANTED));
    assert.ok(sent.includes('[EMAIL_1]'));
  });
});
