// Operating Spillway: Prometheus metrics that move with traffic, the
// decision log, hot reload under load (and the state it carries over),
// refused reloads, runtime thresholds and the spend-cap override,
// breaker reset, and the emergency switch showing in state, logs and metrics.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { startLlmsim, startSpillway, waitFor, getJSON, tempDir } from './lib/harness.mjs';
import { rawConnect } from './lib/rawhttp.mjs';

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
const state = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
const backendState = async (gw, name) => (await state(gw)).backends.find((b) => b.name === name);
const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests.length;
async function setFaults(sim, faults) {
  const r = await fetch(`${sim.url}/admin/faults`, faults ? { method: 'POST', body: JSON.stringify(faults) } : { method: 'DELETE' });
  assert.equal(r.status, 200, await r.text());
}
const ask = async (gw, model, extra = {}) => {
  const r = await chat(gw, { model, ...extra });
  return { status: r.status, text: await r.text(), backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
};

// Backends by name: { edge: { url, slots }, cloud: { url } ...}; models: { chat: ['edge', 'cloud'] }.
function config({ backends, models, routing = '' }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
${Object.entries(backends).map(([name, b]) => `  - { name: ${name}, tier: ${b.tier || (b.slots ? 'local' : 'cloud')}, url: "${b.url}", model: ${name}-model${b.slots ? `, slots: ${b.slots}` : ''}${b.tier === 'cloud' || !b.slots ? ', price: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 }' : ''} }`).join('\n')}
models:
${Object.entries(models).map(([name, bs]) => `  - { name: ${name}, backends: [${bs.join(', ')}] }`).join('\n')}
routing:
  health_interval_ms: 200
${routing}
`;
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

describe('hot reload carries state over', () => {
  test('the new budget is in force at once; requests in flight finish on their snapshot; breaker, queue and learned rates carry over', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '20']);
    const flaky = await startLlmsim(['--model', 'flaky-model', '--error-rate', '1', '--error-status', '503']);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(config({
      backends: { edge: { url: edge.url, slots: 1 }, flaky: { url: flaky.url, slots: 1 }, cloud: { url: cloud.url } },
      models: { chat: ['edge', 'cloud'], flakychat: ['flaky', 'cloud'] },
      routing: '  ttft_budget_ms: 20000\n  breaker: { failures: 2, window_ms: 10000, cooldown_ms: 60000 }',
    }));
    const file = readFileSync(gw.configFile, 'utf8');
    try {
      // Learned rates: one short streamed answer replaces the priors.
      assert.equal((await ask(gw, 'chat', { stream: true, max_tokens: 8 })).backend, 'edge');
      const learned = await backendState(gw, 'edge');
      assert.equal(learned.avg_output_tokens, 8);
      // An open breaker: flaky fails twice.
      for (let i = 0; i < 2; i++) assert.equal((await ask(gw, 'flakychat')).backend, 'cloud');
      assert.equal((await backendState(gw, 'flaky')).breaker, 'open');
      assert.equal(await received(flaky), 2);

      // In flight: a stream on the only slot (60 tokens: 3 s) and a request queued behind it.
      const streamed = fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat', stream: true, max_tokens: 60, messages: [{ role: 'user', content: 'x' }] }),
      }).then(async (r) => ({ status: r.status, backend: r.headers.get('x-spillway-backend'), text: await r.text() }));
      await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'edge busy' });
      const queued = ask(gw, 'chat');
      await waitFor(async () => (await backendState(gw, 'edge')).queued === 1, { what: 'a request queued on edge' });

      // Reload with a 50 ms budget.
      writeFileSync(gw.configFile, file.replace('ttft_budget_ms: 20000', 'ttft_budget_ms: 50'));
      assert.equal((await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: auth })).status, 200);

      // State carried over: the breaker is still open, the queue and the slot
      // still taken, the learned rates unchanged.
      const after = await state(gw);
      const e = after.backends.find((b) => b.name === 'edge');
      assert.equal(after.backends.find((b) => b.name === 'flaky').breaker, 'open');
      assert.equal(e.in_flight, 1);
      assert.equal(e.queued, 1);
      for (const k of ['prefill_ms_per_token', 'decode_tps', 'avg_output_tokens']) assert.equal(e[k], learned[k], k);
      // The open breaker still keeps traffic off flaky.
      const f = await ask(gw, 'flakychat');
      assert.equal(f.backend, 'cloud');
      assert.equal(f.reason, 'breaker');
      assert.equal(await received(flaky), 2);

      // The new budget is in force for new requests: behind the busy slot they spill.
      const fresh = await ask(gw, 'chat');
      assert.equal(fresh.backend, 'cloud');
      assert.equal(fresh.reason, 'overflow');

      // The requests in flight finish on the snapshot they started with: the
      // queued one keeps its 20 s budget and is served locally, the stream is whole.
      const q = await queued;
      assert.equal(q.status, 200, q.text);
      assert.equal(q.backend, 'edge');
      assert.equal(q.reason, 'baseline');
      const st = await streamed;
      assert.equal(st.status, 200);
      assert.equal(st.backend, 'edge');
      const events = st.text.split('\n\n').filter(Boolean);
      assert.equal(events.at(-1), 'data: [DONE]');
      assert.equal(events.slice(0, -1).filter((ev) => JSON.parse(ev.slice(6)).choices?.[0]?.delta?.content).length, 60);
    } finally {
      await gw.stop(); await edge.stop(); await flaky.stop(); await cloud.stop();
    }
  });
});

describe('admin controls', () => {
  test('thresholds change at run time; an emergency shows in state, logs and metrics', async () => {
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

  test('a breaker reset sends traffic back to a backend whose breaker is open', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(config({
      backends: { edge: { url: edge.url, slots: 2 }, cloud: { url: cloud.url } },
      models: { chat: ['edge', 'cloud'] },
      routing: '  breaker: { failures: 2, window_ms: 10000, cooldown_ms: 60000 }',
    }));
    try {
      await setFaults(edge, { error_rate: 1, error_status: 503 });
      for (let i = 0; i < 2; i++) assert.equal((await ask(gw, 'chat')).backend, 'cloud');
      assert.equal((await backendState(gw, 'edge')).breaker, 'open');
      // The box is fixed, but the open breaker (60 s cooldown) keeps traffic off it.
      await setFaults(edge, null);
      const off = await ask(gw, 'chat');
      assert.equal(off.backend, 'cloud');
      assert.equal(off.reason, 'breaker');
      assert.equal(await received(edge), 2);

      const reset = await getJSON(`${gw.url}/admin/breakers/edge/reset`, { method: 'POST', headers: auth });
      assert.equal(reset.status, 200);
      assert.deepEqual(reset.body, { backend: 'edge', breaker: 'closed' });
      assert.match(gw.output(), /breaker of edge reset/);
      const back = await ask(gw, 'chat');
      assert.equal(back.status, 200);
      assert.equal(back.backend, 'edge');
      assert.equal(back.reason, 'baseline');
      assert.equal(await received(edge), 3);
      assert.equal((await getJSON(`${gw.url}/admin/breakers/nope/reset`, { method: 'POST', headers: auth })).status, 404);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('the spend cap set at run time changes routing: over it cloud requests are shed, without it they are served', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(config({
      backends: { cloud: { url: cloud.url } },
      models: { cloudy: ['cloud'] },
      routing: '  spend: { on_cap: shed, shed_retry_after_s: 9 }',
    }));
    const cap = (usd) => getJSON(`${gw.url}/admin/thresholds`, { method: 'PUT', headers: auth, body: JSON.stringify({ spend_cap_usd: usd }) });
    try {
      // No cap in the file: served.
      const first = await ask(gw, 'cloudy');
      assert.equal(first.status, 200);
      assert.equal(first.backend, 'cloud');
      const spent = (await state(gw)).spend_usd;
      assert.ok(spent > 0, 'the first request cost something');

      // A cap below what was spent: the next cloud request is shed.
      const put = await cap(spent / 2);
      assert.equal(put.status, 200);
      assert.equal(put.body.spend_cap_usd, spent / 2);
      const shed = await ask(gw, 'cloudy');
      assert.equal(shed.status, 429, shed.text);
      assert.equal(JSON.parse(shed.text).error.code, 'budget_exhausted');
      assert.equal(await received(cloud), 1, 'the shed request never reached the cloud');

      // Cap removed (0: none): served again.
      assert.equal((await cap(0)).status, 200);
      const again = await ask(gw, 'cloudy');
      assert.equal(again.status, 200);
      assert.equal(again.backend, 'cloud');
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});

describe('decision log file and admin decisions', () => {
  test('SIGHUP reopens the decision log: after a rename the next line lands in a new file at the configured path', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const logFile = join(tempDir('spillway-rotate-'), 'decisions.jsonl');
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url, extra: `decision_log: "${logFile}"` }));
    const lines = (f) => (existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
    try {
      const first = await chat(gw);
      assert.equal(first.status, 200);
      const firstId = first.headers.get('x-request-id');
      await waitFor(() => lines(logFile).length === 1, { what: 'the first line in the log file' });
      // logrotate: rename, then SIGHUP.
      const rotated = `${logFile}.1`;
      renameSync(logFile, rotated);
      gw.proc.kill('SIGHUP');
      // The reopen happens before the reload in the same handler: once the
      // reload is counted, the file is reopened.
      await waitFor(async () => (await metrics(gw))['spillway_config_reloads_total{result="ok"}'] >= 1, { what: 'the SIGHUP handled' });

      const second = await chat(gw);
      assert.equal(second.status, 200);
      const secondId = second.headers.get('x-request-id');
      const fresh = await waitFor(() => { const l = lines(logFile); return l.length >= 1 && l; }, { what: 'a new file at the configured path' });
      assert.deepEqual(fresh.map((l) => l.request_id), [secondId]);
      assert.deepEqual(lines(rotated).map((l) => l.request_id), [firstId], 'the rotated file holds only the line written before the SIGHUP');
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('batched decision log: concurrent requests give one whole line each, written without waiting for more traffic, and none lost on SIGTERM', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const logFile = join(tempDir('spillway-batch-'), 'decisions.jsonl');
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url, slots: 8, extra: `decision_log: "${logFile}"` }));
    const raw = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
    const ids = async (n) => Promise.all(Array.from({ length: n }, async () => {
      const r = await chat(gw);
      assert.equal(r.status, 200);
      await r.text();
      return r.headers.get('x-request-id');
    }));
    let stopped = false;
    try {
      // 60 lines are far below the batch size: they must still be written
      // once the loop turn that answered them ends.
      const first = await ids(60);
      await waitFor(() => raw().split('\n').filter(Boolean).length >= 60, { what: '60 lines written while the gateway idles' });
      const second = await ids(20);
      await gw.stop('SIGTERM');
      stopped = true;
      const text = raw();
      assert.ok(text.endsWith('\n'), 'the file ends with a whole line');
      const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l)); // a torn line would not parse
      assert.deepEqual(lines.map((l) => l.request_id).sort(), [...first, ...second].sort());
    } finally {
      if (!stopped) await gw.stop();
      await edge.stop(); await cloud.stop();
    }
  });

  test('GET /admin/decisions with n out of range (0, 1001, -1, x, empty): 400 invalid_value in OpenAI shape; 1 and 1000 are fine', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url }));
    try {
      for (let i = 0; i < 2; i++) assert.equal((await chat(gw)).status, 200);
      for (const n of ['0', '1001', '-1', 'x', '', '5x', '99999999999999999999']) {
        const r = await getJSON(`${gw.url}/admin/decisions?n=${n}`, { headers: auth });
        assert.equal(r.status, 400, `n=${n}: ${JSON.stringify(r.body)}`);
        assert.match(r.headers.get('content-type'), /^application\/json/);
        assert.equal(r.body.error.type, 'invalid_request_error', `n=${n}`);
        assert.equal(r.body.error.code, 'invalid_value', `n=${n}`);
        assert.equal(r.body.error.param, 'n', `n=${n}`);
        assert.equal(typeof r.body.error.message, 'string');
        assert.ok(!('decisions' in r.body), `n=${n}`);
      }
      const one = await getJSON(`${gw.url}/admin/decisions?n=1`, { headers: auth });
      assert.equal(one.status, 200);
      assert.equal(one.body.decisions.length, 1);
      const all = await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: auth });
      assert.equal(all.status, 200);
      assert.equal(all.body.decisions.length, 2);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

describe('what a reload cannot and can change', () => {
  test('a reload that changes listen keeps serving on the old address and logs that a restart is needed', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url }));
    // A free port to ask for.
    const srv = net.createServer();
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address();
    await new Promise((r) => srv.close(r));
    try {
      const file = readFileSync(gw.configFile, 'utf8');
      writeFileSync(gw.configFile, file.replace('listen: "127.0.0.1:0"', `listen: "127.0.0.1:${port}"`)
        .replace('ttft_budget_ms: 800', 'ttft_budget_ms: 900'));
      const r = await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: auth });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.match(gw.output(), new RegExp(`warn reload: listen changed to 127\\.0\\.0\\.1:${port}; that takes a restart`));
      // Still served on the old address, with the rest of the new file in force.
      assert.equal((await chat(gw)).status, 200);
      assert.equal((await getJSON(`${gw.url}/admin/state`, { headers: auth })).status, 200);
      // Nothing listens on the new one.
      const refused = await new Promise((res) => {
        const s = net.connect(port, '127.0.0.1');
        s.once('connect', () => { s.destroy(); res(false); });
        s.once('error', (e) => res(e.code === 'ECONNREFUSED'));
      });
      assert.ok(refused, `nothing listens on ${port}`);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('limits changed by a reload apply to new connections: max_body_bytes lowered, a new connection\'s large body gets 413', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
    const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url, extra: 'limits:\n  max_body_bytes: 65536' }));
    const body = JSON.stringify({ model: 'chat', max_tokens: 4, messages: [{ role: 'user', content: 'x'.repeat(8000) }] });
    const post = async () => {
      const c = await rawConnect(gw.port);
      try {
        return await c.request('POST', '/v1/chat/completions', { headers: { 'content-type': 'application/json' }, body });
      } finally {
        c.destroy();
      }
    };
    try {
      assert.equal((await post()).status, 200, 'under the first limit');
      const file = readFileSync(gw.configFile, 'utf8');
      writeFileSync(gw.configFile, file.replace('max_body_bytes: 65536', 'max_body_bytes: 4096'));
      assert.equal((await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: auth })).status, 200);
      const r = await post();
      assert.equal(r.status, 413, r.body);
      assert.equal(JSON.parse(r.body).error.type, 'invalid_request_error');
      assert.equal(await received(edge) + await received(cloud), 1, 'the refused body never reached a backend');
      // And raised again: served again.
      writeFileSync(gw.configFile, file);
      assert.equal((await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: auth })).status, 200);
      assert.equal((await post()).status, 200);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

describe('PII metrics end to end', () => {
  test('spillway_pii_entities_total counts by type and outcome: kept local, masked to the cloud, blocked', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edge.url}", model: edge-model, slots: 2 }
  - { name: cloud, tier: cloud, url: "${cloud.url}", model: cloud-model }
models:
  - { name: chat, backends: [edge, cloud], pii: local_only }
  - { name: cloudy, backends: [cloud] }
  - { name: strict, backends: [edge, cloud], pii: block }
routing:
  health_interval_ms: 200
pii:
  policy: mask
`);
    const say = (model, content) => ask(gw, model, { messages: [{ role: 'user', content }] });
    const pii = (m) => Object.fromEntries(Object.entries(m).filter(([k]) => k.startsWith('spillway_pii_entities_total{') && m[k] > 0));
    try {
      assert.deepEqual(pii(await metrics(gw)), {}, 'nothing counted before any request');
      const local = await say('chat', 'mail ann@example.com or call +31 6 12345678');
      assert.equal(local.status, 200);
      assert.equal(local.backend, 'edge');
      const masked = await say('cloudy', 'write to bob@example.org and carol@example.net');
      assert.equal(masked.status, 200);
      assert.equal(masked.backend, 'cloud');
      const blocked = await say('strict', 'numbers: +31 6 11112222, +31 6 33334444, +31 6 55556666');
      assert.equal(blocked.status, 400, blocked.text);
      assert.equal(JSON.parse(blocked.text).error.code, 'pii_blocked');
      // A request without PII counts nothing.
      assert.equal((await say('chat', 'no personal data here')).status, 200);

      assert.deepEqual(pii(await metrics(gw)), {
        'spillway_pii_entities_total{type="email",outcome="kept_local"}': 1,
        'spillway_pii_entities_total{type="phone",outcome="kept_local"}': 1,
        'spillway_pii_entities_total{type="email",outcome="masked_cloud"}': 2,
        'spillway_pii_entities_total{type="phone",outcome="blocked"}': 3,
      });
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

describe('one account of every finished request', () => {
  // /admin/state and /metrics count the same requests: every rejection code and
  // every PII outcome shows the same number in both, whichever part of the
  // gateway refused or served the request.
  test('/admin/state rejections and PII counts equal the /metrics counters, per code and outcome', async () => {
    const procs = [];
    const start = async (p) => { const x = await p; procs.push(x); return x; };
    try {
      const edge = await start(startLlmsim(['--model', 'edge-model', '--decode-tps', '0']));
      const cloud = await start(startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']));
      const broken = await start(startLlmsim(['--model', 'broken-model', '--error-rate', '1', '--error-status', '500']));
      const strict = await start(startLlmsim(['--model', 'strict-model', '--error-rate', '1', '--error-status', '400']));
      const gw = await start(startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: app, key: "sk-app" }
backends:
  - { name: edge, tier: local, url: "${edge.url}", model: edge-model, slots: 2 }
  - { name: strict, tier: local, url: "${strict.url}", model: strict-model, slots: 2 }
  - { name: cloud, tier: cloud, url: "${cloud.url}", model: cloud-model, price: { input_usd_per_mtok: 1, output_usd_per_mtok: 2 } }
  - { name: broken, tier: cloud, url: "${broken.url}", model: broken-model }
models:
  - { name: chat, backends: [edge] }
  - { name: picky, backends: [strict] }
  - { name: masked, backends: [cloud] }
  - { name: blocky, backends: [edge], pii: block }
  - { name: failing, backends: [broken] }
  - { name: cloudy, backends: [cloud] }
pii: { policy: mask }
routing:
  health_interval_ms: 200
  spend: { on_cap: shed }
`));
      const send = async (body, key = 'sk-app') => {
        const r = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: typeof body === 'string' ? body : JSON.stringify({ max_tokens: 8, ...body }),
        });
        const text = await r.text();
        return { status: r.status, code: r.status === 200 ? null : JSON.parse(text).error?.code, text };
      };
      const email = (m) => ({ model: m, messages: [{ role: 'user', content: 'mail alice.ops@example.org please' }] });
      assert.equal((await send(email('chat'))).status, 200);              // PII kept local
      assert.equal((await send(email('masked'))).status, 200);            // PII masked to the cloud
      assert.equal((await send(email('picky'))).status, 400);             // PII to a local backend that refuses it
      assert.equal((await send({ model: 'cloudy', messages: [{ role: 'user', content: 'hi' }] })).status, 200);
      assert.equal((await send(email('chat'), 'sk-wrong')).status, 401);
      assert.equal((await send('{"model": "chat", "messages": 5')).status, 400);
      assert.equal((await send({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] })).code, 'model_not_found');
      assert.equal((await send({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] })).code, 'model_not_found');
      assert.equal((await send(email('blocky'))).code, 'pii_blocked');
      assert.equal((await send({ model: 'failing', messages: [{ role: 'user', content: 'hi' }] })).code, 'all_backends_failed');
      const spent = (await state(gw)).spend_usd;
      assert.ok(spent > 0);
      assert.equal((await getJSON(`${gw.url}/admin/thresholds`, { method: 'PUT', headers: auth, body: JSON.stringify({ spend_cap_usd: spent / 2 }) })).status, 200);
      assert.equal((await send({ model: 'cloudy', messages: [{ role: 'user', content: 'hi' }] })).code, 'budget_exhausted');

      const st = await state(gw);
      const m = await metrics(gw);
      const metricRejections = {};
      for (const [k, v] of Object.entries(m)) {
        const code = /^spillway_rejections_total\{code="([^"]*)"\}$/.exec(k)?.[1];
        if (code !== undefined) metricRejections[code] = v;
      }
      // Not vacuous: every kind of rejection above was counted.
      for (const code of ['model_not_found', 'pii_blocked', 'all_backends_failed', 'budget_exhausted'])
        assert.ok(metricRejections[code] >= 1, `${code} in ${JSON.stringify(metricRejections)}`);
      assert.equal(metricRejections.model_not_found, 2);
      assert.equal(Object.values(metricRejections).reduce((a, b) => a + b, 0), 7, JSON.stringify(metricRejections));
      // Per code, both views give the same number.
      for (const code of new Set([...Object.keys(metricRejections), ...Object.keys(st.rejections)]))
        assert.equal(st.rejections[code] ?? 0, metricRejections[code] ?? 0,
          `rejections{code="${code}"}: /admin/state ${JSON.stringify(st.rejections)}, /metrics ${JSON.stringify(metricRejections)}`);

      // PII per outcome and type: the same numbers too.
      const metricPii = {};
      for (const [k, v] of Object.entries(m)) {
        const l = /^spillway_pii_entities_total\{type="([^"]*)",outcome="([^"]*)"\}$/.exec(k);
        if (l) metricPii[`${l[2]}/${l[1]}`] = v;
      }
      const statePii = {};
      for (const [outcome, types] of Object.entries(st.pii))
        for (const [type, n] of Object.entries(types)) if (n) statePii[`${outcome}/${type}`] = n;
      assert.ok(metricPii['kept_local/email'] >= 1 && metricPii['masked_cloud/email'] >= 1 && metricPii['blocked/email'] >= 1,
        JSON.stringify(metricPii));
      for (const k of new Set([...Object.keys(metricPii), ...Object.keys(statePii)]))
        assert.equal(statePii[k] ?? 0, metricPii[k] ?? 0,
          `pii ${k}: /admin/state ${JSON.stringify(statePii)}, /metrics ${JSON.stringify(metricPii)}`);
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });
});

describe('the shipped Grafana dashboard', () => {
  // docs/grafana/spillway.json queries Prometheus by metric name; a panel whose
  // metric Spillway does not export stays empty without any error.
  test('every spillway_* metric in docs/grafana/spillway.json expressions is exported on /metrics', async () => {
    const procs = [];
    try {
      const edge = await startLlmsim(['--model', 'edge-model']);
      procs.push(edge);
      const cloud = await startLlmsim(['--model', 'cloud-model']);
      procs.push(cloud);
      // rpm and tpm on the cloud: the bucket gauges exist only for backends with limits.
      const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url })
        .replace('output_usd_per_mtok: 2 } }', 'output_usd_per_mtok: 2 }, rpm: 600, tpm: 100000 }'));
      procs.push(gw);
      const r = await chat(gw);
      assert.equal(r.status, 200, await r.text());

      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const types = {};
      const sampled = new Set();
      for (const line of text.split('\n')) {
        const t = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
        if (t) types[t[1]] = t[2];
        const s = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
        if (s && !line.startsWith('#')) sampled.add(s[1]);
      }

      // Every "expr" string anywhere in the dashboard JSON (panels, targets, templating).
      const dash = JSON.parse(readFileSync(new URL('../../docs/grafana/spillway.json', import.meta.url), 'utf8'));
      const exprs = [];
      (function walk(v) {
        if (Array.isArray(v)) v.forEach(walk);
        else if (v && typeof v === 'object')
          for (const [k, x] of Object.entries(v)) { if (k === 'expr' && typeof x === 'string') exprs.push(x); else walk(x); }
      })(dash);
      assert.ok(exprs.length >= 10, `expected the dashboard's expressions, found ${exprs.length}`);

      const used = new Set();
      for (const e of exprs)
        for (const [name] of e.matchAll(/spillway_[a-z_]+/g)) {
          const base = name.replace(/_(bucket|sum|count)$/, '');
          used.add(base !== name && types[base] === 'histogram' ? base : name);
        }
      assert.ok(used.size >= 10, `expected many metric names, got ${[...used]}`);
      const missing = [...used].filter((n) => !(n in types) && !sampled.has(n)).sort();
      assert.deepEqual(missing, [], `metrics the Grafana dashboard queries but /metrics lacks: ${missing.join(', ')}`);
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });
});

describe('the shipped Grafana dashboard links decisions to traces', () => {
  // docs/operations.md "From a decision to its trace in Grafana": a table of
  // decision-log lines from Loki whose trace_id cells open the trace.
  test('the decisions table links each trace_id to its trace (Tempo or Jaeger data source variable)', () => {
    const dash = JSON.parse(readFileSync(new URL('../../docs/grafana/spillway.json', import.meta.url), 'utf8'));
    const vars = Object.fromEntries(dash.templating.list.map((v) => [v.name, v]));
    assert.equal(vars.loki?.type, 'datasource');
    assert.equal(vars.loki.query, 'loki');
    assert.equal(vars.traces?.type, 'datasource');
    assert.ok(['tempo', 'jaeger'].includes(vars.traces.query));
    assert.equal(vars.decision_log?.type, 'textbox');
    const ids = dash.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const table = dash.panels.find((p) => p.type === 'table' && p.datasource?.type === 'loki');
    assert.ok(table, 'a table of decisions read from Loki');
    assert.equal(table.datasource.uid, '${loki}');
    const expr = table.targets[0].expr;
    assert.match(expr, /^\$decision_log /, 'the configured stream selector');
    assert.match(expr, /\| json .*trace_id="trace_id"/, 'trace_id extracted from the JSON line');
    for (const f of ['request_id', 'decision', 'backend', 'reason']) assert.match(expr, new RegExp(`${f}="${f}"`));
    const link = table.fieldConfig.overrides
      .find((o) => o.matcher.id === 'byName' && o.matcher.options === 'trace_id')
      ?.properties.find((pr) => pr.id === 'links')?.value[0];
    assert.ok(link, 'the trace_id column has a data link');
    assert.equal(link.internal.datasourceUid, '${traces}');
    assert.equal(link.internal.query.query, '${__value.raw}');
    // the panel sits below every other one
    const bottom = Math.max(...dash.panels.filter((p) => p !== table).map((p) => p.gridPos.y + p.gridPos.h));
    assert.ok(table.gridPos.y >= bottom - 1);
  });
});

// A port nothing listens on: bound, then closed.
async function deadUrl() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}`;
}

describe('the shipped Prometheus alert rules', () => {
  // docs/prometheus/alerts.yml: an alert over a metric Spillway does not
  // export never fires, silently. Every spillway_* name in the file (rules
  // and annotations) must be in a live scrape.
  test('every spillway_* metric named in docs/prometheus/alerts.yml is exported on /metrics', async () => {
    const procs = [];
    try {
      const edge = await startLlmsim(['--model', 'edge-model']);
      procs.push(edge);
      const cloud = await startLlmsim(['--model', 'cloud-model']);
      procs.push(cloud);
      const gw = await startSpillway(yaml({ edge: edge.url, cloud: cloud.url }));
      procs.push(gw);
      const r = await chat(gw);
      assert.equal(r.status, 200, await r.text());
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const exported = new Set();
      for (const line of text.split('\n')) {
        // A declared family counts (a counter has no sample until it first moves).
        const t = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
        if (t) exported.add(t[1]);
        if (t && t[2] === 'histogram') for (const suf of ['_bucket', '_sum', '_count']) exported.add(t[1] + suf);
        const s = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
        if (s && !line.startsWith('#')) exported.add(s[1]);
      }
      const rules = readFileSync(new URL('../../docs/prometheus/alerts.yml', import.meta.url), 'utf8');
      const used = new Set([...rules.matchAll(/spillway_[a-z_]+/g)].map(([n]) => n));
      assert.ok(used.size >= 8, `expected the alerts' metric names, got ${[...used]}`);
      for (const alert of ['SpillwayHighSpillRate', 'SpillwayTTFTBudgetMisses', 'SpillwayBreakerOpen', 'SpillwaySpendCapNear', 'SpillwayConfigReloadFailed', 'SpillwayStateDegraded'])
        assert.match(rules, new RegExp(`alert: ${alert}\\n`));
      const missing = [...used].filter((n) => !exported.has(n)).sort();
      assert.deepEqual(missing, [], `metrics docs/prometheus/alerts.yml uses but /metrics lacks: ${missing.join(', ')}`);
      // The reload alert's label value exists from the start.
      assert.match(text, /^spillway_config_reloads_total\{result="failed"\} 0$/m);
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });
});

describe('the traps of a first run', () => {
  test('a backend url written with /v1 or /v1/ (as the OpenAI and llama.cpp docs write it) serves, with a start-up notice of what was understood', async () => {
    const procs = [];
    try {
      const edge = await startLlmsim(['--model', 'edge-model']);
      procs.push(edge);
      const cloud = await startLlmsim(['--model', 'cloud-model']);
      procs.push(cloud);
      const gw = await startSpillway(config({
        backends: { edge: { url: `${edge.url}/v1`, slots: 2 }, cloud: { url: `${cloud.url}/v1/` } },
        models: { local: ['edge'], remote: ['cloud'] },
      }));
      procs.push(gw);
      for (const [model, sim] of [['local', edge], ['remote', cloud]]) {
        const r = await ask(gw, model);
        assert.equal(r.status, 200, `${model}: ${r.text}`);
        assert.equal((await getJSON(`${sim.url}/admin/received?n=1`)).body.requests.length, 1);
      }
      assert.match(gw.output(), new RegExp(`backends\\[0\\]\\.url \\(edge\\): read as "${edge.url}"`));
      assert.match(gw.output(), new RegExp(`backends\\[1\\]\\.url \\(cloud\\): read as "${cloud.url}"`));
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });

  test('a backend that is unreachable, answers 404 (url prefix) or does not list its model is named at start-up, in the log and in /admin/state last_error', async () => {
    const procs = [];
    try {
      const sim = await startLlmsim(['--model', 'edge-model']);
      procs.push(sim);
      const dead = await deadUrl();
      const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: good, tier: local, url: "${sim.url}", model: edge-model }
  - { name: gone, tier: local, url: "${dead}", model: edge-model }
  - { name: prefixed, tier: cloud, url: "${sim.url}/api", model: edge-model }
  - { name: unlisted, tier: cloud, url: "${sim.url}", model: gpt-nope }
models:
  - { name: chat, backends: [good] }
  - { name: broken, backends: [gone] }
`);
      procs.push(gw);
      const warned = (name) => gw.output().split('\n').find((l) => / warn /.test(l) && l.includes(`backend ${name} (`));
      await waitFor(() => warned('gone') && warned('prefixed') && warned('unlisted'), { timeout: 10000, what: 'three start-up warnings' });
      assert.match(warned('gone'), /GET \/v1\/models: .*(connect|refused)/i);
      assert.match(warned('prefixed'), /404 from GET \/api\/models.*url must be the server's root/);
      assert.match(warned('unlisted'), /model "gpt-nope" is not among the 1 model\(s\) GET \/v1\/models lists \(edge-model\)/);
      assert.equal(warned('good'), undefined);

      const st = Object.fromEntries((await state(gw)).backends.map((b) => [b.name, b.last_error]));
      assert.equal(st.good, null);
      assert.match(st.gone, /connect/i);
      assert.match(st.prefixed, /^404 from GET \/api\/models/);
      assert.match(st.unlisted, /gpt-nope/);

      // The 503 a client then gets names the backend, its state and why.
      await waitFor(async () => (await backendState(gw, 'gone')).health === 'down', { what: 'gone marked down' });
      const r = await getJSON(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'broken', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 503);
      assert.equal(r.body.error.code, 'all_backends_failed');
      assert.match(r.body.error.message, /\(gone: down, last error: GET \/v1\/models: .*connect/i);
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });

  test('a reload checks the backends again: a URL changed to a wrong prefix is named in the log and /admin/state', async () => {
    const procs = [];
    try {
      const sim = await startLlmsim(['--model', 'edge-model']);
      procs.push(sim);
      const yaml = (url) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${url}", model: edge-model }
models:
  - { name: chat, backends: [edge] }
`;
      const gw = await startSpillway(yaml(sim.url));
      procs.push(gw);
      assert.equal((await backendState(gw, 'edge')).last_error, null);
      writeFileSync(gw.configFile, yaml(`${sim.url}/api`));
      gw.proc.kill('SIGHUP');
      await waitFor(() => / warn .*backend edge \(.*\/api\) failed its start-up check/.test(gw.output()), { timeout: 10000, what: 'the reloaded backend checked' });
      assert.match((await backendState(gw, 'edge')).last_error, /^404 from GET \/api\/models/);
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });

  test('a backend that passed its start-up check but then fails requests shows the failure as last_error; a success clears it', async () => {
    const procs = [];
    try {
      const edge = await startLlmsim(['--model', 'edge-model']);
      procs.push(edge);
      const gw = await startSpillway(config({ backends: { edge: { url: edge.url, slots: 2 } }, models: { chat: ['edge'] } }));
      procs.push(gw);
      await waitFor(() => /backend edge \(.*passed its start-up check/.test(gw.output()), { what: 'the start-up check' });
      assert.equal((await backendState(gw, 'edge')).last_error, null);
      await setFaults(edge, { error_rate: 1, error_status: 500 });
      const failed = await ask(gw, 'chat');
      assert.equal(failed.status, 503);
      assert.match(JSON.parse(failed.text).error.message, /edge: status 500.*GET \/admin\/state \(each backend's last_error\)/);
      assert.match((await backendState(gw, 'edge')).last_error, /answered 500/);
      await setFaults(edge, null);
      assert.equal((await ask(gw, 'chat')).status, 200);
      assert.equal((await backendState(gw, 'edge')).last_error, null);
    } finally {
      for (const p of procs.reverse()) await p.stop();
    }
  });

  test('401 for a wrong API key says how to send a right one', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const gw = await startSpillway(config({ backends: { edge: { url: edge.url, slots: 2 } }, models: { chat: ['edge'] } })
      .replace('backends:', 'keys:\n  - { name: app, key: "sk-right" }\nbackends:'));
    try {
      const r = await getJSON(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-wrong' },
        body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 401);
      assert.equal(r.body.error.code, 'invalid_api_key');
      assert.match(r.body.error.message, /keys: in the gateway's config as 'Authorization: Bearer KEY'/);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });
});

// A stand-in for systemd: owns a unix datagram socket (Node has none, so
// python3 holds it) and prints each notification as one JSON line; on
// READY=1 it first tries to connect to the gateway's port, so the line says
// whether the port was accepting when readiness was announced.
// A stand-in for systemd: owns a unix datagram socket (Node has none, so
// python3 holds it) and prints each notification as one JSON line. On
// READY=1 it stops the sender (its pid from SO_PASSCRED), tries to connect to
// the gateway's port and lets the sender go on: the line says whether the
// port was accepting when readiness was announced.
const NOTIFY_LISTENER = `
import json, os, signal, socket, struct, sys
path, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
print(json.dumps({"bound": True}), flush=True)
while True:
    data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    msg = data.decode()
    pid = next((struct.unpack("3i", d[:12])[0] for l, t, d in anc if t == socket.SCM_CREDENTIALS), 0)
    accepting = None
    if "READY=1" in msg.split("\\n") and pid:
        os.kill(pid, signal.SIGSTOP)
        c = socket.socket()
        try:
            c.connect(("127.0.0.1", port)); accepting = True
        except OSError:
            accepting = False
        c.close()
        os.kill(pid, signal.SIGCONT)
    print(json.dumps({"msg": msg, "accepting": accepting, "pid": pid}), flush=True)
`;

describe('running under a service manager', () => {
  test('NOTIFY_SOCKET: READY=1 once the port accepts, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 on SIGTERM', async () => {
    const procs = [];
    const dir = tempDir('spillway-notify-');
    const sock = join(dir, 'notify.sock');
    const port = await new Promise((res) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
    const listener = spawn('python3', ['-u', '-c', NOTIFY_LISTENER, sock, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const got = [];
    let err = '';
    let buf = '';
    listener.stdout.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) got.push(JSON.parse(buf.slice(0, i)));
    });
    listener.stderr.on('data', (d) => { err += d; });
    try {
      await waitFor(() => got.some((m) => m.bound), { timeout: 10000, what: `the notify listener (${err})` });
      const edge = await startLlmsim(['--model', 'edge-model']);
      procs.push(edge);
      const gw = await startSpillway(config({ backends: { edge: { url: edge.url, slots: 2 } }, models: { chat: ['edge'] } })
        .replace('listen: "127.0.0.1:0"', `listen: "127.0.0.1:${port}"`), { env: { NOTIFY_SOCKET: sock } });
      procs.push(gw);
      const msgs = () => got.filter((m) => m.msg !== undefined);
      const ready = await waitFor(() => msgs().find((m) => /^READY=1$/m.test(m.msg)), { timeout: 10000, what: 'READY=1' });
      assert.equal(ready.pid, gw.proc.pid, 'READY=1 comes from the gateway itself');
      assert.equal(ready.accepting, true, 'READY=1 was sent before the port accepted connections');
      assert.equal(msgs().length, 1, JSON.stringify(msgs()));

      gw.proc.kill('SIGHUP');
      await waitFor(() => msgs().length >= 3, { timeout: 10000, what: 'RELOADING=1 and READY=1 after SIGHUP' });
      assert.match(msgs()[1].msg, /^RELOADING=1\nMONOTONIC_USEC=\d+$/);
      assert.match(msgs()[2].msg, /^READY=1$/m);
      assert.match(gw.output(), /reloaded /);

      gw.proc.kill('SIGTERM');
      await waitFor(() => msgs().length >= 4, { timeout: 10000, what: 'STOPPING=1 after SIGTERM' });
      assert.equal(msgs()[3].msg, 'STOPPING=1');
      await gw.exited;
    } finally {
      for (const p of procs.reverse()) await p.stop();
      listener.kill();
    }
  });
});
