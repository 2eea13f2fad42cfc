// The fault matrix: one cell per fault, each run under mixed load (streamed and
// not, restricted and not, random client aborts; lib/mixload.mjs) for a few
// seconds against a fresh gateway and fresh backends. Backends live in their own
// network namespaces on their own veth links (lib/netns.mjs), so the network
// between the gateway and each tier can be shaped, cut and restored; without root
// or `ip netns` the backend-fault cells run on loopback and the network cells skip
// with the reason. Delay, jitter, loss and reordering come from tc netem, or on a
// kernel without sch_netem from lib/netimp.c, a userspace link that impairs every
// IP packet alike (lib/netns.mjs).
//
// Every cell checks, besides its own expectation:
//   - every request sent got exactly one answer: served (complete, [DONE] for a
//     stream), a structured rejection (JSON error with a code), or a mid-stream
//     error event followed by [DONE]; within the deadline + TOLERANCE_MS (lost = 0);
//   - no restricted request (X-Spillway-Allow-Cloud: false, canary in the body)
//     was served by or reached the cloud (cloud llmsim /admin/received);
//   - cloud spend <= the cap (/admin/state);
//   - the gateway is still up (/healthz) and both tiers serve again once the fault
//     is gone (a local-only and a cloud-only request are answered 200).
// The matrix with its counts is printed at the end (and written to
// $SPILLWAY_BUILD/faults-matrix.json).
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD, startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { netCapabilities, createTopology } from './lib/netns.mjs';
import { mixload, CANARY } from './lib/mixload.mjs';
import { startRedis } from './lib/redis.mjs';

const ADMIN = 'sk-admin-faults';
const DEADLINE_MS = 4000;        // routing.request_timeout_ms
const TOLERANCE_MS = 4000;       // an answer later than deadline + this is lost
const CELL_MS = 3000;            // load per cell
const DRAIN_MS = 3000;           // limits.drain_timeout_ms
const CAP_USD = 0.5;             // routing.spend.cap_usd: about 100 cloud requests
const EDGE_PORT = 18081;
const CLOUD_PORT = 18082;

const caps = netCapabilities();
const topo = caps.ok ? await createTopology(['local', 'cloud'], { impair: caps.impair || 'netem' }) : null;
if (!caps.ok) console.log(`# faults: no network namespaces (${caps.reason}): backends on loopback, network cells skipped`);
else if (!caps.impair) console.log(`# faults: ${caps.netemReason}: delay and loss cells skipped`);
else if (caps.impair === 'netimp') console.log(`# faults: ${caps.netemReason}: delay and loss from the userspace link (lib/netimp.c)`);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const admin = { authorization: `Bearer ${ADMIN}` };

const config = (edge, cloud, extra = '') => `
listen: "127.0.0.1:0"
admin:
  key: "${ADMIN}"
backends:
  - name: edge
    tier: local
    url: "${edge}"
    model: "edge-model"
    slots: 2
    connect_timeout_ms: 500
  - name: cloud
    tier: cloud
    url: "${cloud}"
    model: "cloud-model"
    connect_timeout_ms: 500
    price:
      input_usd_per_mtok: 100
      output_usd_per_mtok: 100
models:
  - name: "chat"
    backends: [edge, cloud]
  - name: "local-only"
    backends: [edge]
  - name: "cloud-only"
    backends: [cloud]
routing:
  ttft_budget_ms: 300
  request_timeout_ms: ${DEADLINE_MS}
  health_interval_ms: 200
  breaker:
    failures: 3
    window_ms: 5000
    cooldown_ms: 1000
  spend:
    cap_usd: ${CAP_USD}
    on_cap: shed
limits:
  drain_timeout_ms: ${DRAIN_MS}
${extra}`;

const EDGE_ARGS = ['--model', 'edge-model', '--slots', '2', '--decode-tps', '50', '--keep-received', '100000'];
const CLOUD_ARGS = [...(process.env.FAULTS_VERBOSE ? ['--verbose'] : []), '--model', 'cloud-model', '--slots', '64', '--decode-tps', '400', '--keep-received', '100000'];

async function startBackend(tier, args) {
  if (topo) return topo.startLlmsim(tier, tier === 'local' ? EDGE_PORT : CLOUD_PORT, args);
  return startLlmsim(args);
}
// Restarts a crashed loopback llmsim on the port it had.
async function restartBackend(tier, old, args) {
  if (topo) return topo.startLlmsim(tier, tier === 'local' ? EDGE_PORT : CLOUD_PORT, args);
  return startLlmsim(['--port', String(old.port), ...args]); // the last --port wins
}
const setFaults = (sim, f) => fetch(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify(f) }).then((r) => assert.equal(r.status, 200));
const clearFaults = (sim) => fetch(`${sim.url}/admin/faults`, { method: 'DELETE' }).then((r) => r.text());

const matrix = [];

async function probe(gw, model) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, max_tokens: 4, messages: [{ role: 'user', content: 'probe' }] }),
  }).catch(() => null);
  if (!r) return false;
  await r.text();
  return r.status === 200;
}

// One cell: fresh backends and gateway, load for CELL_MS while cell.during()
// injects the fault, then cell.heal() and the checks.
async function runCell(cell) {
  const ctx = { t0: 0 };
  const procs = [];
  try {
    ctx.edge = await startBackend('local', [...EDGE_ARGS, ...(cell.edgeArgs || [])]);
    ctx.cloud = await startBackend('cloud', [...CLOUD_ARGS, ...(cell.cloudArgs || [])]);
    procs.push(() => ctx.edge, () => ctx.cloud);
    if (cell.redis) {
      ctx.redis = await startRedis();
      procs.push(() => ctx.redis);
    }
    ctx.gw = await startSpillway(config(ctx.edge.url, ctx.cloud.url,
      ctx.redis ? `state:\n  redis: "${ctx.redis.url}"\n  timeout_ms: 100\n` : ''));
    procs.push(() => ctx.gw);
    ctx.config = config;
    if (cell.coldEdge) {
      await waitFor(async () => (await getJSON(`${ctx.gw.url}/admin/state`, { headers: admin })).body.backends?.find((b) => b.name === 'edge')?.health === 'cold', { timeout: 10000, what: 'the gateway to see the local model cold' });
    } else {
      await waitFor(() => probe(ctx.gw, 'local-only'), { timeout: 10000, what: 'the local tier to serve' });
    }
    await fetch(`${ctx.cloud.url}/admin/received`, { method: 'DELETE' });
    ctx.t0 = Date.now();
    const load = await mixload({
      url: ctx.gw.url, durationMs: cell.durationMs || CELL_MS, concurrency: 6, seed: matrix.length + 1,
      clientTimeoutMs: DEADLINE_MS + TOLERANCE_MS, refusedOk: (t) => ctx.refusedAfter !== undefined && t >= ctx.refusedAfter,
    });
    await Promise.all([load.wait, cell.during?.(ctx)]);
    await cell.heal?.(ctx);
    const c = load.counts();
    const row = { cell: cell.name, ...c };
    delete row.lostDetails;
    matrix.push(row);

    assert.equal(c.lost, 0, `lost requests:\n${c.lostDetails.slice(0, 20).join('\n')}`);
    const leaked = load.results.filter((r) => r.restricted && r.tier === 'cloud');
    assert.equal(leaked.length, 0, `restricted requests served by the cloud: ${leaked.map((r) => r.id)}`);
    const cloudSaw = (await getJSON(`${ctx.cloud.url}/admin/received`)).body.requests;
    const canaries = cloudSaw.filter((r) => JSON.stringify(r.body).includes(CANARY));
    assert.equal(canaries.length, 0, `the cloud received ${canaries.length} restricted request(s)`);
    if (!cell.exits && !cell.onlyCore) {
      const st = (await getJSON(`${ctx.gw.url}/admin/state`, { headers: admin })).body;
      assert.ok(st.spend_usd <= st.spend_cap_usd + 1e-9, `spend ${st.spend_usd} over the cap ${st.spend_cap_usd}`);
      row.spend_usd = Math.round(st.spend_usd * 1000) / 1000;
      assert.equal((await fetch(`${ctx.gw.url}/healthz`)).status, 200, 'the gateway answers /healthz after the cell');
      await waitFor(() => probe(ctx.gw, 'local-only'), { timeout: 15000, what: 'the local tier to serve again after the fault' });
      // A cell may have spent the cap (then the cloud is shed, as it should be):
      // lift it, so the probe asks whether the cloud itself is back.
      const lift = await fetch(`${ctx.gw.url}/admin/thresholds`, { method: 'PUT', headers: admin, body: JSON.stringify({ spend_cap_usd: 1000 }) });
      assert.equal(lift.status, 200, await lift.text());
      await waitFor(() => probe(ctx.gw, 'cloud-only'), { timeout: 15000, what: 'the cloud tier to serve again after the fault' });
    }
    await cell.expect?.(c, load.results, ctx);
  } catch (e) {
    if (process.env.FAULTS_VERBOSE) console.log(ctx.gw?.output().split('\n').filter((l) => !l.startsWith('{')).join('\n'));
    throw e;
  } finally {
    if (process.env.FAULTS_VERBOSE) {
      console.log(ctx.gw?.output().split('\n').filter((l) => /rejected the request|refused|failed/.test(l)).slice(0, 30).join('\n'));
      console.log('cloud:', ctx.cloud?.output().slice(0, 3000));
    }
    await cell.heal?.(ctx).catch(() => {});
    // SIGTERM, so a sanitizer build reports leaks; a sanitizer report fails the cell.
    const errors = [];
    for (const p of procs.reverse()) await p()?.stop().catch((e) => errors.push(e));
    if (topo) { await topo.clear('local'); await topo.clear('cloud'); topo.up('local'); topo.up('cloud'); }
    if (errors.length) throw errors[0];
  }
}

const served = (c) => c.local + c.cloud;
const netCell = (need) => (!caps.ok ? caps.reason : need === 'netem' && !caps.impair ? caps.netemReason : need === 'tbf' && !caps.tbf ? caps.tbfReason : false);

// The time a plain HTTP exchange with a tier's backend takes through its link
// (connect + request + answer: two round trips), to show a delay is in force.
async function exchangeMs(sim) {
  const t = Date.now();
  await fetch(`${sim.url}/healthz`, { headers: { connection: 'close' } }).then((r) => r.text());
  return Date.now() - t;
}

const cells = [
  {
    name: 'no fault (control)',
    expect: (c) => {
      assert.ok(c.local > 0, 'the baseline is served locally');
      assert.deepEqual(c.rejected, {}, 'nothing is rejected when nothing fails');
      assert.deepEqual(c.midstream, {}, 'no stream fails when nothing fails');
      assert.equal(served(c) + c.aborted, c.sent);
    },
  },
  {
    name: 'local crash (SIGKILL) and restart',
    during: async (ctx) => {
      await sleep(800);
      await ctx.edge.stop('SIGKILL');
      await sleep(1000);
      ctx.edge = await restartBackend('local', ctx.edge, EDGE_ARGS);
      ctx.restartedAt = Date.now();
    },
    // The box is used again once it is back (the recovery probe), and requests
    // sent while it was dead were answered (lost = 0).
  },
  {
    name: 'local hang (accepts, never answers)',
    during: (ctx) => setFaults(ctx.edge, { hang: true }),
    heal: (ctx) => clearFaults(ctx.edge),
    expect: (c) => assert.ok(c.cloud > 0, 'open requests are answered by the cloud while the local box hangs'),
  },
  {
    name: 'slow first token (local +1500 ms)',
    during: (ctx) => setFaults(ctx.edge, { latency_ms: 1500 }),
    heal: (ctx) => clearFaults(ctx.edge),
  },
  {
    name: 'cold start (local loads 2 s)',
    coldEdge: true,
    edgeArgs: ['--cold-start-ms', '2000'],
    expect: (c, results) => assert.ok(results.some((r) => !r.restricted && r.tier === 'cloud' && r.startedAt < results[0].startedAt + 1500), 'open requests spill while the local model loads'),
  },
  {
    name: 'cloud 429 storm with Retry-After',
    during: (ctx) => setFaults(ctx.cloud, { error_rate: 1, error_status: 429, retry_after_s: 2 }),
    heal: (ctx) => clearFaults(ctx.cloud),
    expect: (c) => {
      assert.ok(c.local > 0, 'the local tier keeps serving');
      // A request that left the local queue for the cloud and was refused there
      // goes back to the (healthy) local box within its deadline.
      assert.equal(c.rejected.all_backends_failed ?? 0, 0, 'no all_backends_failed while the local tier is up');
    },
  },
  {
    name: '5xx burst on both tiers (1.5 s)',
    during: async (ctx) => {
      await Promise.all([setFaults(ctx.edge, { error_rate: 0.5, error_status: 503 }), setFaults(ctx.cloud, { error_rate: 0.5, error_status: 502 })]);
      await sleep(1500);
      await Promise.all([clearFaults(ctx.edge), clearFaults(ctx.cloud)]);
    },
    heal: (ctx) => Promise.all([clearFaults(ctx.edge), clearFaults(ctx.cloud)]),
  },
  {
    name: 'connection reset mid-stream',
    during: (ctx) => Promise.all([setFaults(ctx.edge, { close_after_chunks: 3 }), setFaults(ctx.cloud, { close_after_chunks: 3 })]),
    heal: (ctx) => Promise.all([clearFaults(ctx.edge), clearFaults(ctx.cloud)]),
    expect: (c) => assert.ok(c.midstream.upstream_stream_failed > 0, 'cut streams end with an error event'),
  },
  {
    name: 'garbage and truncated SSE',
    during: async (ctx) => {
      await setFaults(ctx.edge, { malformed: 'sse' });
      await setFaults(ctx.cloud, { malformed: 'json' });
      await sleep(1500);
      await setFaults(ctx.edge, { malformed: 'json' });
      await setFaults(ctx.cloud, { malformed: 'sse' });
    },
    heal: (ctx) => Promise.all([clearFaults(ctx.edge), clearFaults(ctx.cloud)]),
  },
  {
    name: 'latency +300 ms with jitter (local link)',
    skip: netCell('netem'),
    during: async (ctx) => {
      await topo.shape('local', ['netem', 'delay', '300ms', '100ms', 'distribution', 'normal']);
      ctx.delayedMs = await exchangeMs(ctx.edge);
    },
    heal: async () => topo?.clear('local'),
    expect: (c, results, ctx) => {
      // Two round trips at 2 x (300 +- 100) ms each: far above loopback's < 10 ms.
      assert.ok(ctx.delayedMs >= 400, `the local link is delayed (an exchange took ${ctx.delayedMs} ms)`);
      assert.ok(c.cloud > 0, 'open requests spill while the local link is slow');
    },
  },
  {
    name: '5 % loss and reordering (both links)',
    skip: netCell('netem'),
    during: async (ctx) => {
      await topo.shape('local', ['netem', 'loss', '5%', 'delay', '10ms', 'reorder', '25%', '50%']);
      await topo.shape('cloud', ['netem', 'loss', '5%', 'delay', '10ms', 'reorder', '25%', '50%']);
      await sleep(CELL_MS - 500);
      ctx.linkStats = [await topo.stats('local'), await topo.stats('cloud')];
    },
    heal: async () => { await topo?.clear('local'); await topo?.clear('cloud'); },
    expect: (c, results, ctx) => {
      // With the userspace link, its counters show packets were really lost.
      if (caps.impair === 'netimp') {
        for (const st of ctx.linkStats) assert.ok(st.dropped_loss > 0, `packets dropped on the link: ${JSON.stringify(st)}`);
      }
      assert.ok(served(c) > 0, 'requests are served over lossy links');
    },
  },
  {
    name: 'partition of the cloud link (down 1.5 s, then up)',
    skip: netCell(),
    during: async () => {
      await sleep(500);
      topo.down('cloud');
      await sleep(1500);
      topo.up('cloud');
    },
    heal: async () => topo?.up('cloud'),
  },
  {
    name: 'bandwidth cap (local link 64 kbit/s)',
    skip: netCell('tbf'),
    during: () => topo.shape('local', ['tbf', 'rate', '64kbit', 'burst', '4kbit', 'latency', '500ms']),
    heal: async () => topo?.clear('local'),
  },
  {
    name: 'Redis down 1.5 s, then back (shared state)',
    redis: true,
    during: async (ctx) => {
      await sleep(800);
      await ctx.redis.kill();
      await waitFor(async () => (await getJSON(`${ctx.gw.url}/admin/state`, { headers: admin })).body.state?.degraded === 'redis',
        { timeout: 5000, what: 'the gateway to report degraded: redis' });
      ctx.sawDegraded = true;
      await sleep(1500);
      await ctx.redis.restart();
    },
    heal: async (ctx) => {
      await waitFor(async () => (await getJSON(`${ctx.gw.url}/admin/state`, { headers: admin })).body.state?.degraded === null,
        { timeout: 15000, what: 'shared state back once Redis is' });
    },
    expect: (c, results, ctx) => {
      assert.ok(ctx.sawDegraded, 'the loss of Redis was visible in /admin/state');
      assert.ok(c.local > 0, 'the local tier keeps serving without Redis');
    },
  },
  {
    name: 'bad reload then good reload (SIGHUP)',
    during: async (ctx) => {
      const good = readFileSync(ctx.gw.configFile, 'utf8');
      await sleep(700);
      writeFileSync(ctx.gw.configFile, good.replace('slots: 2', 'slots: two'));
      ctx.gw.proc.kill('SIGHUP');
      await waitFor(() => /reload refused/.test(ctx.gw.output()), { timeout: 5000, what: 'the broken configuration to be refused' });
      await sleep(700);
      writeFileSync(ctx.gw.configFile, good.replace('ttft_budget_ms: 300', 'ttft_budget_ms: 400'));
      ctx.gw.proc.kill('SIGHUP');
      await waitFor(() => /reloaded /.test(ctx.gw.output()), { timeout: 5000, what: 'the fixed configuration to be loaded' });
    },
    expect: async (c, results, ctx) => {
      const m = await (await fetch(`${ctx.gw.url}/metrics`)).text();
      assert.match(m, /spillway_config_reloads_total\{result="failed"\} [1-9]/);
      assert.match(m, /spillway_config_reloads_total\{result="ok"\} [1-9]/);
    },
  },
  {
    name: 'SIGTERM under load (drain)',
    exits: true,
    during: async (ctx) => {
      await sleep(1200);
      ctx.refusedAfter = Date.now();
      ctx.termAt = Date.now();
      ctx.gw.proc.kill('SIGTERM');
      await ctx.gw.exited;
      ctx.exitAt = Date.now();
    },
    expect: (c, results, ctx) => {
      assert.equal(ctx.gw.proc.exitCode, 0, 'exit 0 after the drain');
      // In flight at the signal: finished (served, or a structured end), none lost.
      const inflight = results.filter((r) => r.startedAt < ctx.termAt && r.endedAt > ctx.termAt && r.outcome !== 'aborted');
      for (const r of inflight) assert.ok(r.endedAt <= ctx.termAt + DRAIN_MS + TOLERANCE_MS, `#${r.id} ended ${r.endedAt - ctx.termAt} ms after SIGTERM`);
      // Nothing sent after the signal was served.
      const late = results.filter((r) => r.startedAt > ctx.termAt + 50 && r.outcome === 'served');
      assert.equal(late.length, 0, `${late.length} request(s) sent after SIGTERM were served`);
      assert.ok(c.refused + (c.rejected.shutting_down || 0) > 0, 'new requests are refused');
    },
  },
  {
    name: 'rotation (one tier faulty at a time, every 2.5 s)',
    // Only lost = 0 and nothing restricted in the cloud here; the answered share
    // under rotation is another test's.
    onlyCore: true,
    durationMs: 7500,
    during: async (ctx) => {
      await setFaults(ctx.edge, { error_rate: 1, error_status: 503 });
      await sleep(2500);
      await clearFaults(ctx.edge);
      await setFaults(ctx.cloud, { error_rate: 1, error_status: 503 });
      await sleep(2500);
      await clearFaults(ctx.cloud);
      await setFaults(ctx.edge, { hang: true });
      await sleep(2500);
      await clearFaults(ctx.edge);
    },
    heal: (ctx) => Promise.all([clearFaults(ctx.edge), clearFaults(ctx.cloud)]),
  },
];

describe('fault matrix: every request gets exactly one answer, nothing restricted leaves, spend stays capped', () => {
  after(() => {
    topo?.destroy();
    const fmt = (o) => Object.entries(o).map(([k, v]) => `${k}:${v}`).join(' ') || '-';
    const lines = ['| cell | sent | served local | served cloud | rejected (code:n) | mid-stream errors | client-aborted | refused | lost |', '| --- | --- | --- | --- | --- | --- | --- | --- | --- |'];
    for (const r of matrix) lines.push(`| ${r.cell} | ${r.sent} | ${r.local} | ${r.cloud} | ${fmt(r.rejected)} | ${fmt(r.midstream)} | ${r.aborted} | ${r.refused} | ${r.lost} |`);
    console.log(lines.join('\n'));
    try { writeFileSync(join(BUILD, 'faults-matrix.json'), JSON.stringify(matrix, null, 1)); } catch { /* build dir read-only */ }
  });
  for (const cell of cells) {
    test(cell.name, { skip: cell.skip || false }, () => runCell(cell));
  }
});
