// Soak: mixed load against Spillway (llmsim as local and cloud backend) for
// SOAK_S seconds while faults toggle on both backends, sampling the gateway
// every second. See docs/reliability.md ("Soak").
//
// Load: SOAK_WORKERS (8) clients in a loop, each request one of: streamed
// (45 %), non-streamed (45 %), streamed and aborted by the client after its
// first bytes (10 %). The local backend has 2 slots, so overflow spills to the
// cloud. Every 5 s each backend gets a new fault set (none, 30 % 503s, 150 ms
// latency, streams cut after 3 chunks, malformed SSE), from a seeded draw.
//
// Samples (one a second): the gateway's VmRSS (/proc/PID/status), its open
// fds (/proc/PID/fd), its event-loop lag (the spillway_event_loop_lag_seconds
// gauge of /metrics) and the worst GET /healthz latency seen by the driver.
//
// Fails (exit 1) when, after warm-up (the first 10 % of the run, at most
// 10 s), the median RSS of the last third exceeds that of the first third by
// more than 5 % and 1 MiB, or the median fd count by more than 5 % and 8 fds
// (idle upstream keep-alive connections come and go with the load);
// or when any request is lost: every request sent must get exactly one
// answer (a status line; a stream cut by a fault counts as answered and is
// reported as `cut`), except those the client aborted itself.
//
// Writes SOAK_OUT (bench/out)/soak.csv and soak.svg, and prints a summary
// line per metric. Env: SOAK_S (600), SOAK_WORKERS (8), SOAK_SEED (1),
// SPILLWAY_BUILD (build).
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLlmsim, startSpillway } from '../tests/it/lib/harness.mjs';
import { svgPlot } from './soak_svg.mjs';

const SOAK_S = Number(process.env.SOAK_S || 600);
const WORKERS = Number(process.env.SOAK_WORKERS || 8);
const OUT = resolve(process.env.SOAK_OUT || new URL('out', import.meta.url).pathname);
let seed = Number(process.env.SOAK_SEED || 1) >>> 0;
const rand = () => { // xorshift32: a repeatable fault and load sequence
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
};

const FAULTS = [
  {},
  { error_rate: 0.3, error_status: 503, retry_after_s: 1 },
  { latency_ms: 150 },
  { close_after_chunks: 3 },
  { malformed: 'sse' },
];

const edge = await startLlmsim(['--model', 'edge-model', '--slots', '2', '--decode-tps', '400', '--max-output-tokens', '24']);
const cloud = await startLlmsim(['--model', 'cloud-model', '--slots', '64', '--decode-tps', '800', '--max-output-tokens', '24']);
const gw = await startSpillway(`
listen: "127.0.0.1:0"
backends:
  - name: edge
    tier: local
    url: "${edge.url}"
    model: "edge-model"
    slots: 2
  - name: cloud
    tier: cloud
    url: "${cloud.url}"
    model: "cloud-model"
    api_key: "sk-cloud-secret"
models:
  - name: "chat"
    backends: [edge, cloud]
`);
const pid = gw.proc.pid;

const counts = { sent: 0, ok: 0, status_err: 0, cut: 0, aborted: 0, lost: 0 };
const lost = [];
let inflight = 0;
let stopping = false;

async function oneRequest(kind) {
  const ac = new AbortController();
  const stream = kind !== 'plain';
  const body = JSON.stringify({
    model: 'chat', stream, max_tokens: 8 + Math.floor(rand() * 16),
    messages: [{ role: 'user', content: `soak ${counts.sent} ${'lorem '.repeat(Math.floor(rand() * 40))}` }],
  });
  counts.sent++;
  inflight++;
  const guard = setTimeout(() => ac.abort(new Error('no answer within 60 s')), 60000);
  let answered = false;
  try {
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: ac.signal,
    });
    answered = true;
    if (kind === 'abort') {
      const rd = r.body.getReader();
      await rd.read();
      ac.abort(new Error('client abort'));
      await rd.cancel().catch(() => {});
      counts.aborted++;
      return;
    }
    const text = await r.text();
    if (r.status !== 200) counts.status_err++;
    else if (stream && !text.includes('data: [DONE]')) counts.cut++;
    else counts.ok++;
  } catch (e) {
    if (answered) counts.cut++; // the status line came, the body was cut (a fault)
    else { counts.lost++; if (lost.length < 10) lost.push(String(e.cause || e)); }
  } finally {
    clearTimeout(guard);
    inflight--;
  }
}

async function worker() {
  while (!stopping) {
    const x = rand();
    await oneRequest(x < 0.45 ? 'stream' : x < 0.9 ? 'plain' : 'abort');
  }
}

const post = (url, obj) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(obj) }).then((r) => r.text());
async function toggleFaults() {
  await post(`${edge.url}/admin/faults`, FAULTS[Math.floor(rand() * FAULTS.length)]);
  await post(`${cloud.url}/admin/faults`, FAULTS[Math.floor(rand() * FAULTS.length)]);
}

function rssKiB() {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return Number(m[1]);
}
const fdCount = () => readdirSync(`/proc/${pid}/fd`).length;

// Lag: the gateway's own gauge (spillway_event_loop_lag_seconds, the worst
// lateness of its 100 ms timer over the last second), read once a second; and
// GET /healthz latency from the driver, sent every 100 ms (worst per second),
// which also includes the driver's own delay.
let probeMax = 0;
const probeTimer = setInterval(async () => {
  const t0 = performance.now();
  try {
    const r = await fetch(`${gw.url}/healthz`);
    await r.arrayBuffer();
  } catch { /* the gateway not answering shows as lag */ }
  probeMax = Math.max(probeMax, performance.now() - t0);
}, 100);
async function gatewayLagMs() {
  try {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const m = text.match(/^spillway_event_loop_lag_seconds ([0-9.e+-]+)$/m);
    return m ? Math.round(Number(m[1]) * 10000) / 10 : NaN;
  } catch { return NaN; }
}

const samples = [];
const t0 = Date.now();
const sampleTimer = setInterval(async () => {
  const s = {
    t_s: Math.round((Date.now() - t0) / 100) / 10,
    rss_kib: rssKiB(), fds: fdCount(),
    healthz_ms: Math.round(probeMax * 10) / 10,
    sent: counts.sent, inflight,
  };
  probeMax = 0;
  s.lag_ms = await gatewayLagMs();
  samples.push(s);
}, 1000);
const faultTimer = setInterval(() => { toggleFaults().catch(() => {}); }, 5000);

const workers = Array.from({ length: WORKERS }, worker);
await new Promise((r) => setTimeout(r, SOAK_S * 1000));
stopping = true;
clearInterval(faultTimer);
await Promise.all(workers); // each request ends: answered, or lost after the 60 s guard
clearInterval(sampleTimer);
clearInterval(probeTimer);
await post(`${edge.url}/admin/faults`, {}).catch(() => {});

// ---- verdict ----
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 2)] : 0; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * p))] : 0; };
const warm = Math.min(10, Math.floor(samples.length / 10));
const steady = samples.slice(warm);
const third = Math.max(1, Math.floor(steady.length / 3));
const first = steady.slice(0, third);
const last = steady.slice(-third);
const failures = [];
function growth(name, key, floor) {
  const a = median(first.map((s) => s[key]));
  const b = median(last.map((s) => s[key]));
  const pctGrowth = a ? ((b - a) / a) * 100 : 0;
  const bad = b - a > floor && pctGrowth > 5;
  if (bad) failures.push(`${name} grew ${a} -> ${b} (${pctGrowth.toFixed(1)} %)`);
  return { start: a, end: b, growth_pct: Math.round(pctGrowth * 10) / 10 };
}
const rss = growth('RSS (KiB)', 'rss_kib', 1024);
const fds = growth('open fds', 'fds', 8);
const stats = (key) => { const v = samples.map((s) => s[key]).filter((x) => !Number.isNaN(x)); return { p50: pct(v, 0.5), p99: pct(v, 0.99), max: Math.max(...v) }; };
const lag = stats('lag_ms');
const healthz = stats('healthz_ms');
if (samples.some((s) => Number.isNaN(s.lag_ms))) failures.push('spillway_event_loop_lag_seconds missing from /metrics');
const answered = counts.ok + counts.status_err + counts.cut + counts.aborted;
if (counts.lost > 0 || answered !== counts.sent) failures.push(`requests lost: ${counts.lost} of ${counts.sent} (${lost.join('; ')})`);
if (samples.length < 3) failures.push('too few samples');

mkdirSync(OUT, { recursive: true });
const cols = ['t_s', 'rss_kib', 'fds', 'lag_ms', 'healthz_ms', 'sent', 'inflight'];
writeFileSync(join(OUT, 'soak.csv'), [cols.join(','), ...samples.map((s) => cols.map((c) => s[c]).join(','))].join('\n') + '\n');
writeFileSync(join(OUT, 'soak.svg'), svgPlot(samples, { title: `Spillway soak, ${SOAK_S} s, ${counts.sent} requests` }));

const summary = { seconds: SOAK_S, samples: samples.length, requests: counts, rss_kib: rss, fds, loop_lag_ms: lag, healthz_ms: healthz };
console.log(`soak: ${JSON.stringify(summary)}`);
console.log(`soak: wrote ${join(OUT, 'soak.csv')} and soak.svg`);
await gw.stop();
await edge.stop();
await cloud.stop();
if (failures.length) {
  console.error(`soak: FAILED\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log('soak: OK');
