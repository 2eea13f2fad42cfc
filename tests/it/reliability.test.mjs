// Never dark while a tier is healthy (docs/reliability.md): breakers that are
// all open still let requests through to the backend likeliest to have
// recovered (panic), an attempt without a first byte within the TTFT budget
// moves on, and a rotation of faults between the tiers leaves the clients
// answered. Real spillway in front of real llmsim processes; every wait is a
// bounded wait on a condition.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml, withProcs, edgeAndCloud } from './lib/gateway.mjs';

async function chat(gw, { headers = {}, stream = false, content = 'hello there', maxTokens = 8 } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    signal: AbortSignal.timeout(60000),
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'chat', stream, max_tokens: maxTokens, messages: [{ role: 'user', content }] }),
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

const adminHeaders = { authorization: `Bearer ${ADMIN}` };
const backendState = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: adminHeaders })).body.backends.find((b) => b.name === name);
const decision = async (gw, requestId) => (await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: adminHeaders }))
  .body.decisions.find((d) => d.request_id === requestId);
const simStats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;
const setFaults = (sim, faults) => getJSON(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify(faults) });

async function metrics(gw) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

const twoTiers = (edge, cloud, routing) => yaml({
  backends: [
    { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 4 },
    { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
  ],
  models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
  routing,
});

describe('panic: every breaker open is not a reason to go dark', () => {
  test('both breakers open: the one that opened first is tried anyway (reason panic); its answer closes it at once', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--error-rate', '1', '--error-status', '503']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model', '--error-rate', '1', '--error-status', '503']));
    // One failure opens a breaker for a minute: without panic the model is
    // dark for that minute once both have failed.
    const gw = await track(startSpillway(twoTiers(edge, cloud,
      '  breaker: { failures: 1, window_ms: 60000, cooldown_ms: 60000 }')));
    const first = await chat(gw);
    assert.equal(first.status, 503, first.text);
    assert.equal((await backendState(gw, 'edge')).breaker, 'open');
    assert.equal((await backendState(gw, 'cloud')).breaker, 'open');

    // The local box recovers; its breaker opened first (cooldown ends first).
    await setFaults(edge, {});
    const r = await chat(gw);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.backend, 'edge');
    assert.equal(r.reason, 'panic');
    assert.equal((await backendState(gw, 'edge')).breaker, 'closed', 'a panic answer closes the breaker at once');
    const d = await decision(gw, r.requestId);
    assert.equal(d.reason, 'panic');
    assert.deepEqual(d.attempts.map((a) => [a.backend, a.reason, a.outcome]), [['edge', 'panic', 'ok']]);
    const m = await metrics(gw);
    assert.equal(m['spillway_panic_attempts_total{backend="edge"}'], 1);
    assert.equal(m['spillway_requests_total{model="chat",backend="edge",tier="local",reason="panic"}'], 1);

    // Closed again: the next request is an ordinary baseline one.
    const next = await chat(gw);
    assert.equal(next.status, 200);
    assert.equal(next.reason, 'baseline');
    // The cloud, still failing, got only the very first request.
    assert.equal((await simStats(cloud)).chat_requests, 1);
  }));

  test('panic keeps restricted requests local: both open, the cloud recovered, a restricted request still never leaves', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--error-rate', '1', '--error-status', '503']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model', '--error-rate', '1', '--error-status', '503']));
    const gw = await track(startSpillway(twoTiers(edge, cloud,
      '  breaker: { failures: 1, window_ms: 60000, cooldown_ms: 60000 }')));
    assert.equal((await chat(gw)).status, 503);
    await setFaults(cloud, {});
    const restricted = await chat(gw, { headers: { 'x-spillway-allow-cloud': 'false' } });
    assert.notEqual(restricted.status, 200, restricted.text);
    assert.equal((await simStats(cloud)).chat_requests, 1, 'the restricted request never reached the cloud');
    assert.equal((await simStats(edge)).chat_requests, 2, 'it was tried locally, in panic');
    // An unrestricted one may use the recovered cloud.
    const open = await chat(gw);
    assert.equal(open.status, 200, open.text);
    assert.equal(open.backend, 'cloud');
    assert.equal(open.reason, 'panic');
  }));
});

describe('TTFT abandon: no first byte within the budget, the next backend answers', () => {
  test('a hung local box is given up after the TTFT budget; the cloud answers within the one deadline; logged and counted', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--hang']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(twoTiers(edge, cloud,
      '  ttft_budget_ms: 300\n  request_timeout_ms: 8000')));
    for (const stream of [false, true]) {
      const r = await chat(gw, { stream });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.backend, 'cloud');
      if (stream) assert.match(r.text, /data: \[DONE\]/);
      const d = await decision(gw, r.requestId);
      assert.deepEqual(d.attempts.map((a) => [a.backend, a.outcome, a.error]),
        [['edge', 'failed', 'ttft_abandoned'], ['cloud', 'ok', null]]);
    }
    const m = await metrics(gw);
    assert.equal(m['spillway_errors_total{class="ttft_abandoned"}'], 2);
    // The abandoned attempts were aborted upstream, not left hanging.
    await waitFor(async () => (await simStats(edge)).hanging === 0, { timeout: 5000, what: 'hung attempts aborted' });
  }));

  test('a restricted request is never abandoned to the cloud: it waits for the local box until its deadline', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--hang']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(twoTiers(edge, cloud,
      '  ttft_budget_ms: 200\n  request_timeout_ms: 8000')));
    const r = await chat(gw, { headers: { 'x-spillway-allow-cloud': 'false', 'x-request-timeout-ms': '1500' } });
    assert.equal(r.status, 504, r.text);
    assert.equal(r.json.error.code, 'deadline_exceeded');
    assert.equal((await simStats(cloud)).chat_requests, 0);
  }));
});

describe('cut streams count against the breaker', () => {
  test('a backend that closes its streams before [DONE] opens its breaker; the next stream goes to the cloud', () => withProcs(async (track) => {
    const edge = await track(startLlmsim(['--model', 'edge-model', '--close-after-chunks', '3', '--decode-tps', '200']));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(twoTiers(edge, cloud,
      '  breaker: { failures: 2, window_ms: 60000, cooldown_ms: 60000 }')));
    for (let i = 0; i < 2; i++) {
      const r = await chat(gw, { stream: true, maxTokens: 12 });
      assert.equal(r.backend, 'edge');
      assert.match(r.text, /upstream_stream_failed/, 'the cut reaches the client as an error event');
      const d = await decision(gw, r.requestId);
      assert.equal(d.attempts[0].error, 'stream_cut');
    }
    assert.equal((await backendState(gw, 'edge')).breaker, 'open');
    const r = await chat(gw, { stream: true, maxTokens: 12 });
    assert.equal(r.backend, 'cloud');
    assert.equal(r.reason, 'breaker');
    assert.match(r.text, /data: \[DONE\]/);
    assert.equal((await metrics(gw))['spillway_errors_total{class="stream_cut"}'], 2);
  }));
});

// Faults rotate between the tiers every WINDOW_MS so that one tier is healthy
// at every moment; 16 clients (a quarter restricted, half streaming) run
// throughout. Every cloud-allowed request must be answered in full (>= 97 %),
// every restricted one must stay local, and every request gets exactly one
// complete answer.
const FAULTS = [
  ['503', { error_rate: 1, error_status: 503, retry_after_s: 1 }],
  ['hang', { hang: true }],
  ['429', { error_rate: 1, error_status: 429, retry_after_s: 1 }],
  ['connection close', { close_after_chunks: 1 }],
  ['death after 3 chunks', { close_after_chunks: 3 }],
  ['500', { error_rate: 1, error_status: 500 }],
  ['1.5 s delay', { latency_ms: 1500 }],
];
const WINDOW_MS = 3000;
const WINDOWS = 8;
const CLIENTS = 16;
const MARKER = 'RESTRICTED-7f3a';

// A local box whose health check answers after delayMs and whose model list
// and chat completions answer at once; counts the checks it answered.
async function slowHealthBox(delayMs) {
  const box = { checks: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') {
        setTimeout(() => { box.checks++; res.end('{"status":"ok"}'); }, delayMs);
      } else if (req.url === '/v1/models') {
        res.end('{"object":"list","data":[{"id":"edge-model","object":"model"}]}');
      } else if (req.method === 'POST' && req.url === '/v1/chat/completions') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({
          id: 'c1', object: 'chat.completion', created: 1, model: 'edge-model',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        }));
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  box.url = `http://127.0.0.1:${server.address().port}`;
  box.stop = () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); });
  return box;
}

// An OpenAI-compatible box whose stream ends badly after its [DONE]: `close`
// drops the connection before the response's last chunk, `garbage` sends a
// broken event after [DONE] before it ends the response.
async function afterDoneBox(mode) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') return res.end('{"status":"ok"}');
      if (req.url === '/v1/models') return res.end('{"object":"list","data":[{"id":"edge-model","object":"model"}]}');
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.statusCode = 404;
        return res.end();
      }
      res.setHeader('content-type', 'text/event-stream');
      const chunk = (delta, finish) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1,
        model: 'edge-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: 'assistant', content: 'all ' }, null) + chunk({ content: 'done' }, null) +
        chunk({}, 'stop') + 'data: [DONE]\n\n');
      if (mode === 'close') {
        setTimeout(() => res.socket.destroy(), 20);   // no terminating chunk
      } else {
        res.end('data: {"choices":[{"delta":\n\n');
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

describe('a stream that fails after its end', () => {
  for (const mode of ['close', 'garbage']) {
    test(`${mode} after [DONE]: the client gets the whole answer and one [DONE], last, no error event`, () => withProcs(async (track) => {
      const edge = await track(afterDoneBox(mode));
      const cloud = await track(startLlmsim(['--model', 'cloud-model']));
      const gw = await track(startSpillway(twoTiers(edge, cloud, '')));
      for (let i = 0; i < 3; i++) {
        const r = await chat(gw, { stream: true, headers: { 'x-spillway-allow-cloud': 'false' } });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.backend, 'edge');
        const data = r.text.split(/\n\n/).filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
        assert.equal(data.filter((d) => d === '[DONE]').length, 1, r.text);
        assert.equal(data.at(-1), '[DONE]', r.text);
        assert.ok(!/"error"/.test(r.text), r.text);
        assert.equal(data.slice(0, -1).map((d) => JSON.parse(d).choices?.[0]?.delta?.content ?? '').join(''), 'all done');
      }
      if (mode === 'close') {   // the bytes after [DONE] are not read at all
        await waitFor(() => /after the end of the stream from edge \(the answer was complete\)/.test(gw.output()),
          { what: 'the log line' });
      }
    }));
  }
});

describe('health checks', () => {
  test('a box that answers its health check later than a short interval (within 1 s) stays up and serves', () => withProcs(async (track) => {
    const edge = await track(slowHealthBox(300));
    const cloud = await track(startLlmsim(['--model', 'cloud-model']));
    const gw = await track(startSpillway(twoTiers(edge, cloud, '')));   // health_interval_ms: 100
    await waitFor(() => edge.checks >= 4, { timeout: 10000, what: 'four health checks answered' });
    const st = await backendState(gw, 'edge');
    assert.equal(st.health, 'up', JSON.stringify(st));
    for (let i = 0; i < 3; i++) {
      const r = await chat(gw);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.backend, 'edge', `request ${i}: ${r.reason}`);
    }
  }));
});

describe('never dark while a tier is healthy', () => {
  test('faults rotating between local and cloud every 3 s: >= 97 % of cloud-allowed requests answered in full, restricted ones all local', { timeout: 120000 }, () => withProcs(async (track) => {
    const { edge, cloud, gw } = await edgeAndCloud(track, {
      edgeArgs: ['--slots', '8', '--decode-tps', '200', '--keep-received', '100000'],
      cloudArgs: ['--slots', '64', '--decode-tps', '200', '--keep-received', '100000'],
      edge: { slots: 8 },
      // The defaults of the breaker (5 failures in 60 s, 30 s cooldown).
      routing: '  ttft_budget_ms: 500\n  request_timeout_ms: 15000',
    });

    let running = true;
    let window = -1;
    const results = [];
    async function client(id) {
      for (let n = 0; running; n++) {
        const restricted = id % 4 === 0;
        const stream = (id + n) % 2 === 0;
        const opts = {
          stream, maxTokens: 12,
          content: restricted ? `${MARKER} client ${id} request ${n}` : `client ${id} request ${n}`,
          headers: restricted ? { 'x-spillway-allow-cloud': 'false' } : {},
        };
        let r;
        try {
          r = await chat(gw, opts);
        } catch (e) {
          r = { status: 0, text: String(e) };
        }
        const full = r.status === 200 && (stream
          ? /data: \[DONE\]/.test(r.text) && !/"error"/.test(r.text)
          : r.json?.choices?.[0]?.message?.content?.length > 0);
        results.push({ restricted, stream, status: r.status, full, backend: r.backend, reason: r.reason, window, text: r.text.slice(0, 200) });
      }
    }

    const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));
    const log = [];
    for (let w = 0; w < WINDOWS; w++) {
      const [name, fault] = FAULTS[w % FAULTS.length];
      const [sick, well] = w % 2 === 0 ? [edge, cloud] : [cloud, edge];
      await setFaults(well, {});
      await setFaults(sick, fault);
      log.push(`${w}: ${sick === edge ? 'edge' : 'cloud'} ${name}`);
      window = w;
      // The scenario's own pacing (the fault holds for one window), not a
      // wait for a condition.
      await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
    }
    await setFaults(edge, {});
    await setFaults(cloud, {});
    running = false;
    await Promise.all(clients);

    const allowed = results.filter((r) => !r.restricted);
    const answered = allowed.filter((r) => r.full).length;
    const pct = (100 * answered) / allowed.length;
    const failures = {};
    for (const r of allowed.filter((x) => !x.full)) {
      const code = /"code":"([^"]+)"/.exec(r.text)?.[1] ?? (r.status === 200 ? 'incomplete' : '?');
      const k = `${r.status} ${r.stream ? 'stream' : 'plain'} ${code} from ${r.backend} (${r.reason}) in window ${r.window}`;
      failures[k] = (failures[k] || 0) + 1;
    }
    const m = await metrics(gw);
    const summary = `${answered}/${allowed.length} cloud-allowed answered in full (${pct.toFixed(1)} %); ` +
      `panic ${JSON.stringify(Object.fromEntries(Object.entries(m).filter(([k]) => k.startsWith('spillway_panic'))))}; ` +
      `ttft_abandoned ${m['spillway_errors_total{class="ttft_abandoned"}'] ?? 0}\n${log.join('\n')}\n` +
      Object.entries(failures).map(([k, v]) => `  ${v} x ${k}`).join('\n');
    console.log(summary);

    assert.ok(allowed.length >= 200, `enough traffic to mean something: ${allowed.length}`);
    assert.ok(pct >= 97, summary);
    // No request lost: every one got a complete HTTP answer (status set, no
    // client-side error or timeout).
    assert.equal(results.filter((r) => r.status === 0).length, 0, 'every request got exactly one answer');
    // Restricted requests stayed local: the cloud never saw the marker, and
    // every restricted request that was served was served locally.
    const restricted = results.filter((r) => r.restricted);
    assert.ok(restricted.length > 0);
    assert.ok(restricted.filter((r) => r.status === 200).every((r) => r.backend === 'edge'));
    const cloudSaw = (await getJSON(`${cloud.url}/admin/received`)).body.requests;
    assert.ok(cloudSaw.length > 0, 'the cloud carried traffic');
    assert.equal(cloudSaw.filter((q) => JSON.stringify(q).includes(MARKER)).length, 0, 'no restricted request reached the cloud');
  }));
});
