// Router v2 end to end: load signals from a shared local box, request
// priority, and the spend cap never overspent. Real spillway in front of real
// llmsim processes; every wait is a bounded wait on a condition.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml, withProcs, edgeAndCloud } from './lib/gateway.mjs';

const auth = { authorization: `Bearer ${ADMIN}` };

async function chat(gw, model, { headers = {}, body = {}, signal } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hello there' }], ...body }),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* a stream */ }
  return {
    status: r.status, json, text,
    backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'),
    requestId: r.headers.get('x-request-id'),
  };
}

const state = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
const backendState = async (gw, name) => (await state(gw)).backends.find((b) => b.name === name);
const decisions = async (gw) => (await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: auth })).body.decisions;
const metrics = async (gw) => (await fetch(`${gw.url}/metrics`)).text();
const simStats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;
const outsideLoad = (sim, load) => fetch(`${sim.url}/admin/outside-load`, { method: 'POST', body: JSON.stringify(load) });

// A 4-slot box of which another client holds 3: one request of ours starts
// at once, every other one waits 2 s (40 tokens at 20 tokens/s) per turn.
async function sharedBox(track, load) {
  const edge = await track(startLlmsim(['--model', 'edge-model', '--slots', '4', '--decode-tps', '20']));
  const cloud = await track(startLlmsim(['--model', 'cloud-model', '--slots', '64']));
  const r = await outsideLoad(edge, { processing: 3, waiting: 0 });
  assert.equal(r.status, 200);
  const gw = await track(startSpillway(yaml({
    backends: [
      { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 4, load: { raw: load } },
      { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
    ],
    models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
    routing: '  ttft_budget_ms: 800',
  })));
  return { edge, cloud, gw };
}

const burst = (gw, n) => Promise.all(Array.from({ length: n }, (_, i) => chat(gw, 'chat', {
  body: { max_tokens: 40, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: `burst ${i}` }] },
})));

describe('load signals: a shared box is as busy as it says', () => {
  test('with the box\'s /metrics the overflow spills at once and no request waits behind outside work; without it, local requests miss the TTFT budget', () => withProcs(async (track) => {
    // With the signal.
    const a = await sharedBox(track, '{ source: llamacpp, poll_ms: 50 }');
    await waitFor(async () => { const l = (await backendState(a.gw, 'edge')).load; return l.stale === false && l.outside_load === 3; },
      { timeout: 5000, what: 'a fresh load signal with 3 outside requests' });
    const withSig = await burst(a.gw, 6);
    for (const r of withSig) assert.equal(r.status, 200, r.text);
    const localWith = withSig.filter((r) => r.backend === 'edge');
    assert.equal(localWith.length, 1, `only the one slot the other client left: ${JSON.stringify(withSig.map((r) => [r.backend, r.reason]))}`);
    assert.ok(withSig.filter((r) => r.backend === 'cloud').every((r) => r.reason === 'overflow'));
    assert.equal((await simStats(a.edge)).served, 1, 'no local request waited behind outside work');

    // The same box without the signal: Spillway thinks all 4 slots are free,
    // sends four requests there, and three of them wait behind the outside
    // work until the TTFT budget runs out and they are moved to the cloud.
    const b = await sharedBox(track, '{ source: none }');
    const without = await burst(b.gw, 6);
    for (const r of without) assert.equal(r.status, 200, r.text);
    const log = await decisions(b.gw);
    const tried = without.map((r) => log.find((d) => d.request_id === r.requestId))
      .filter((d) => d.attempts[0].backend === 'edge');
    assert.equal(tried.length, 4, 'four requests sent to a box with one free slot');
    const late = tried.filter((d) => d.ttft_ms > 800);
    assert.equal(late.length, 3, `requests queued behind the outside work miss the 800 ms budget: ${JSON.stringify(tried.map((d) => [d.backend, d.reason, d.ttft_ms]))}`);
    assert.ok(late.every((d) => d.reason === 'fallback' || d.backend === 'edge'));
  }));

  test('vLLM\'s metric names are read the same way, and /admin/state and /metrics show the signal', () => withProcs(async (track) => {
    const { gw } = await sharedBox(track, '{ source: vllm, poll_ms: 50 }');
    await waitFor(async () => (await backendState(gw, 'edge')).load.outside_load === 3,
      { timeout: 5000, what: 'outside load 3 from vllm:num_requests_running' });
    const l = (await backendState(gw, 'edge')).load;
    assert.equal(l.source, 'vllm');
    assert.equal(l.processing, 3);
    assert.equal(l.waiting, 0);
    assert.equal(l.error, null);
    assert.ok(l.age_ms >= 0);
    const m = await metrics(gw);
    assert.match(m, /spillway_backend_outside_load\{backend="edge"\} 3\b/);
    assert.match(m, /spillway_load_signal_stale\{backend="edge"\} 0\b/);
    assert.doesNotMatch(m, /spillway_backend_outside_load\{backend="cloud"\}/);
  }));

  test('a failing signal falls back to today\'s estimate, visible in /admin/state and /metrics', () => withProcs(async (track) => {
    // llmsim serves no tgi_queue_size: every poll fails.
    const { gw, edge } = await sharedBox(track, '{ source: tgi, poll_ms: 50 }');
    await waitFor(async () => (await backendState(gw, 'edge')).load.error !== null,
      { timeout: 5000, what: 'the failing poll reported' });
    const l = (await backendState(gw, 'edge')).load;
    assert.equal(l.stale, true);
    assert.equal(l.outside_load, 0);
    assert.match(l.error, /tgi_queue_size not found/);
    assert.match(await metrics(gw), /spillway_load_signal_stale\{backend="edge"\} 1\b/);
    // Routed as without a signal: four requests go to the "free" slots.
    const rs = await burst(gw, 6);
    for (const r of rs) assert.equal(r.status, 200, r.text);
    const log = await decisions(gw);
    const tried = rs.map((r) => log.find((d) => d.request_id === r.requestId)).filter((d) => d.attempts[0].backend === 'edge');
    assert.equal(tried.length, 4, JSON.stringify(rs.map((r) => [r.backend, r.reason])));
    assert.equal((await simStats(edge)).chat_requests, 4);
  }));
});

describe('priority: batch waits behind interactive and has its own budget', () => {
  const oneSlot = (track, routing = '') => edgeAndCloud(track, { edgeArgs: ['--slots', '1', '--decode-tps', '20'], edge: { slots: 1 }, routing });
  const send = (gw, text, priority, maxTokens = 10) => chat(gw, 'chat', {
    headers: { 'x-spillway-priority': priority },
    body: { max_tokens: maxTokens, messages: [{ role: 'user', content: text }] },
  });

  test('an interactive request is granted the local slot before batch requests that came earlier', () => withProcs(async (track) => {
    // Budgets far above the waits: everything stays local, only the order is at stake.
    const { edge, gw } = await oneSlot(track, '  ttft_budget_ms: 60000\n  request_timeout_ms: 120000');
    const pending = [send(gw, 'batch-0', 'batch')];
    await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'batch-0 running' });
    for (let i = 1; i <= 3; i++) pending.push(send(gw, `batch-${i}`, 'batch'));
    await waitFor(async () => (await backendState(gw, 'edge')).queued === 3, { what: 'three batch waiting' });
    pending.push(send(gw, 'interactive', 'interactive'));
    await waitFor(async () => (await backendState(gw, 'edge')).queued === 4, { what: 'interactive waiting too' });
    const rs = await Promise.all(pending);
    for (const r of rs) assert.equal(r.status, 200, r.text);
    assert.ok(rs.every((r) => r.backend === 'edge'));
    const order = (await getJSON(`${edge.url}/admin/received`)).body.requests.map((q) => q.body.messages[0].content);
    assert.deepEqual(order.filter((t) => t !== 'ping'), ['batch-0', 'interactive', 'batch-1', 'batch-2', 'batch-3']);
    const log = await decisions(gw);
    const byId = (r) => log.find((d) => d.request_id === r.requestId);
    assert.equal(byId(rs[4]).priority, 'interactive');
    assert.equal(byId(rs[0]).priority, 'batch');
    assert.match(await metrics(gw), /spillway_priority_requests_total\{priority="batch",tier="local",reason="baseline"\} 4\b/);
  }));

  test('on a busy box interactive spills at its budget while batch waits (its budget defaults to the request timeout)', () => withProcs(async (track) => {
    const { gw } = await oneSlot(track, '  ttft_budget_ms: 800');
    const long = send(gw, 'occupy', 'interactive', 40);
    await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'the slot taken' });
    const inter = await send(gw, 'i', 'interactive');
    assert.equal(inter.backend, 'cloud');
    assert.equal(inter.reason, 'overflow');
    const batch = await send(gw, 'b', 'batch');
    assert.equal(batch.status, 200, batch.text);
    assert.equal(batch.backend, 'edge');
    await long;
  }));

  test('batch spills once its own budget would be missed', () => withProcs(async (track) => {
    const { gw } = await oneSlot(track, '  ttft_budget_ms: 800\n  batch_ttft_budget_ms: 2000');
    // The slot is held for 10 s (200 tokens at 20 tokens/s, as the priors
    // say): the batch's wait stays far above its 2 s budget however late it
    // comes. (The estimate counts down from when the holder started, so a
    // holder ending near the budget races the test on a loaded machine.)
    const stop = new AbortController();
    const long = chat(gw, 'chat', {
      headers: { 'x-spillway-priority': 'interactive' },
      body: { max_tokens: 200, messages: [{ role: 'user', content: 'occupy' }] },
      signal: stop.signal,
    }).catch((e) => e);
    await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'the slot taken' });
    const batch = await send(gw, 'b', 'batch');
    assert.equal(batch.backend, 'cloud');
    assert.equal(batch.reason, 'overflow');
    stop.abort();
    assert.equal((await long).name, 'AbortError');
  }));
});

describe('priority and budget headers: validated, tighten only', () => {
  test('invalid X-Spillway-Priority, metadata.priority or X-Spillway-TTFT-Budget-Ms is a 400 naming it; a key can default to batch', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--slots', '4']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(yaml({
      keys: 'keys:\n  - { name: "nightly", key: "sk-nightly", priority: batch }\n  - { name: "app", key: "sk-app" }',
      backends: [
        { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 4 },
        { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
      ],
      models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
    })));
    const app = { authorization: 'Bearer sk-app' };
    for (const [headers, body, param, code] of [
      [{ 'x-spillway-priority': 'urgent' }, {}, 'X-Spillway-Priority', 'invalid_header'],
      [{ 'x-spillway-priority': '' }, {}, 'X-Spillway-Priority', 'invalid_header'],
      [{}, { metadata: { priority: 'high' } }, 'metadata.priority', 'invalid_value'],
      [{ 'x-spillway-ttft-budget-ms': 'fast' }, {}, 'X-Spillway-TTFT-Budget-Ms', 'invalid_header'],
      [{ 'x-spillway-ttft-budget-ms': '0' }, {}, 'X-Spillway-TTFT-Budget-Ms', 'invalid_header'],
      [{ 'x-spillway-ttft-budget-ms': '-5' }, {}, 'X-Spillway-TTFT-Budget-Ms', 'invalid_header'],
    ]) {
      const r = await chat(gw, 'chat', { headers: { ...app, ...headers }, body });
      assert.equal(r.status, 400, `${JSON.stringify(headers)} ${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.json.error.param, param);
      assert.equal(r.json.error.code, code);
    }
    const c = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-nightly', maxRetries: 0 });
    const { data, response } = await c.chat.completions.create({ model: 'chat', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }).withResponse();
    assert.ok(data.choices[0].message.content.length > 0);
    const log = await decisions(gw);
    assert.equal(log.find((d) => d.request_id === response.headers.get('x-request-id')).priority, 'batch');
    // The header overrides the key's default; metadata works too.
    const h = await chat(gw, 'chat', { headers: { authorization: 'Bearer sk-nightly', 'x-spillway-priority': ' Interactive ' } });
    assert.equal(h.status, 200, h.text);
    const md = await chat(gw, 'chat', { headers: app, body: { metadata: { priority: 'batch' } } });
    assert.equal(md.status, 200, md.text);
    const log2 = await decisions(gw);
    assert.equal(log2.find((d) => d.request_id === h.requestId).priority, 'interactive');
    assert.equal(log2.find((d) => d.request_id === md.requestId).priority, 'batch');
  }));

  test('X-Spillway-TTFT-Budget-Ms tightens the budget (an idle box misses 1 ms) but cannot loosen it', () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, {
      edgeArgs: ['--slots', '1', '--decode-tps', '20'],
      edge: { slots: 1 },
      routing: '  ttft_budget_ms: 800',
    });
    const idle = await chat(gw, 'chat');
    assert.equal(idle.backend, 'edge');
    const tight = await chat(gw, 'chat', { headers: { 'x-spillway-ttft-budget-ms': '1' } });
    assert.equal(tight.backend, 'cloud');
    assert.equal(tight.reason, 'overflow');
    const long = chat(gw, 'chat', { body: { max_tokens: 40 } });
    await waitFor(async () => (await backendState(gw, 'edge')).in_flight === 1, { what: 'the slot taken' });
    const loose = await chat(gw, 'chat', { headers: { 'x-spillway-ttft-budget-ms': '600000' } });
    assert.equal(loose.backend, 'cloud', 'a looser header leaves the 800 ms budget in force');
    await long;
  }));
});

describe('never overspend: a reservation covers the worst case', () => {
  // $10 per M prompt tokens, $40 per M output tokens; cap $0.05. A request
  // without max_tokens may run to llmsim's 2000 drawn tokens ($0.08 alone),
  // unless Spillway sends and reserves max_output_tokens (300: $0.012).
  const IN = 10, OUT = 40, CAP = 0.05, MAX_OUT = 300;
  const cost = (tin, tout) => (tin * IN + tout * OUT) / 1e6;

  // A reproducible generator, so a failure can be replayed.
  function rng(seed) {
    let s = seed >>> 0;
    return () => { s = (s * 1664525 + 1013904223) >>> 0; return s / 2 ** 32; };
  }

  async function run(track, { bounded, seed }) {
    const cloud = await track(startLlmsim(['--model', 'cloud-model', '--decode-tps', '0', '--max-output-tokens', '2000', '--seed', String(seed)]));
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model', max_output_tokens: MAX_OUT,
        price: { raw: `{ input_usd_per_mtok: ${IN}, output_usd_per_mtok: ${OUT} }` } }],
      models: [{ name: 'chat', backends: ['cloud'] }],
      routing: `  spend: { cap_usd: ${CAP}, window: day }`,
    })));
    const rand = rng(seed);
    const reqs = Array.from({ length: 40 }, (_, i) => {
      const words = 1 + Math.floor(rand() * 400);
      const body = { messages: [{ role: 'user', content: `${i} ${'lorem '.repeat(words)}` }], stream: rand() < 0.5 };
      if (bounded || rand() < 0.5) body.max_tokens = 1 + Math.floor(rand() * 250);
      else delete body.max_tokens;
      return body;
    });
    const rs = await Promise.all(reqs.map((b) => {
      const body = { ...b };
      return fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat', ...body }),
      }).then(async (r) => ({ status: r.status, text: await r.text() }));
    }));
    for (const r of rs) assert.ok(r.status === 200 || r.status === 429, `${r.status}: ${r.text}`);
    const served = rs.filter((r) => r.status === 200).length;
    assert.ok(served > 0 && served < rs.length, `the cap must bind: ${served} of ${rs.length} served`);
    // Nothing outstanding: the state's spend is what was settled.
    await waitFor(async () => (await state(gw)).backends[0].in_flight === 0, { what: 'all settled' });
    const spend = (await state(gw)).spend_usd;
    const sim = await simStats(cloud);
    assert.equal(sim.served, served, 'llmsim served exactly the requests answered 200');
    const simCost = cost(sim.prompt_tokens, sim.tokens_generated);
    assert.ok(Math.abs(simCost - spend) < 1e-9, `spend ${spend} = llmsim's usage priced ${simCost}`);
    // Largest single reservation: the biggest prompt (its estimate: text, 4 per
    // message, 3 priming) with the worst-case output.
    const largest = Math.max(...reqs.map((b) => cost(Math.ceil(Buffer.byteLength(b.messages[0].content) / 4) + 4 + 3, b.max_tokens ?? MAX_OUT)));
    return { spend, largest, received: (await getJSON(`${cloud.url}/admin/received`)).body.requests };
  }

  test('randomized concurrent requests, some without max_tokens and long answers: settled spend stays within cap + the largest reservation', () => withProcs(async (track) => {
    const { spend, largest, received } = await run(track, { bounded: false, seed: 7 });
    assert.ok(spend <= CAP + largest + 1e-12, `spend ${spend} > cap ${CAP} + largest reservation ${largest}`);
    // Every request without max_tokens went up with the reserved limit.
    const unbounded = received.filter((q) => q.body.max_tokens === undefined);
    assert.ok(unbounded.length > 0);
    assert.ok(unbounded.every((q) => q.body.max_completion_tokens === MAX_OUT));
  }));

  test('with bounded answers the cap is never exceeded', () => withProcs(async (track) => {
    const { spend } = await run(track, { bounded: true, seed: 11 });
    assert.ok(spend <= CAP + 1e-12, `spend ${spend} > cap ${CAP}`);
  }));
});
