// The parse memo (limits.parse_cache_bytes) through the gateway, on the
// three surfaces an agent speaks (OpenAI chat, Anthropic Messages, the
// Responses API): a conversation's later turns take their earlier messages'
// trees from the memo (/metrics), and an earlier message whose copy changed
// by one byte (an address planted in turn 3) is parsed as it is now, so the
// address is found and masked before the cloud gets it. With
// parse_cache_bytes 0 nothing is kept and the address is still masked; a
// reload applies a new bound. A message the memo holds keeps the PII scan's
// verdict on it too: the same clean OpenAI body again looks no text up in
// the scan-verdict cache.
//
// The model has only a cloud backend and the policy is mask: what the cloud
// received (/admin/received) is the evidence. What chat cannot carry (the
// Responses body's hosted web search, as Codex sends it) is dropped, as
// docs/agents.md sets it for coding agents.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { trace, metric } from './lib/agent.mjs';
import { startLlmsim, startSpillway, waitFor, getJSON, tempDir, removeTempDir } from './lib/harness.mjs';

const KEY = 'sk-parse-app';
const ADMIN = 'sk-parse-admin';
const PLANTED = 'build.lead@corp-mail.example';

const config = (cloudUrl, bytes) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: app, key: "${KEY}" }
backends:
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: chat, backends: [cloud] }
pii: { policy: mask }
limits: { parse_cache_bytes: ${bytes} }
translation: { unsupported: drop }
`;

const SURFACES = {
  openai: { path: '/v1/chat/completions', headers: { authorization: `Bearer ${KEY}` }, max: 'max_tokens' },
  anthropic: { path: '/v1/messages', headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }, max: 'max_tokens' },
  responses: { path: '/v1/responses', headers: { authorization: `Bearer ${KEY}` }, max: 'max_output_tokens' },
};

// The body as the client wrote it, with a short answer asked for: the bytes
// of every earlier message stay as they were.
async function post(gw, shape, body) {
  const s = SURFACES[shape];
  const short = body.replace(new RegExp(`"${s.max}":\\d+`), `"${s.max}":8`);
  assert.notEqual(short, body);
  const r = await fetch(`${gw.url}${s.path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...s.headers }, body: short,
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  return text;
}
const lastReceived = async (sim) => JSON.stringify((await getJSON(`${sim.url}/admin/received?n=1`)).body.requests.at(-1));

describe('parse memo on', () => {
  let cloud, gw, gw0, dir;
  before(async () => {
    dir = tempDir('spillway-parse-');
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '100']);
    gw = await startSpillway(config(cloud.url, 33554432));
    gw0 = await startSpillway(config(cloud.url, 0)); // the same gateway without the memo
  });
  after(async () => { await gw?.stop(); await gw0?.stop(); await cloud?.stop(); removeTempDir(dir); });

  // A resent message's translated text is sent from where the memo keeps it
  // (one piece of the upstream body per message, more than one writev
  // takes), not copied: the backend gets the bytes the gateway without the
  // memo writes, streamed (the usage request spliced before the end) or not.
  for (const stream of [false, true]) {
    test(`anthropic, ${stream ? 'streamed' : 'not streamed'}: a resent conversation of 400 messages reaches the backend as without the memo`, async () => {
      const words = 'the build fails after the refactor of the parser so we check each caller';
      const messages = Array.from({ length: 401 }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: i % 2 ? `step ${i} done: ${words}` : [{ type: 'text', text: `step ${i} (${stream}): ${words}` }],
      }));
      const body = JSON.stringify({ model: 'chat', max_tokens: 64, stream, messages });
      const sent = [];
      for (const g of [gw, gw, gw0]) {
        const hits = await metric(gw, 'spillway_parse_cache_hits_total');
        await post(g, 'anthropic', body);
        const r = (await getJSON(`${cloud.url}/admin/received?n=1`)).body.requests.at(-1);
        sent.push(`${r.headers['content-length']} ${JSON.stringify(r.body)}`);
        if (sent.length === 2) assert.ok(await metric(gw, 'spillway_parse_cache_hits_total') >= hits + 400);
      }
      assert.ok(sent[0].includes('step 399 done'));
      // (not assert.equal: a difference would print 50 KB twice)
      assert.ok(sent[1] === sent[0], 'the resent body, its texts shared, as the first');
      assert.ok(sent[2] === sent[0], 'as the gateway without the memo sends it');
    });
  }

  for (const shape of Object.keys(SURFACES)) {
    test(`${shape}: later turns hit; an earlier message changed by one byte is parsed anew and masked`, async () => {
      const clean = trace(join(dir, `${shape}-clean`), 3, ['--shape', shape]);
      const planted = trace(join(dir, `${shape}-planted`), 3, ['--shape', shape, '--plant', '3']);
      assert.ok(planted[3].includes(PLANTED) && !clean[3].includes(PLANTED));
      await post(gw, shape, clean[1]);
      const h1 = await metric(gw, 'spillway_parse_cache_hits_total');
      await post(gw, shape, clean[2]);
      assert.ok(await metric(gw, 'spillway_parse_cache_hits_total') > h1, 'turn 2 resends turn 1: hits');
      // Turn 3, clean: hits, nothing to mask.
      await post(gw, shape, clean[3]);
      assert.ok(!(await lastReceived(cloud)).includes('[EMAIL_1]'));
      // Turn 3 with the first user message's copy changed: that message
      // misses, and its address is masked.
      const misses = await metric(gw, 'spillway_parse_cache_misses_total');
      await post(gw, shape, planted[3]);
      assert.ok(await metric(gw, 'spillway_parse_cache_misses_total') > misses);
      const sent = await lastReceived(cloud);
      assert.ok(!sent.includes(PLANTED), 'the planted address never reaches the cloud');
      assert.ok(sent.includes('[EMAIL_1]'));
      // The same body again: the changed message is now a hit, still masked.
      const hits = await metric(gw, 'spillway_parse_cache_hits_total');
      await post(gw, shape, planted[3]);
      assert.ok(await metric(gw, 'spillway_parse_cache_hits_total') > hits);
      const again = await lastReceived(cloud);
      assert.ok(!again.includes(PLANTED));
      assert.ok(again.includes('[EMAIL_1]'));
      if (shape === 'openai') {
        // a clean body again (nothing to mask): every message held with its
        // verdicts (the front's scan, the cloud gate's), no text looked up
        const looked = async () => await metric(gw, 'spillway_pii_scan_cache_hits_total') +
          await metric(gw, 'spillway_pii_scan_cache_misses_total');
        const before = await looked();
        await post(gw, shape, clean[3]);
        assert.equal(await looked(), before);
      }
    });
  }

  test('the memo is bounded and a reload applies a new bound', async () => {
    assert.ok(await metric(gw, 'spillway_parse_cache_entries') > 0);
    assert.ok(await metric(gw, 'spillway_parse_cache_bytes') > 0);
    assert.equal(await metric(gw, 'spillway_parse_cache_max_bytes'), 33554432);
    writeFileSync(gw.configFile, config(cloud.url, 0));
    const r = await fetch(`${gw.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 200, await r.text());
    await waitFor(async () => (await metric(gw, 'spillway_parse_cache_max_bytes')) === 0,
      { timeout: 5000, what: 'the new bound' });
    assert.equal(await metric(gw, 'spillway_parse_cache_entries'), 0);
    assert.equal(await metric(gw, 'spillway_parse_cache_bytes'), 0);
  });
});

describe('parse memo off', () => {
  let cloud, gw, dir;
  before(async () => {
    dir = tempDir('spillway-parse-');
    cloud = await startLlmsim(['--model', 'cloud-model', '--keep-received', '100']);
    gw = await startSpillway(config(cloud.url, 0));
  });
  after(async () => { await gw?.stop(); await cloud?.stop(); removeTempDir(dir); });

  test('parse_cache_bytes 0: nothing kept, the planted value still masked', async () => {
    const planted = trace(join(dir, 'p'), 3, ['--plant', '3']);
    await post(gw, 'openai', planted[2]);
    await post(gw, 'openai', planted[3]);
    assert.equal(await metric(gw, 'spillway_parse_cache_hits_total'), 0);
    assert.equal(await metric(gw, 'spillway_parse_cache_entries'), 0);
    const sent = await lastReceived(cloud);
    assert.ok(!sent.includes(PLANTED));
    assert.ok(sent.includes('[EMAIL_1]'));
  });
});
