// Operating Spillway: Prometheus metrics that move with traffic, the
// decision log, hot reload under load, refused reloads, runtime thresholds,
// breaker reset, and the emergency switch showing in state, logs and metrics.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

const ADMIN = 'sk-admin-ops';
const auth = { authorization: `Bearer ${ADMIN}` };

function yaml({ edge, cloud, budget = 800, slots = 2, extra = '' }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edge}", model: edge-model, slots: ${slots} }
  - { name: cloud, tier: cloud, url: "${cloud}", model: cloud-model, price: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } }
models:
  - { name: chat, backends: [edge, cloud] }
routing:
  health_interval_ms: 200
  ttft_budget_ms: ${budget}
${extra}
`;
}

const chat = (gw, extra = {}) => fetch(`${gw.url}/v1/chat/completions`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'chat', max_tokens: 8, messages: [{ role: 'user', content: 'hello' }], ...extra }),
});

// Parses the Prometheus text format into { 'name{labels}': value }.
async function metrics(gw) {
  const r = await fetch(`${gw.url}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const out = {};
  for (const line of (await r.text()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}
const sum = (m, prefix) => Object.entries(m).filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);

describe('metrics and the decision log', () => {
  test('names and labels present, and moving as traffic flows; one log line per request, no prompt text', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']);
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url }));
    try {
      const before = await metrics(gw);
      assert.ok('spillway_local_queue_depth{backend="edge"}' in before, Object.keys(before).join('\n'));
      assert.ok('spillway_breaker_state{backend="edge"}' in before);
      assert.ok('spillway_cloud_spend_usd' in before);
      assert.equal(sum(before, 'spillway_requests_total'), 0);

      const secret = 'TOP-SECRET-PROMPT-4711';
      for (let i = 0; i < 3; i++) assert.equal((await chat(gw, { messages: [{ role: 'user', content: secret }] })).status, 200);
      assert.equal((await chat(gw, { model: 'nope' })).status, 404);

      const after = await metrics(gw);
      assert.equal(after['spillway_requests_total{model="chat",backend="edge",tier="local",reason="baseline"}'], 3);
      assert.equal(after['spillway_rejections_total{code="model_not_found"}'], 1);
      assert.equal(after['spillway_ttft_seconds_count{backend="edge"}'], 3);
      assert.ok(after['spillway_tokens_total{backend="edge",direction="out"}'] > 0);

      // The decision log: on stdout, one JSON line per request, never the prompt or the answer.
      const lines = gw.output().split('\n').filter((l) => l.startsWith('{"time"'));
      assert.equal(lines.length, 4);
      const served = lines.map((l) => JSON.parse(l)).filter((e) => e.decision === 'served');
      assert.equal(served.length, 3);
      for (const e of served) {
        assert.equal(e.backend, 'edge');
        assert.equal(e.reason, 'baseline');
        assert.equal(e.attempts.length, 1);
        assert.ok(e.tokens_out > 0);
      }
      assert.ok(!gw.output().includes(secret), 'the prompt never reaches a log');

      const recent = await getJSON(`${gw.url}/admin/decisions?n=2`, { headers: auth });
      assert.equal(recent.status, 200);
      assert.equal(recent.body.decisions.length, 2);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

describe('hot reload', () => {
  test('20 reloads under continuous load: zero failed requests; an invalid file is refused and the old config keeps serving', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '200']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '200']);
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url }));
    const good = readFileSync(gw.configFile, 'utf8');
    let stop = false;
    let ok = 0;
    const failures = [];
    const load = Promise.all(Array.from({ length: 4 }, async () => {
      while (!stop) {
        try {
          const r = await chat(gw, { stream: ok % 2 === 0, max_tokens: 12 });
          const text = await r.text();
          if (r.status !== 200 || text.includes('"error"')) failures.push(`${r.status} ${text.slice(0, 200)}`);
          else ok++;
        } catch (e) {
          failures.push(String(e));
        }
      }
    }));
    try {
      for (let i = 0; i < 20; i++) {
        // Alternate the TTFT budget so each reload really changes the snapshot.
        writeFileSync(gw.configFile, good.replace('ttft_budget_ms: 800', `ttft_budget_ms: ${800 + i}`));
        const r = await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: auth });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      // SIGHUP reloads too.
      gw.proc.kill('SIGHUP');
      await waitFor(async () => (await metrics(gw))['spillway_config_reloads_total{result="ok"}'] >= 21, { what: 'SIGHUP reload' });

      // An invalid file: refused, logged, counted; the old snapshot keeps serving.
      writeFileSync(gw.configFile, good.replace('tier: local', 'tier: nowhere'));
      const bad = await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: auth });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.error.code, 'invalid_config');
      assert.match(gw.output(), /tier: "nowhere" is not one of local, cloud/);
      assert.equal((await chat(gw)).status, 200);
      // Counted (the file watcher may have tried the same bad file too: that is two refusals).
      assert.ok((await metrics(gw))['spillway_config_reloads_total{result="failed"}'] >= 1);

      // A file change is picked up without being asked (atomic replace, as editors do).
      const tmp = `${gw.configFile}.new`;
      writeFileSync(tmp, good.replace('ttft_budget_ms: 800', 'ttft_budget_ms: 900'));
      renameSync(tmp, gw.configFile);
      await waitFor(async () => (await metrics(gw))['spillway_config_reloads_total{result="ok"}'] >= 22, { timeout: 5000, what: 'file-change reload' });
    } finally {
      stop = true;
      await load;
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
    assert.deepEqual(failures, []);
    assert.ok(ok > 20, `${ok} requests during the reloads`);
  });
});

describe('admin controls', () => {
  test('thresholds change at run time; a breaker can be reset; an emergency shows in state, logs and metrics', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '20']);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url, budget: 20000, slots: 1 }));
    try {
      // With a 20 s budget a second request waits for the busy local box...
      const long = chat(gw, { max_tokens: 40 });
      await waitFor(async () => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.backends[0].in_flight === 1, { what: 'edge busy' });
      // ...after lowering it at run time, it spills.
      const put = await getJSON(`${gw.url}/admin/thresholds`, { method: 'PUT', headers: auth, body: JSON.stringify({ ttft_budget_ms: 50, spend_cap_usd: 10 }) });
      assert.equal(put.status, 200);
      assert.equal(put.body.spend_cap_usd, 10);
      const r = await chat(gw);
      assert.equal(r.headers.get('x-spillway-backend'), 'cloud');
      assert.equal(r.headers.get('x-spillway-reason'), 'overflow');
      assert.equal((await long).status, 200);
      const badPut = await getJSON(`${gw.url}/admin/thresholds`, { method: 'PUT', headers: auth, body: JSON.stringify({ ttft_budget_ms: -1 }) });
      assert.equal(badPut.status, 400);

      const reset = await getJSON(`${gw.url}/admin/breakers/cloud/reset`, { method: 'POST', headers: auth });
      assert.equal(reset.status, 200);
      assert.equal((await getJSON(`${gw.url}/admin/breakers/nope/reset`, { method: 'POST', headers: auth })).status, 404);

      const declared = await getJSON(`${gw.url}/admin/emergency`, { method: 'POST', headers: auth, body: JSON.stringify({ declared: true, reason: 'datacenter flood' }) });
      assert.equal(declared.status, 200);
      assert.equal((await getJSON(`${gw.url}/admin/state`, { headers: auth })).body.emergency, true);
      const m = await metrics(gw);
      assert.equal(m.spillway_emergency, 1);
      assert.equal(m['spillway_emergency_declarations_total{state="declared"}'], 1);
      assert.match(gw.output(), /admin: emergency DECLARED \(reason: datacenter flood\)/);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});
