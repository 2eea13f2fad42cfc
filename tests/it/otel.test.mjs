// OpenTelemetry traces (telemetry.otlp, docs/operations.md "Traces"): what
// the gateway exports to an OTLP/HTTP collector, decoded as the collector
// would (http/json by the OTLP JSON mapping, http/protobuf with the official
// opentelemetry-proto definitions): the span tree (client -> SERVER span ->
// one CLIENT span per attempt), the GenAI and Spillway attributes, the
// traceparent each attempt sends upstream, the trace id in the decision log
// and the X-Trace-Id header, a client instrumented with the official Node
// SDK whose span the gateway's join, no canary value anywhere, sampling by
// ratio and by the parent's flag, and a collector that refuses (503, then
// retried), hangs or is gone: requests unaffected, spans dropped and counted,
// the queue bounded; requests refused before routing (401, 400, 413, 415,
// 404, pii_blocked) get a SERVER span of their own.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { startCollector } from './lib/otlp.mjs';

const TID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PID = '00f067aa0ba902b7';
const json = { 'content-type': 'application/json' };
const chat = (model, content = 'hi', extra = {}) =>
  JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: 8, ...extra });

async function post(gw, body, headers = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...json, ...headers }, body });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text };
}

async function metric(gw, re) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const m = text.match(re);
  return m ? Number(m[1]) : NaN;
}

const gatewayYaml = (edge, bad, collector, otlp) => `
listen: "127.0.0.1:0"
backends:
  - { name: edge, tier: local, url: "${edge}", model: edge-model }
  - { name: bad, tier: local, url: "${bad}", model: bad-model }
  - { name: spare, tier: cloud, url: "${edge}", model: spare-model, api_key: "sk-up-CANARY-UPSTREAM-KEY" }
models:
  - { name: chat, backends: [edge] }
  - { name: fo, backends: [bad, spare] }
telemetry:
  otlp:
    endpoint: "${collector}"
${otlp}
`;

let edge, bad, colJson, colProto, colBad, gwJson, gwProto, gwBad;

before(async () => {
  [edge, bad, colJson, colProto, colBad] = await Promise.all([
    startLlmsim(['--model', 'edge-model', '--decode-tps', '0', '--reply', 'echo', '--keep-received', '1000']),
    startLlmsim(['--model', 'bad-model', '--decode-tps', '0', '--error-rate', '1', '--error-status', '503', '--retry-after-s', '0']),
    startCollector(), startCollector(), startCollector(),
  ]);
  [gwJson, gwProto, gwBad] = await Promise.all([
    startSpillway(gatewayYaml(edge.url, bad.url, colJson.url, `
    protocol: http/json
    headers: { x-collector-key: "collector-secret" }
    batch: { max_spans: 64, interval_ms: 20 }`)),
    startSpillway(gatewayYaml(edge.url, bad.url, `${colProto.url}/v1/traces`, `
    protocol: http/protobuf
    sample_ratio: 0.3
    batch: { max_spans: 64, interval_ms: 20 }`)),
    startSpillway(gatewayYaml(edge.url, bad.url, colBad.url, `
    timeout_ms: 300
    queue_max: 20
    batch: { max_spans: 10, interval_ms: 20 }`)),
  ]);
});

after(async () => {
  await Promise.all([gwJson, gwProto, gwBad].map((g) => g?.stop()));
  await Promise.all([edge, bad].map((s) => s?.stop()));
  await Promise.all([colJson, colProto, colBad].map((c) => c?.close()));
});

const byTrace = (col, tid) => col.spans.filter((s) => s.traceId === tid);
async function received(sim) {
  return (await getJSON(`${sim.url}/admin/received`)).body.requests;
}

// The tree of one traced request: the SERVER span under the client's span,
// each attempt's CLIENT span under it; what every span must hold.
function checkTree(spans, { parent, attempts }) {
  const server = spans.filter((s) => s.kind === 2);
  assert.equal(server.length, 1, 'one SERVER span');
  const srv = server[0];
  assert.equal(srv.parentSpanId, parent);
  assert.match(srv.spanId, /^[0-9a-f]{16}$/);
  assert.notEqual(srv.spanId, '0000000000000000');
  const clients = spans.filter((s) => s.kind === 3);
  assert.equal(clients.length, attempts, 'one CLIENT span per attempt');
  for (const c of clients) {
    assert.equal(c.parentSpanId, srv.spanId);
    assert.ok(c.start >= srv.start && c.end <= srv.end, 'an attempt lies within its request');
    assert.equal(c.attrs['gen_ai.operation.name'], 'chat');
    assert.equal(c.attrs['server.address'], '127.0.0.1');
    assert.equal(typeof c.attrs['server.port'], 'number');
    assert.ok(['closed', 'open', 'half_open'].includes(c.attrs['spillway.breaker']));
  }
  assert.equal(srv.resource['service.name'], 'spillway');
  assert.match(srv.resource['service.version'], /^\d+\.\d+\.\d+/);
  assert.match(srv.resource['service.instance.id'], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  return { srv, clients };
}

describe('spans over http/json', () => {
  test('the client traceparent is continued: span tree, GenAI attributes, upstream traceparent, log and header', async () => {
    const r = await post(gwJson, chat('chat', 'hello there'), {
      traceparent: `00-${TID}-${PID}-01`, tracestate: 'congo=t61rcWkgMzE, rojo=00f067aa0ba902b7',
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-trace-id'), TID);
    await waitFor(() => byTrace(colJson, TID).length >= 2, { timeout: 5000, what: 'the spans of the request' });
    const { srv, clients } = checkTree(byTrace(colJson, TID), { parent: PID, attempts: 1 });
    assert.equal(srv.name, 'chat chat');
    assert.equal(srv.flags & 0x301, 0x301, 'sampled, its parent remote');
    assert.equal(srv.traceState, 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    const a = srv.attrs;
    assert.equal(a['gen_ai.operation.name'], 'chat');
    assert.equal(a['gen_ai.request.model'], 'chat');
    assert.equal(a['gen_ai.response.model'], 'edge-model');
    assert.ok(a['gen_ai.usage.input_tokens'] > 0);
    assert.ok(a['gen_ai.usage.output_tokens'] > 0);
    assert.equal(a['gen_ai.response.finish_reasons'].length, 1);
    assert.ok(['stop', 'length'].includes(a['gen_ai.response.finish_reasons'][0]));
    assert.equal(a['http.request.method'], 'POST');
    assert.equal(a['http.response.status_code'], 200);
    assert.equal(a['url.path'], '/v1/chat/completions');
    assert.equal(a['spillway.api'], 'openai');
    assert.equal(a['spillway.reason'], 'baseline');
    assert.equal(a['spillway.tier'], 'local');
    assert.equal(a['spillway.region'], 'local');
    assert.equal(a['spillway.masked'], false);
    assert.equal(a['spillway.cost_usd'], 0);
    assert.equal(typeof a['spillway.ttft_ms'], 'number');
    assert.equal(typeof a['spillway.ttft_estimated_ms'], 'number');
    assert.equal(typeof a['spillway.queue_wait_ms'], 'number');
    assert.equal(srv.status.code, 0);
    const c = clients[0];
    assert.equal(c.name, 'chat edge-model');
    assert.equal(c.attrs['spillway.backend'], 'edge');
    assert.equal(c.attrs['gen_ai.provider.name'], 'openai');
    assert.equal(c.attrs['server.port'], edge.port);
    assert.equal(c.attrs['spillway.outcome'], 'ok');
    assert.equal(c.attrs['http.response.status_code'], 200);
    assert.equal(typeof c.attrs['spillway.first_byte_ms'], 'number');
    // the attempt sent its own context upstream: same trace, its span as parent
    const up = (await received(edge)).filter((q) => q.headers.traceparent?.includes(TID));
    assert.equal(up.length, 1);
    assert.equal(up[0].headers.traceparent, `00-${TID}-${c.spanId}-01`);
    assert.equal(up[0].headers.tracestate, 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
    // the decision log line names the trace
    const line = gwJson.output().split('\n').find((l) => l.includes(`"trace_id":"${TID}"`));
    assert.ok(line, 'the decision log carries the trace id');
    assert.equal(JSON.parse(line).request_id, a['spillway.request_id']);
    // the collector got the configured headers and the JSON content type
    const req = colJson.requests.at(-1);
    assert.equal(req.path, '/v1/traces');
    assert.equal(req.contentType, 'application/json');
    assert.equal(req.headers['x-collector-key'], 'collector-secret');
  });

  test('a failed attempt and its failover: two CLIENT spans, an error status, a failover event', async () => {
    const tid = 'a'.repeat(31) + '1';
    const r = await post(gwJson, chat('fo'), { traceparent: `00-${tid}-${PID}-01` });
    assert.equal(r.status, 200);
    await waitFor(() => byTrace(colJson, tid).length >= 3, { timeout: 5000, what: 'the spans of the failover' });
    const { srv, clients } = checkTree(byTrace(colJson, tid), { parent: PID, attempts: 2 });
    const failed = clients.find((c) => c.attrs['spillway.backend'] === 'bad');
    const ok = clients.find((c) => c.attrs['spillway.backend'] === 'spare');
    assert.equal(failed.attrs['spillway.outcome'], 'failed');
    assert.equal(failed.attrs['http.response.status_code'], 503);
    assert.equal(failed.attrs['error.type'], 'status');
    assert.equal(failed.status.code, 2);
    assert.equal(ok.attrs['spillway.outcome'], 'ok');
    assert.equal(ok.attrs['spillway.tier'], 'cloud');
    assert.equal(ok.attrs['spillway.reason'], 'fallback');
    assert.ok(ok.start >= failed.end, 'the second attempt follows the first');
    const ev = srv.events.find((e) => e.name === 'failover');
    assert.ok(ev, 'a failover event');
    assert.equal(ev.attrs['spillway.backend'], 'bad');
    assert.equal(srv.attrs['spillway.attempts'], 2);
    assert.equal(srv.attrs['spillway.reason'], 'fallback');
    // each attempt sent its own span id upstream
    const upBad = (await received(bad)).filter((q) => q.headers.traceparent?.includes(tid));
    assert.equal(upBad[0].headers.traceparent, `00-${tid}-${failed.spanId}-01`);
    const upOk = (await received(edge)).filter((q) => q.headers.traceparent?.includes(tid));
    assert.equal(upOk[0].headers.traceparent, `00-${tid}-${ok.spanId}-01`);
  });

  test('a request without traceparent starts a trace of its own', async () => {
    const r = await post(gwJson, chat('chat', 'x', { stream: true }));
    assert.equal(r.status, 200);
    const tid = r.headers.get('x-trace-id');
    assert.match(tid, /^[0-9a-f]{32}$/);
    await waitFor(() => byTrace(colJson, tid).length >= 2, { timeout: 5000, what: 'the spans' });
    const { srv } = checkTree(byTrace(colJson, tid), { parent: '', attempts: 1 });
    assert.equal(srv.flags & 0x301, 0x101, 'sampled, no remote parent');
    assert.equal(srv.attrs['spillway.stream'], true);
  });

  test('invalid traceparent values start a new trace (W3C rules)', async () => {
    for (const bad of [`00-${TID.toUpperCase()}-${PID}-01`, `00-${'0'.repeat(32)}-${PID}-01`,
      `ff-${TID}-${PID}-01`, `00-${TID}-${PID}-01-extra`, `00-${TID}-${'0'.repeat(16)}-01`]) {
      const r = await post(gwJson, chat('chat'), { traceparent: bad });
      assert.equal(r.status, 200);
      assert.notEqual(r.headers.get('x-trace-id'), TID, bad);
      assert.match(r.headers.get('x-trace-id'), /^[0-9a-f]{32}$/);
    }
  });

  test('no canary value in any exported byte', async () => {
    const C = 'CANARYZQX';
    const email = `${C.toLowerCase()}.user@example.org`;
    const headers = {
      authorization: `Bearer sk-${C}-KEY`, 'x-api-key': `${C}-XAPI`, 'user-agent': `${C}-UA`,
      'x-request-id': `${C}-RID`, 'x-custom': `${C}-HDR`, cookie: `s=${C}-COOKIE`,
      'x-spillway-priority': 'interactive', traceparent: `00-${'b'.repeat(31)}2-${PID}-01`,
    };
    const body = JSON.stringify({
      model: 'chat', max_tokens: 8, user: `${C}-USER`, metadata: { note: `${C}-META` },
      messages: [
        { role: 'system', content: `${C}-SYSTEM` },
        { role: 'user', content: `mail ${email} about ${C}-PROMPT card 4111 1111 1111 1111` },
        { role: 'assistant', content: `${C}-ASSISTANT` },
        { role: 'user', content: [{ type: 'text', text: `${C}-PART` }] },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', description: `${C}-TOOL`, parameters: { type: 'object', properties: { q: { type: 'string', description: `${C}-PARAM` } } } } }],
      stop: [`${C}-STOP`], seed: 7, temperature: 0.5,
    });
    const r = await post(gwJson, body, headers);
    assert.equal(r.status, 200);
    assert.ok(r.text.includes(C), 'the echo answer carries the canary (the spans must not)');
    const tid = 'b'.repeat(31) + '2';
    await waitFor(() => byTrace(colJson, tid).length >= 2, { timeout: 5000, what: 'the canary request spans' });
    const { srv } = checkTree(byTrace(colJson, tid), { parent: PID, attempts: 1 });
    assert.equal(srv.attrs['spillway.pii.email'], 1, 'PII counted by type, never its value');
    for (const b of [...colJson.bodies, ...colProto.bodies, ...colBad.bodies]) {
      const s = b.toString('latin1');
      assert.ok(!s.includes(C) && !s.toLowerCase().includes(C.toLowerCase()), 'a canary reached the collector');
      assert.ok(!s.includes('4111') && !s.includes('example.org') && !s.includes('UPSTREAM-KEY'));
    }
  });

  test('a client instrumented with the OpenTelemetry Node SDK: its span is the gateway spans\' parent', async () => {
    const api = await import('@opentelemetry/api');
    const { NodeSDK } = await import('@opentelemetry/sdk-node');
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    // shutdown() flushes what the SDK's batch processor holds
    const sdk = new NodeSDK({
      serviceName: 'it-client',
      traceExporter: new OTLPTraceExporter({ url: `${colJson.url}/v1/traces` }),
      instrumentations: [],
    });
    sdk.start();
    let sdkSpan;
    try {
      const tracer = api.trace.getTracer('spillway-it');
      await tracer.startActiveSpan('agent turn', async (span) => {
        sdkSpan = span.spanContext();
        const headers = {};
        api.propagation.inject(api.context.active(), headers);
        assert.match(headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
        const r = await post(gwJson, chat('chat'), headers);
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-trace-id'), sdkSpan.traceId);
        span.end();
      });
    } finally {
      await sdk.shutdown();
    }
    const tid = sdkSpan.traceId;
    await waitFor(() => byTrace(colJson, tid).length >= 3, { timeout: 5000, what: 'the client\'s and the gateway\'s spans' });
    const spans = byTrace(colJson, tid);
    const root = spans.find((s) => s.spanId === sdkSpan.spanId);
    assert.ok(root, 'the SDK exported its span to the same collector');
    assert.equal(root.resource['service.name'], 'it-client');
    assert.equal(root.parentSpanId, '');
    checkTree(spans.filter((s) => s !== root), { parent: sdkSpan.spanId, attempts: 1 });
  });
});

describe('spans over http/protobuf, sampling', () => {
  test('decoded with the official proto definitions: the same tree', async () => {
    const tid = 'c'.repeat(31) + '3';
    const r = await post(gwProto, chat('fo'), { traceparent: `00-${tid}-${PID}-01` });
    assert.equal(r.status, 200);
    await waitFor(() => byTrace(colProto, tid).length >= 3, { timeout: 5000, what: 'the protobuf spans' });
    const { srv, clients } = checkTree(byTrace(colProto, tid), { parent: PID, attempts: 2 });
    assert.equal(colProto.requests.at(-1).contentType, 'application/x-protobuf');
    assert.equal(srv.attrs['gen_ai.request.model'], 'fo');
    assert.equal(srv.attrs['gen_ai.response.model'], 'spare-model');
    assert.equal(srv.attrs['http.response.status_code'], 200);
    assert.ok(srv.events.some((e) => e.name === 'failover'));
    assert.ok(clients.some((c) => c.attrs['spillway.outcome'] === 'failed' && c.status.code === 2));
    assert.ok(srv.end >= srv.start && srv.start > 1700000000000000000n, 'times in ns since the epoch (ms resolution)');
  });

  test('sample_ratio keeps about that share of new traces; a parent\'s flag decides for its own', async () => {
    colProto.reset();
    const N = 200;
    const ids = [];
    for (let i = 0; i < N; i += 10) {
      const rs = await Promise.all(Array.from({ length: 10 }, () => post(gwProto, chat('chat'))));
      for (const r of rs) {
        assert.equal(r.status, 200);
        ids.push(r.headers.get('x-trace-id'));
      }
    }
    assert.equal(new Set(ids).size, N, 'every request its own trace id');
    // parent sampled: always kept; parent not sampled: never, and the
    // unsampled context still goes upstream
    const kept = [], dropped = [];
    for (let i = 0; i < 10; i++) {
      const k = `d${String(i).padStart(2, '0')}${'d'.repeat(29)}`;
      const d = `e${String(i).padStart(2, '0')}${'e'.repeat(29)}`;
      kept.push(k);
      dropped.push(d);
      assert.equal((await post(gwProto, chat('chat'), { traceparent: `00-${k}-${PID}-01` })).status, 200);
      assert.equal((await post(gwProto, chat('chat'), { traceparent: `00-${d}-${PID}-00` })).status, 200);
    }
    await waitFor(() => kept.every((k) => byTrace(colProto, k).length >= 2),
      { timeout: 5000, what: 'the spans of the sampled parents' });
    // a flush after the last request: everything sampled has arrived
    await waitFor(async () => (await metric(gwProto, /spillway_otel_queue_spans (\d+)/)) === 0,
      { timeout: 5000, what: 'an empty export queue' });
    for (const d of dropped) assert.equal(byTrace(colProto, d).length, 0, 'an unsampled parent: no span');
    const up = await received(edge);
    for (const d of dropped) {
      const q = up.find((x) => x.headers.traceparent?.includes(d));
      assert.match(q.headers.traceparent, new RegExp(`^00-${d}-[0-9a-f]{16}-00$`));
    }
    const sampled = new Set(colProto.spans.filter((s) => s.kind === 2).map((s) => s.traceId));
    const fresh = ids.filter((t) => sampled.has(t)).length;
    // binomial(200, 0.3): mean 60, sd 6.5; 5 sd either side
    assert.ok(fresh >= 28 && fresh <= 92, `sampled ${fresh} of ${N} at ratio 0.3`);
    assert.equal(await metric(gwProto, /spillway_otel_spans_dropped_total\{reason="queue_full"\} (\d+)/), 0);
  });
});

describe('a collector that refuses, hangs or is gone', () => {
  test('503 with Retry-After: the batch is retried, then delivered', async () => {
    colBad.setMode('fail');
    const r = await post(gwBad, chat('chat'));
    assert.equal(r.status, 200);
    const tid = r.headers.get('x-trace-id');
    await waitFor(async () => (await metric(gwBad, /spillway_otel_exports_total\{result="retried"\} (\d+)/)) >= 1,
      { timeout: 5000, what: 'a retried export' });
    colBad.setMode('ok');
    await waitFor(() => byTrace(colBad, tid).length >= 2, { timeout: 10000, what: 'the retried spans' });
    assert.equal(await metric(gwBad, /spillway_otel_spans_dropped_total\{reason="export_failed"\} (\d+)/), 0);
  });

  test('hanging, then gone: every request served, spans dropped and counted, the queue bounded', async () => {
    colBad.setMode('slow');
    const exportedBefore = await metric(gwBad, /spillway_otel_spans_exported_total (\d+)/);
    const statuses = [];
    for (let i = 0; i < 40; i += 8) {
      const rs = await Promise.all(Array.from({ length: 8 }, () => post(gwBad, chat('chat'))));
      statuses.push(...rs.map((r) => r.status));
    }
    assert.deepEqual(new Set(statuses), new Set([200]), 'the hung collector cost no request');
    // 80 spans into a queue of 20 and a batch of 10: most are dropped at the queue
    assert.ok(await metric(gwBad, /spillway_otel_spans_dropped_total\{reason="queue_full"\} (\d+)/) >= 40);
    const q = await metric(gwBad, /spillway_otel_queue_spans (\d+)/);
    assert.ok(q <= 30, `queue ${q} within queue_max + one batch`);
    assert.equal(await metric(gwBad, /spillway_otel_queue_max_spans (\d+)/), 20);
    await colBad.close(); // now gone: connections refused
    for (let i = 0; i < 16; i += 8) {
      const rs = await Promise.all(Array.from({ length: 8 }, () => post(gwBad, chat('chat'))));
      for (const r of rs) assert.equal(r.status, 200);
    }
    assert.equal(await metric(gwBad, /spillway_otel_spans_exported_total (\d+)/), exportedBefore);
    await waitFor(async () => (await metric(gwBad, /spillway_otel_exports_total\{result="retried"\} (\d+)/)) >= 3,
      { timeout: 5000, what: 'retries against the hung and gone collector' });
    assert.ok((await metric(gwBad, /spillway_otel_queue_spans (\d+)/)) <= 30);
  });
});

describe('requests refused before routing', () => {
  const KEY = 'sk-app-CANARY-CLIENT-KEY';
  let col, gw;
  before(async () => {
    col = await startCollector();
    gw = await startSpillway(`
listen: "127.0.0.1:0"
backends:
  - { name: edge, tier: local, url: "${edge.url}", model: edge-model }
models:
  - { name: chat, backends: [edge] }
keys:
  - { name: app, key: "${KEY}", pii: block }
limits: { max_body_bytes: 4000 }
telemetry:
  otlp: { endpoint: "${col.url}", protocol: http/json, batch: { max_spans: 64, interval_ms: 20 } }
`);
  });
  after(async () => { await gw?.stop(); await col?.close(); });

  const auth = { authorization: `Bearer ${KEY}` };
  const send = async (path, body, headers) => {
    const r = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...json, ...headers }, body });
    return { status: r.status, tid: r.headers.get('x-trace-id'), body: await r.text() };
  };

  test('each gets one SERVER span: status code, error.type, span status unset for a 4xx', async () => {
    const cases = [
      ['401 no key', () => send('/v1/chat/completions', chat('chat'), { traceparent: `00-${TID}-${PID}-01` }), 401, 'missing_api_key'],
      ['400 malformed JSON', () => send('/v1/chat/completions', '{"model": "chat", ', auth), 400],
      ['415 not JSON', () => send('/v1/chat/completions', chat('chat'), { ...auth, 'content-type': 'text/plain' }), 415, 'unsupported_media_type'],
      ['404 unknown model', () => send('/v1/chat/completions', chat('CANARY-MODEL-NAME'), auth), 404, 'model_not_found'],
      ['404 unknown path', () => send('/v1/CANARY-PATH', chat('chat'), auth), 404, 'unknown_url'],
      ['413 too large', () => send('/v1/chat/completions', chat('chat', 'x'.repeat(5000)), auth), 413],
      ['400 pii_blocked', () => send('/v1/chat/completions', chat('chat', 'mail CANARY.user@example.com'), auth), 400, 'pii_blocked'],
    ];
    for (const [what, run, status, code] of cases) {
      const r = await run();
      assert.equal(r.status, status, `${what}: ${r.body}`);
      assert.match(r.tid ?? '', /^[0-9a-f]{32}$/, `${what}: X-Trace-Id`);
      await waitFor(() => byTrace(col, r.tid).length >= 1, { timeout: 5000, what: `${what}: its span` });
      const spans = byTrace(col, r.tid);
      assert.equal(spans.length, 1, `${what}: one span, no attempt`);
      const s = spans[0];
      assert.equal(s.kind, 2, what);
      assert.equal(s.attrs['http.response.status_code'], status, what);
      assert.equal(typeof s.attrs['error.type'], 'string', what);
      if (code) assert.equal(s.attrs['error.type'], code, what);
      assert.equal(s.attrs['http.request.method'], 'POST', what);
      assert.equal(s.status.code, 0, `${what}: a 4xx leaves the span status unset`);
      assert.equal(s.resource['service.name'], 'spillway');
      if (what.startsWith('401')) {
        assert.equal(r.tid, TID, 'the client trace is continued');
        assert.equal(s.parentSpanId, PID);
        assert.equal(s.attrs['url.path'], '/v1/chat/completions');
        assert.equal(s.name, 'POST /v1/chat/completions');
      }
      if (what.includes('pii')) {
        assert.equal(s.attrs['spillway.pii.email'], 1);
        assert.equal(s.attrs['spillway.key_name'], 'app');
        assert.equal(s.attrs['spillway.decision'], 'rejected');
      }
      if (what.includes('unknown path')) assert.equal(s.name, 'POST');
    }
    const line = gw.output().split('\n').find((l) => l.includes(`"trace_id":"${TID}"`));
    assert.ok(line, 'the refusal\'s decision-log line names its trace');
    const all = Buffer.concat(col.bodies).toString('latin1');
    assert.ok(all.length > 0 && !/canary/i.test(all), 'no client text or key in any exported byte');
  });
});
