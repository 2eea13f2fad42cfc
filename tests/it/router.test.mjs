// The router end to end, one pattern per test: real spillway in front of real
// llmsim processes, the official OpenAI SDK and raw fetch as clients. Every
// wait is a bounded wait on a condition.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml, withProcs, edgeAndCloud } from './lib/gateway.mjs';
import { assertNoLeak } from './lib/leak.mjs';

const body = (model, extra = {}) => JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hello there' }], ...extra });

async function chat(gw, model, { headers = {}, extra = {} } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body(model, extra),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* an SSE stream or garbage */ }
  return {
    status: r.status, json, text,
    backend: r.headers.get('x-spillway-backend'), tier: r.headers.get('x-spillway-tier'),
    reason: r.headers.get('x-spillway-reason'), retryAfter: r.headers.get('retry-after'),
    requestId: r.headers.get('x-request-id'),
  };
}

const state = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
const backendState = async (gw, name) => (await state(gw)).backends.find((b) => b.name === name);
const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
const simStats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;
// The decision-log line of one request, from the in-memory ring.
const decision = async (gw, requestId) => (await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: { authorization: `Bearer ${ADMIN}` } }))
  .body.decisions.find((d) => d.request_id === requestId);

describe('overflow: spill only what the local box cannot start within the TTFT budget', () => {
  test('a spike against a 2-slot box: the baseline stays local, only the overflow goes to the cloud', () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, {
      edgeArgs: ['--slots', '2', '--decode-tps', '20'],
      edge: { slots: 2 },
      routing: '  ttft_budget_ms: 800',
    });
    const results = await Promise.all(Array.from({ length: 8 }, () => chat(gw, 'chat', { extra: { max_tokens: 40 } })));
    for (const r of results) assert.equal(r.status, 200, r.text);
    const local = results.filter((r) => r.backend === 'edge');
    const spilled = results.filter((r) => r.backend === 'cloud');
    assert.equal(local.length, 2, 'exactly the two slots of the local box');
    assert.ok(local.every((r) => r.reason === 'baseline'));
    assert.equal(spilled.length, 6);
    assert.ok(spilled.every((r) => r.reason === 'overflow' && r.tier === 'cloud'));
    // The local box never had to queue: Spillway kept its queue to itself.
    const s = await simStats(edge);
    assert.equal(s.status['200'], 2);
    assert.equal(s.queued, 0);
    // After the spike the next request is local again.
    const after = await chat(gw, 'chat');
    assert.equal(after.backend, 'edge');
    assert.equal(after.reason, 'baseline');
  }));

  test('a request queued locally moves to the cloud once its estimated first token falls behind the TTFT budget', () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, {
      edgeArgs: ['--slots', '1', '--decode-tps', '20'],
      edge: { slots: 1 },
      routing: '  ttft_budget_ms: 1500',
    });
    // One short answer teaches the router this box's service time (8 tokens
    // at 20/s: well under a second), so waiting behind one request fits the budget.
    const warm = await chat(gw, 'chat', { extra: { stream: true, max_tokens: 8 } });
    assert.equal(warm.backend, 'edge');
    const est = (await backendState(gw, 'edge')).est_ttft_ms;
    assert.ok(est < 500, `idle estimate ${est} ms`);
    // A long request (100 tokens: 5 s) holds the only slot.
    const long = chat(gw, 'chat', { extra: { max_tokens: 100 } });
    await waitFor(async () => (await simStats(edge)).in_flight === 1, { what: 'edge busy' });
    // The next one is queued locally: its estimated start is within the budget...
    const queued = chat(gw, 'chat');
    await waitFor(async () => (await backendState(gw, 'edge')).queued === 1, { what: 'the request queued locally' });
    // ...but the slot does not free as estimated; once its first token would
    // come after 1.5 s it leaves the queue for the cloud.
    const moved = await queued;
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.backend, 'cloud');
    assert.equal(moved.tier, 'cloud');
    assert.equal(moved.reason, 'overflow');
    const s = await simStats(edge);
    assert.equal(s.in_flight, 1, 'moved while the long request still held the slot');
    assert.equal(s.chat_requests, 2, 'the moved request never reached the local box');
    assert.equal((await backendState(gw, 'edge')).queued, 0);
    const d = await decision(gw, moved.requestId);
    assert.deepEqual(d.attempts.map((a) => [a.backend, a.outcome]), [['edge', 'skipped'], ['cloud', 'ok']]);
    assert.equal(d.reason, 'overflow');
    assert.equal((await long).backend, 'edge');
  }));
});

describe('circuit breaker', () => {
  const COOLDOWN_MS = 4000;
  test('a local crash opens the breaker: the local box is not attempted at all while it is open; traffic comes back after recovery', () => withProcs(async (track) => {
    const port = await (async () => { const s = await startLlmsim(); const p = s.port; await s.stop(); return p; })();
    let edge = await startLlmsim(['--port', String(port), '--model', 'edge-model']);
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'edge', tier: 'local', url: `http://127.0.0.1:${port}`, model: 'edge-model', slots: 2 },
        { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
      ],
      models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
      routing: `  breaker: { failures: 2, window_ms: 10000, cooldown_ms: ${COOLDOWN_MS} }`,
    })));
    try {
      assert.equal((await chat(gw, 'chat')).backend, 'edge');
      // The breaker opens on failures after the kill, so it stays open at
      // least until killedAt + COOLDOWN_MS: what answered before then was
      // decided while it was open, however slow the machine (what came later
      // may have been the half-open probe).
      const killedAt = Date.now();
      const surelyOpen = () => Date.now() < killedAt + COOLDOWN_MS;
      edge.proc.kill('SIGKILL');
      await edge.exited;
      // Every request is still answered, by the cloud, while the breaker opens.
      for (let i = 0; i < 3; i++) {
        const r = await chat(gw, 'chat');
        assert.equal(r.status, 200);
        assert.equal(r.backend, 'cloud');
      }
      await waitFor(async () => (await backendState(gw, 'edge')).breaker === 'open', { what: 'edge breaker open' });
      // Open: the request goes straight to the cloud, no attempt on the local box.
      const during = await chat(gw, 'chat');
      assert.equal(during.backend, 'cloud');
      assert.deepEqual((await decision(gw, during.requestId)).attempts.map((a) => a.backend), ['cloud']);

      // The box is back (and its health check passes), but the breaker is
      // still open: it gets no request until the cooldown ends.
      edge = await startLlmsim(['--port', String(port), '--model', 'edge-model']);
      await waitFor(async () => (await backendState(gw, 'edge')).health === 'up', { what: 'edge healthy again' });
      const st = await backendState(gw, 'edge');
      if (surelyOpen()) assert.equal(st.breaker, 'open');
      let probes = 0, whileOpen = 0;
      for (let i = 0; i < 3 && !probes; i++) {
        const r = await chat(gw, 'chat');
        assert.equal(r.status, 200);
        if (surelyOpen()) {
          whileOpen++;
          assert.equal(r.backend, 'cloud', 'the breaker is open');
          assert.equal(r.reason, 'breaker');
        } else if (r.backend === 'edge') {
          probes++; // the cooldown is over: the half-open probe
        }
      }
      console.log(`${whileOpen} of the requests after the box came back were sent while its breaker was surely open`);
      assert.equal((await received(edge)).length, probes, 'no request reached the local box while its breaker was open');

      // After the cooldown a probe goes through and the breaker closes again.
      await waitFor(async () => (await chat(gw, 'chat')).backend === 'edge', { timeout: 10000, every: 100, what: 'traffic back on edge' });
      assert.equal((await backendState(gw, 'edge')).breaker, 'closed');
      const back = await chat(gw, 'chat');
      assert.equal(back.backend, 'edge');
      assert.equal(back.reason, 'baseline');
    } finally {
      await edge.stop();
    }
  }));

  test('a cloud 429 storm opens that breaker and traffic moves to the secondary cloud', () => withProcs(async (track) => {
    const a = await track(startLlmsim(['--model', 'a', '--error-rate', '1', '--error-status', '429', '--retry-after-s', '30']));
    const b = await track(startLlmsim(['--model', 'b']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'primary', tier: 'cloud', url: a.url, model: 'a' },
        { name: 'secondary', tier: 'cloud', url: b.url, model: 'b' },
      ],
      models: [{ name: 'chat', backends: ['primary', 'secondary'] }],
      routing: '  breaker: { failures: 2, window_ms: 10000, cooldown_ms: 500 }',
    })));
    for (let i = 0; i < 2; i++) {
      const r = await chat(gw, 'chat');
      assert.equal(r.status, 200);
      assert.equal(r.backend, 'secondary');
      assert.equal(r.reason, 'fallback');
    }
    assert.equal((await backendState(gw, 'primary')).breaker, 'open');
    const r = await chat(gw, 'chat');
    assert.equal(r.backend, 'secondary');
    assert.equal(r.reason, 'breaker');
    // Retry-After (30 s) holds the breaker open beyond its 500 ms cooldown: no more requests hit the storm.
    assert.equal((await received(a)).length, 2);
  }));
});

describe('warm/cold endpoints', () => {
  test('a cold local box: the cloud answers first, local once the background warm-up finished', () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, { edgeArgs: ['--cold-start-ms', '1500'], edge: { slots: 2 } });
    await waitFor(async () => ['cold', 'warming'].includes((await backendState(gw, 'edge')).health), { what: 'edge seen cold' });
    const first = await chat(gw, 'chat', { headers: { 'x-request-timeout-ms': '3000' } });
    assert.equal(first.status, 200);
    assert.equal(first.backend, 'cloud');
    assert.equal(first.reason, 'cold_start');
    // The warm-up Spillway started loads the model; then local takes over.
    await waitFor(async () => (await backendState(gw, 'edge')).health === 'up', { timeout: 6000, what: 'edge warm' });
    const later = await chat(gw, 'chat');
    assert.equal(later.backend, 'edge');
    assert.equal(later.reason, 'baseline');
  }));
});

describe('latency routing', () => {
  test('a slow local endpoint is marked degraded and skipped, and recovers with hysteresis', () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, {
      edgeArgs: ['--latency-ms', '300'],
      edge: { slots: 4 },
      healthMs: 300,
      routing: '  ttft_budget_ms: 5000\n  latency: { window_ms: 2000, degrade_ms: 200, recover_ms: 150, dwell_ms: 500 }',
    });
    // Slow first tokens on local traffic push the window average over 200 ms
    // (streamed: a non-streamed answer's first byte is its last, no TTFT).
    const streamed = { extra: { stream: true } };
    await waitFor(async () => (await chat(gw, 'chat', streamed)).backend === 'cloud', { timeout: 8000, every: 1, what: 'edge skipped' });
    assert.equal((await backendState(gw, 'edge')).health, 'degraded');
    const r = await chat(gw, 'chat', streamed);
    assert.equal(r.backend, 'cloud');
    assert.equal(r.reason, 'latency');
    // The fault is gone; only fast health checks feed the window now. It
    // recovers once the average stayed below 150 ms for the dwell time.
    assert.equal((await fetch(`${edge.url}/admin/faults`, { method: 'DELETE' })).status, 200);
    await waitFor(async () => (await backendState(gw, 'edge')).health === 'up', { timeout: 8000, every: 50, what: 'edge recovered' });
    assert.equal((await chat(gw, 'chat')).backend, 'edge');
  }));
});

describe('spend cap: a hard ceiling on cloud spend, with the chosen policy', () => {
  // One request is reserved at about 100 tokens (a token per body byte, the
  // template, max_tokens 8): 0.04 USD, within the 0.05 cap; it costs 0.006.
  const pricey = (cloud) => ({ name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model', price: { raw: '{ input_usd_per_mtok: 400, output_usd_per_mtok: 400 }' } });

  test('shed: at the cap cloud-bound requests get 429 with Retry-After; local traffic is never blocked', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'edge', tier: 'local', url: edge.url, model: 'edge-model' }, pricey(cloud)],
      models: [{ name: 'cloudy', backends: ['cloud'] }, { name: 'local', backends: ['edge'] }],
      routing: '  spend: { cap_usd: 0.05, on_cap: shed, shed_retry_after_s: 42 }',
    })));
    let shed = null;
    for (let i = 0; i < 10 && !shed; i++) {
      const r = await chat(gw, 'cloudy');
      if (r.status === 429) shed = r;
      else assert.equal(r.backend, 'cloud');
    }
    assert.ok(shed, 'the cap was reached within 10 requests');
    assert.equal(shed.json.error.code, 'budget_exhausted');
    assert.equal(shed.retryAfter, '42');
    const st = await state(gw);
    assert.ok(st.spend_usd > 0 && st.spend_usd <= 0.05 + 1e-9, `spend ${st.spend_usd} stays under the cap`);
    const local = await chat(gw, 'local');
    assert.equal(local.status, 200);
    assert.equal(local.backend, 'edge');
  }));

  test('degrade: at the cap requests go to the named smaller local model', () => withProcs(async (track) => {
    const small = await track(startLlmsim(['--model', 'small-model']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'small', tier: 'local', url: small.url, model: 'small-model' }, pricey(cloud)],
      models: [{ name: 'cloudy', backends: ['cloud'] }],
      routing: '  spend: { cap_usd: 0.05, on_cap: degrade, degrade_to: small }',
    })));
    let degraded = null;
    for (let i = 0; i < 10 && !degraded; i++) {
      const r = await chat(gw, 'cloudy');
      assert.equal(r.status, 200);
      if (r.backend === 'small') degraded = r;
    }
    assert.ok(degraded, 'degraded within 10 requests');
    assert.equal(degraded.reason, 'budget');
    assert.equal(degraded.tier, 'local');
  }));

  test('keep_local: at the cap overflow waits for the local box instead of spending', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '50']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 1 }, pricey(cloud)],
      models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
      routing: '  ttft_budget_ms: 100\n  spend: { cap_usd: 0.05, on_cap: keep_local }',
    })));
    // Keep the single slot busy so new requests would overflow.
    const long = chat(gw, 'chat', { extra: { max_tokens: 100 } });
    await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'edge busy' });
    let kept = null;
    for (let i = 0; i < 10 && !kept; i++) {
      const r = await chat(gw, 'chat');
      assert.equal(r.status, 200, r.text);
      if (r.backend === 'edge') kept = r;
      else assert.equal(r.reason, 'overflow');
    }
    assert.ok(kept, 'kept local within 10 requests');
    assert.equal(kept.reason, 'budget');
    await long;
  }));
});

describe('privacy first and the emergency switch', () => {
  test('a sensitive request never goes to the cloud, until an emergency is declared: then only masked', () => withProcs(async (track) => {
    const cloud = await track(startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'edge', tier: 'local', url: 'http://127.0.0.1:9', model: 'edge-model' },
        { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
      ],
      models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
    })));
    const sensitive = { 'x-spillway-sensitive': 'true' };
    const secret = 'mail me at jane.doe@example.com';
    const r = await chat(gw, 'chat', { headers: sensitive, extra: { messages: [{ role: 'user', content: secret }], max_tokens: 100 } });
    assert.equal(r.status, 503);
    assert.equal(r.json.error.code, 'privacy_restricted');
    assert.equal((await received(cloud)).length, 0);

    // The admin API wants its own key.
    const denied = await getJSON(`${gw.url}/admin/emergency`, { method: 'POST', body: '{"declared":true}' });
    assert.equal(denied.status, 401);
    const ok = await getJSON(`${gw.url}/admin/emergency`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: true, reason: 'edge box on fire' }),
    });
    assert.equal(ok.status, 200);
    const st = await state(gw);
    assert.equal(st.emergency, true);
    assert.equal(st.emergency_reason, 'edge box on fire');

    // In the emergency the local box being down lets it go to the cloud, masked, and restored on the way back.
    const again = await chat(gw, 'chat', { headers: sensitive, extra: { messages: [{ role: 'user', content: secret }], max_tokens: 100 } });
    assert.equal(again.status, 200);
    assert.equal(again.backend, 'cloud');
    assert.equal(again.reason, 'emergency');
    assert.equal(again.json.choices[0].message.content, secret);
    const sent = JSON.stringify((await received(cloud)).map((q) => q.body));
    assertNoLeak(sent, ['jane.doe@example.com'], { baseline: 'mail me at ' });
    assert.match(sent, /\[EMAIL_1\]/);

    // Ending the emergency closes that door again.
    await getJSON(`${gw.url}/admin/emergency`, {
      method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: false }),
    });
    assert.equal((await chat(gw, 'chat', { headers: sensitive })).status, 503);
  }));

  test('capability: a request the local model cannot serve and that may not leave gets a structured rejection', () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, { edge: { max_context_tokens: 64 } });
    const big = { max_tokens: 500 };
    const spilled = await chat(gw, 'chat', { extra: big });
    assert.equal(spilled.backend, 'cloud');
    assert.equal(spilled.reason, 'capacity');
    const refused = await chat(gw, 'chat', { extra: big, headers: { 'x-spillway-allow-cloud': 'false' } });
    assert.equal(refused.status, 422);
    assert.equal(refused.json.error.code, 'local_capacity_insufficient');
  }));
});

describe('provider limits, per-key budgets, latency-critical requests, rejection counters', () => {
  test('a cloud whose token bucket is empty is skipped, not failed', () => withProcs(async (track) => {
    const a = await track(startLlmsim(['--model', 'a']));
    const b = await track(startLlmsim(['--model', 'b']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'primary', tier: 'cloud', url: a.url, model: 'a', rpm: 1 },
        { name: 'secondary', tier: 'cloud', url: b.url, model: 'b' },
      ],
      models: [{ name: 'chat', backends: ['primary', 'secondary'] }],
    })));
    const first = await chat(gw, 'chat');
    assert.equal(first.backend, 'primary');
    const second = await chat(gw, 'chat');
    assert.equal(second.backend, 'secondary');
    assert.equal(second.reason, 'fallback');
    assert.equal((await received(a)).length, 1, 'the provider never saw a request over its limit');
    assert.equal((await backendState(gw, 'primary')).breaker, 'closed', 'skipping is not a failure');
  }));

  test('a key with its own TTFT budget spills sooner; latency-critical requests take the fastest start; an invalid latency-critical value is a 400', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '20']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      keys: 'keys:\n  - { name: patient, key: "sk-patient", ttft_budget_ms: 60000 }\n  - { name: eager, key: "sk-eager", ttft_budget_ms: 50 }',
      backends: [
        { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 1 },
        { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
      ],
      models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
    })));
    const long = chat(gw, 'chat', { headers: { authorization: 'Bearer sk-patient' }, extra: { max_tokens: 60 } });
    await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'edge busy' });
    // Same load, two budgets: the patient key queues locally, the eager one spills.
    const eager = await chat(gw, 'chat', { headers: { authorization: 'Bearer sk-eager' } });
    assert.equal(eager.backend, 'cloud');
    assert.equal(eager.reason, 'overflow');
    const patient = chat(gw, 'chat', { headers: { authorization: 'Bearer sk-patient' } });
    await waitFor(async () => (await backendState(gw, 'edge')).queued === 1, { what: 'patient request queued locally' });
    // the flag takes the values the privacy headers take (yes/no, on/off ...)
    const critical = await chat(gw, 'chat', { headers: { authorization: 'Bearer sk-patient', 'x-spillway-latency-critical': 'Yes' } });
    assert.equal(critical.backend, 'cloud');
    assert.equal(critical.reason, 'latency');
    // and anything else is a 400 naming the header, not a silent "no"
    const typo = await chat(gw, 'chat', { headers: { authorization: 'Bearer sk-patient', 'x-spillway-latency-critical': 'urgent' } });
    assert.equal(typo.status, 400, typo.text);
    assert.equal(typo.json.error.code, 'invalid_header');
    assert.equal(typo.json.error.param, 'X-Spillway-Latency-Critical');
    assert.equal((await patient).backend, 'edge');
    await long;
  }));

  test('structured rejections are counted per code', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model']));
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', max_context_tokens: 64 }],
      models: [{ name: 'chat', backends: ['edge'] }],
    })));
    for (let i = 0; i < 3; i++) assert.equal((await chat(gw, 'chat', { extra: { max_tokens: 500 } })).status, 422);
    assert.equal((await state(gw)).rejections.local_capacity_insufficient, 3);
  }));
});

// A TCP listener whose accept queue is full: the kernel drops every further
// SYN, so a connect to it neither succeeds nor fails until the client gives up.
async function startBlackhole() {
  const { spawn } = await import('node:child_process');
  const py = [
    'import socket, sys',
    's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)',
    'port = s.getsockname()[1]',
    'fill = []',
    'for _ in range(2):',
    '    c = socket.socket(); c.setblocking(False)',
    '    try: c.connect(("127.0.0.1", port))',
    '    except BlockingIOError: pass',
    '    fill.append(c)',
    'print(port, flush=True)',
    'sys.stdin.read()',
  ].join('\n');
  const proc = spawn('python3', ['-c', py], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(Number(out.trim())); });
    proc.once('exit', (code) => reject(new Error(`blackhole exited ${code}`)));
  });
  const exited = new Promise((r) => proc.once('exit', r));
  return { port, url: `http://127.0.0.1:${port}`, stop: async () => { proc.stdin.end(); await exited; } };
}

describe('configuration: keep-warm, default output estimate, emergency at start, connect timeout', () => {
  test('keep_warm_ms: an idle local model gets a one-token request that often; a backend without it gets none', () => withProcs(async (track) => {
    const warm = await track(startLlmsim(['--model', 'warm-model']));
    const idle = await track(startLlmsim(['--model', 'idle-model']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'warm', tier: 'local', url: warm.url, model: 'warm-model', keep_warm_ms: 200 },
        { name: 'idle', tier: 'local', url: idle.url, model: 'idle-model' },
      ],
      models: [{ name: 'a', backends: ['warm'] }, { name: 'b', backends: ['idle'] }],
    })));
    // No client traffic at all: whatever reaches the model is Spillway's own.
    await waitFor(async () => (await received(warm)).length >= 3, { timeout: 10000, what: 'three keep-warm requests' });
    for (const q of await received(warm)) {
      assert.equal(q.path, '/v1/chat/completions');
      assert.equal(q.body.model, 'warm-model');
      assert.equal(q.body.max_tokens, 1, 'one token: loads the model without costing much');
    }
    assert.equal((await received(idle)).length, 0, 'keep_warm_ms 0 (the default) sends nothing');
    assert.equal((await backendState(gw, 'warm')).health, 'up');
  }));

  test('routing.default_max_tokens is the output estimate of a request without max_tokens (a tpm bucket refuses it)', () => withProcs(async (track) => {
    const a = await track(startLlmsim(['--model', 'a']));
    const b = await track(startLlmsim(['--model', 'b']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'primary', tier: 'cloud', url: a.url, model: 'a', tpm: 1000 },
        { name: 'secondary', tier: 'cloud', url: b.url, model: 'b' },
      ],
      models: [{ name: 'chat', backends: ['primary', 'secondary'] }],
      routing: '  default_max_tokens: 4000',
    })));
    // No max_tokens: estimated at 4000 output tokens, over the 1000 a minute of
    // the primary (the built-in 256 would fit): skipped, not failed.
    const unsized = await chat(gw, 'chat', { extra: { max_tokens: undefined } });
    assert.equal(unsized.status, 200, unsized.text);
    assert.equal(unsized.backend, 'secondary');
    assert.equal(unsized.reason, 'fallback');
    assert.equal((await received(a)).length, 0);
    assert.equal((await received(b))[0].body.max_tokens, undefined, 'the estimate is not sent upstream');
    // The same request with a small max_tokens fits the bucket.
    const sized = await chat(gw, 'chat', { extra: { max_tokens: 8 } });
    assert.equal(sized.backend, 'primary');
    assert.equal(sized.reason, 'baseline');
  }));

  test('routing.emergency: true starts with an emergency declared: a sensitive request whose local box is down goes to the cloud masked', () => withProcs(async (track) => {
    const cloud = await track(startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'edge', tier: 'local', url: 'http://127.0.0.1:9', model: 'edge-model' },
        { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
      ],
      models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
      routing: '  emergency: true',
    })));
    const st = await state(gw);
    assert.equal(st.emergency, true);
    assert.equal(typeof st.emergency_reason, 'string');
    assert.ok(st.emergency_reason.length > 0);
    const secret = 'mail me at jane.doe@example.com';
    const r = await chat(gw, 'chat', { headers: { 'x-spillway-sensitive': 'true' }, extra: { messages: [{ role: 'user', content: secret }], max_tokens: 100 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.backend, 'cloud');
    assert.equal(r.reason, 'emergency');
    assert.equal(r.json.choices[0].message.content, secret);
    const sent = JSON.stringify((await received(cloud)).map((q) => q.body));
    assertNoLeak(sent, ['jane.doe@example.com'], { baseline: 'mail me at ' });
    assert.match(sent, /\[EMAIL_1\]/);
  }));

  test('connect_timeout_ms: a backend that never answers the SYN is given up after the connect timeout and the next one answers', () => withProcs(async (track) => {
    const hole = await track(startBlackhole());
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      backends: [
        { name: 'hole', tier: 'cloud', url: hole.url, model: 'm', connect_timeout_ms: 300 },
        { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
      ],
      models: [{ name: 'chat', backends: ['hole', 'cloud'] }],
    })));
    // The request's own deadline (30 s here) is far beyond the connect timeout.
    const r = await chat(gw, 'chat', { headers: { 'x-request-timeout-ms': '30000' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.backend, 'cloud');
    assert.equal(r.reason, 'fallback');
    const d = await decision(gw, r.requestId);
    assert.deepEqual(d.attempts.map((a) => [a.backend, a.outcome, a.error]), [['hole', 'failed', 'timeout'], ['cloud', 'ok', null]]);
  }));
});
