// OpenTelemetry traces, the request span's events and the replica identity
// (docs/operations.md "Traces"): a request that waited in Spillway's local
// queue and left it for the cloud carries a queue_leave event; an attempt
// given up for a slow first byte a ttft_abandon event; a request with an
// output contract a contract event with the verdict; gateways sharing one
// Redis export spillway.replica.id on their resource. Each gateway exports
// http/json to the test's OTLP receiver (tests/it/lib/otlp.mjs), or
// http/protobuf where both are asserted; every wait is a bounded wait on a
// condition.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { gatewayYaml, withProcs, edgeAndCloud, ADMIN } from './lib/gateway.mjs';
import { startCollector } from './lib/otlp.mjs';
import { startRedis } from './lib/redis.mjs';

const admin = { authorization: `Bearer ${ADMIN}` };
const body = (model, extra = {}) => JSON.stringify({ model, max_tokens: 8, messages: [{ role: 'user', content: 'hello there' }], ...extra });

async function chat(gw, model, { headers = {}, extra = {} } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body(model, extra),
  });
  const text = await r.text();
  return {
    status: r.status, text, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'),
    traceId: r.headers.get('x-trace-id'),
  };
}

const otlp = (col, protocol = 'http/json') =>
  `telemetry:\n  otlp: { endpoint: "${col.url}", protocol: ${protocol}, batch: { max_spans: 64, interval_ms: 20 } }\n`;
const backendState = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: admin })).body.backends.find((b) => b.name === name);
const simStats = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body;

// The SERVER span of trace tid, once its attempts' CLIENT spans are there too.
async function serverSpan(col, tid, attempts) {
  const of = () => col.spans.filter((s) => s.traceId === tid);
  await waitFor(() => of().filter((s) => s.kind === 2).length === 1 && of().filter((s) => s.kind === 3).length >= attempts,
    { timeout: 5000, what: `the spans of trace ${tid}` });
  const spans = of();
  return { srv: spans.find((s) => s.kind === 2), clients: spans.filter((s) => s.kind === 3) };
}

describe('span events of the request', () => {
  test('queue_leave: a request queued locally that leaves for the cloud; the event names the queue and the wait', () => withProcs(async (track) => {
    const col = await startCollector();
    try {
      const { edge, gw } = await edgeAndCloud(track, {
        edgeArgs: ['--slots', '1', '--decode-tps', '20'],
        edge: { slots: 1 },
        routing: `  ttft_budget_ms: 1500\n${otlp(col)}`,
      });
      // One short answer teaches the router the box's service time, so that
      // waiting behind one request looks within the budget.
      assert.equal((await chat(gw, 'chat', { extra: { stream: true } })).backend, 'edge');
      const long = chat(gw, 'chat', { extra: { max_tokens: 100 } });
      await waitFor(async () => (await simStats(edge)).in_flight === 1, { what: 'edge busy' });
      const queued = chat(gw, 'chat');
      await waitFor(async () => (await backendState(gw, 'edge')).queued === 1, { what: 'the request queued locally' });
      const moved = await queued;
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.backend, 'cloud');
      assert.equal(moved.reason, 'overflow');
      const { srv, clients } = await serverSpan(col, moved.traceId, 2);
      const ev = srv.events.filter((e) => e.name === 'queue_leave');
      assert.equal(ev.length, 1, `one queue_leave event: ${JSON.stringify(srv.events.map((e) => e.name))}`);
      assert.equal(ev[0].attrs['spillway.backend'], 'edge');
      assert.equal(typeof ev[0].attrs['spillway.budget_ms'], 'number', 'the time it waited');
      assert.ok(ev[0].attrs['spillway.budget_ms'] >= 0);
      assert.ok(ev[0].time >= srv.start && ev[0].time <= srv.end, 'the event lies within the request');
      // the queued attempt (skipped, never sent) and the cloud's
      const skipped = clients.find((c) => c.attrs['spillway.backend'] === 'edge');
      assert.equal(skipped.attrs['spillway.outcome'], 'skipped');
      assert.equal(srv.attrs['spillway.reason'], 'overflow');
      assert.equal((await long).backend, 'edge');
    } finally {
      await col.close();
    }
  }));

  test('ttft_abandon: a hung local attempt given up after the TTFT budget; the event names the backend, the class and the budget', () => withProcs(async (track) => {
    const col = await startCollector();
    try {
      const { gw } = await edgeAndCloud(track, {
        edgeArgs: ['--hang'],
        routing: `  ttft_budget_ms: 300\n  request_timeout_ms: 8000\n${otlp(col, 'http/protobuf')}`,
      });
      for (const stream of [false, true]) {
        const r = await chat(gw, 'chat', { extra: { stream } });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.backend, 'cloud');
        const { srv, clients } = await serverSpan(col, r.traceId, 2);
        const ev = srv.events.filter((e) => e.name === 'ttft_abandon');
        assert.equal(ev.length, 1, `one ttft_abandon event: ${JSON.stringify(srv.events.map((e) => e.name))}`);
        assert.equal(ev[0].attrs['spillway.backend'], 'edge');
        assert.equal(ev[0].attrs['error.type'], 'ttft_abandoned');
        // the budget given up on: the TTFT budget, plus the expected generation
        // time for a non-streamed request (docs/routing.md, TTFT abandon)
        const budget = ev[0].attrs['spillway.budget_ms'];
        if (stream) assert.equal(budget, 300);
        else assert.ok(budget >= 300, `budget ${budget}`);
        assert.ok(ev[0].time >= srv.start && ev[0].time <= srv.end);
        const abandoned = clients.find((c) => c.attrs['spillway.backend'] === 'edge');
        assert.ok(ev[0].time >= abandoned.start, 'given up after the attempt began');
        assert.equal(abandoned.attrs['spillway.outcome'], 'failed');
        assert.equal(abandoned.attrs['error.type'], 'ttft_abandoned');
        assert.equal(abandoned.status.code, 2);
        assert.ok(srv.events.some((e) => e.name === 'failover' && e.attrs['spillway.backend'] === 'edge'));
      }
    } finally {
      await col.close();
    }
  }));

  test('contract: the output-contract verdict on the answer, ok for a conforming one and violation for a drifted one', () => withProcs(async (track) => {
    const col = await startCollector();
    try {
      const SCHEMA = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name', 'age'], additionalProperties: false };
      const edge = await track(startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']));
      const cloud = await track(startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--drift', 'shape']));
      const gw = await track(startSpillway(`${gatewayYaml({
        backends: [
          { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model' },
          { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' },
        ],
        models: [{ name: 'local', backends: ['edge'] }, { name: 'remote', backends: ['cloud'] }],
      })}pii:\n  policy: off\n${otlp(col)}`));
      const extra = {
        max_tokens: 64, messages: [{ role: 'user', content: '{"name":"Ada","age":36}' }],
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: SCHEMA } },
      };
      for (const [model, verdicts] of [['local', ['ok']], ['remote', ['violation', 'invalid_json']]]) {
        const r = await chat(gw, model, { extra });
        assert.equal(r.status, 200, r.text);
        const { srv } = await serverSpan(col, r.traceId, 1);
        const ev = srv.events.filter((e) => e.name === 'contract');
        assert.equal(ev.length, 1, `${model}: one contract event: ${JSON.stringify(srv.events.map((e) => e.name))}`);
        assert.ok(verdicts.includes(ev[0].attrs['spillway.contract']), `${model}: ${ev[0].attrs['spillway.contract']}`);
        assert.ok(ev[0].time >= srv.start && ev[0].time <= srv.end);
      }
      // a request without a schema has no verdict, so no event
      const plain = await chat(gw, 'local');
      const { srv } = await serverSpan(col, plain.traceId, 1);
      assert.equal(srv.events.filter((e) => e.name === 'contract').length, 0);
    } finally {
      await col.close();
    }
  }));
});

describe('the replica identity', () => {
  test('gateways sharing one Redis: each resource carries its own spillway.replica.id, the one in its log; a lone gateway none', () => withProcs(async (track) => {
    const col = await startCollector();
    try {
      const redis = await track(startRedis());
      const edge = await track(startLlmsim(['--model', 'edge-model', '--decode-tps', '0']));
      const yaml = (extra) => `${gatewayYaml({
        backends: [{ name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: 4 }],
        models: [{ name: 'chat', backends: ['edge'] }],
      })}${extra}${otlp(col, 'http/protobuf')}`;
      const shared = `state:\n  redis: "${redis.url}"\n  key_prefix: "otel${process.pid}:"\n  replicas: 2\n`;
      const gws = [await track(startSpillway(yaml(shared))), await track(startSpillway(yaml(shared)))];
      const lone = await track(startSpillway(yaml('')));
      const ids = gws.map((g) => {
        const m = g.output().match(/state: shared on Redis .*replica ([0-9a-f]+\.\d+)\)/);
        assert.ok(m, `the replica's id in its log:\n${g.output()}`);
        return m[1];
      });
      assert.notEqual(ids[0], ids[1]);
      for (const [i, g] of gws.entries()) {
        const r = await chat(g, 'chat');
        assert.equal(r.status, 200, r.text);
        const { srv, clients } = await serverSpan(col, r.traceId, 1);
        assert.equal(srv.resource['spillway.replica.id'], ids[i]);
        assert.equal(clients[0].resource['spillway.replica.id'], ids[i]);
      }
      const r = await chat(lone, 'chat');
      const { srv } = await serverSpan(col, r.traceId, 1);
      assert.equal(srv.resource['spillway.replica.id'], undefined, 'no shared Redis: no replica id');
      assert.match(srv.resource['service.instance.id'], /^[0-9a-f-]{36}$/);
    } finally {
      await col.close();
    }
  }));
});
