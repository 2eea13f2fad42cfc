// The agent scenario of bench/agent_sim.c live: Spillway in front of two
// llmsim boxes (2 slots each, a prefix cache of one prompt per slot) and an
// llmsim cloud, fed conversations of multi-turn agents (each turn resends
// the conversation so far plus the last answer and a new tool output),
// once with routing.affinity on and once off, against an oracle that knows
// the caches (the replay's, over the same arrivals and llmsim's service
// times). Time runs SPEEDUP times faster than the replay's scenario (every
// duration divided, every rate multiplied), so a run is short; the
// scenario's shape is the same. Turns arrive open-loop at the trace's
// times; TTFT is measured by the client (first streamed content).
//
//   SPILLWAY_BUILD=build node bench/agent_live.mjs [SEEDS] [DURATION_S] [SPEEDUP]
//     SEEDS "1,2,3" (default 1), DURATION_S: conversations start within it
//     in the replay's time (default 600), SPEEDUP (default 4).
//   AGENT_LIVE_MODES=on,off (default both) runs only those.
//
// Prints one line per seed and mode and the means with the targets of
// docs/routing.md "Prefix affinity". Exit status 0 whatever the figures.
import { startLlmsim, startSpillway, getJSON } from '../tests/it/lib/harness.mjs';

const seeds = String(process.argv[2] || '1').split(',').map(Number);
const DURATION = Number(process.argv[3] || 600);
const SPEEDUP = Number(process.argv[4] || 4);
const MODES = (process.env.AGENT_LIVE_MODES || 'on,off').split(',');
const ADMIN = 'sk-admin-agent-live';

// bench/agent_sim.c ag_params_default, in the replay's time.
const P = {
  boxes: 2, slots: 2, cache: 1, prefill: 0.4, tps: 40, system: 2000, turnMin: 100, turnMax: 400,
  outMin: 24, outMax: 96, turns: 12, gap: 6000, rate: 0.05, budget: 2500, degrade: 8000, cloud: 600,
};
const S = {
  prefill: P.prefill / SPEEDUP, tps: P.tps * SPEEDUP, gap: P.gap / SPEEDUP, rate: P.rate * SPEEDUP,
  duration: (DURATION * 1000) / SPEEDUP, budget: Math.round(P.budget / SPEEDUP),
  degrade: Math.round(P.degrade / SPEEDUP), cloud: Math.round(P.cloud / SPEEDUP),
};

function rng(seed) { // mulberry32
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Text of about n tokens by llmsim's and the gateway's estimate (a message
// counts ceil(bytes / 4) + 4), unique to its tag.
function text(tag, n) {
  const bytes = Math.max(8, 4 * (n - 4));
  const s = `${tag} ` + 'read the file then edit it and run the tests again. '.repeat(Math.ceil(bytes / 52));
  return s.slice(0, bytes);
}
const tokensOf = (m) => Math.ceil(Buffer.byteLength(m.content) / 4) + 4;

// The conversations: starts Poisson, turn k after k-1 gaps (half fixed,
// half exponential); each turn adds the last answer and a new input.
function trace(seed) {
  const r = rng(seed * 7919 + 1);
  const expo = (mean) => -mean * Math.log(1 - r());
  const uni = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const turns = [];
  let conv = 0;
  for (let start = expo(1000 / S.rate); start < S.duration; start += expo(1000 / S.rate), conv++) {
    const msgs = [{ role: 'system', content: text(`conversation ${seed}-${conv} system`, P.system) }];
    let at = start;
    for (let k = 1; k <= P.turns; k++) {
      msgs.push({ role: 'user', content: text(`c${conv} turn ${k} tool output`, uni(P.turnMin, P.turnMax)) });
      const out = uni(P.outMin, P.outMax);
      turns.push({ conv, k, at, out, messages: msgs.slice(), prompt: msgs.reduce((a, m) => a + tokensOf(m), 0) });
      msgs.push({ role: 'assistant', content: text(`c${conv} answer ${k}`, out) });
      at += S.gap / 2 + expo(S.gap / 2);
    }
  }
  return turns.sort((a, b) => a.at - b.at);
}

// The replay's oracle (bench/agent_sim.c oracle()): in arrival order, each
// turn on the local slot where its first token is soonest (behind what it
// kept there, with the prefixes those turns left), if within the budget.
function oracle(turns) {
  const period = 1000 / S.tps;
  const slots = [];
  for (let i = 0; i < P.boxes * P.slots; i++) slots.push({ free: 0, held: null });
  let cloud = 0, ok = 0;
  const later = [];
  for (const q of turns) {
    let best = Infinity, bs = -1;
    slots.forEach((sl, i) => {
      const start = Math.max(q.at, sl.free);
      const h = sl.held;
      const cached = h && h.conv === q.conv && h.k < q.k && h.ready <= start ? h.prompt : 0;
      const first = start - q.at + (q.prompt - cached) * S.prefill;
      if (first < best) { best = first; bs = i; }
    });
    if (bs >= 0 && best <= S.budget) {
      const end = q.at + best + (q.out - 1) * period;
      slots[bs] = { free: end, held: { conv: q.conv, k: q.k, prompt: q.prompt, ready: end } };
      ok++;
      if (q.k > 1) later.push(best);
    } else {
      cloud++;
      if (S.cloud <= S.budget) ok++;
    }
  }
  return { cloud: pct(cloud, turns.length), ok: pct(ok, turns.length), p50: median(later) };
}

const pct = (a, n) => (n ? (100 * a) / n : 0);
function median(v) {
  if (!v.length) return 0;
  const s = v.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function turn(gw, q) {
  const t0 = performance.now();
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', max_tokens: q.out, stream: true,
      stream_options: { include_usage: true }, messages: q.messages }),
  });
  let first = null, buf = '', cached = 0;
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    if (first === null && /"content":"[^"]/.test(buf)) first = performance.now() - t0;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('data: {') && line.includes('"usage"')) {
        const u = JSON.parse(line.slice(6)).usage;
        cached = u?.prompt_tokens_details?.cached_tokens ?? 0;
      }
    }
  }
  return { status: r.status, backend: r.headers.get('x-spillway-backend'),
    reason: r.headers.get('x-spillway-reason'), ttft: first, cached };
}

async function run(seed, mode, turns) {
  const args = ['--model', 'm', '--slots', String(P.slots), '--prefix-cache', String(P.cache),
    '--prefill-ms-per-token', String(S.prefill), '--decode-tps', String(S.tps), '--keep-received', '0'];
  const boxes = [];
  for (let b = 0; b < P.boxes; b++) boxes.push(await startLlmsim(args));
  const cloud = await startLlmsim(['--model', 'm', '--slots', '100000', '--latency-ms', String(S.cloud),
    '--decode-tps', String(S.tps), '--keep-received', '0']);
  const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
decision_log: "/dev/null"
backends:
${boxes.map((b, i) => `  - { name: box${i}, tier: local, url: "${b.url}", model: m, slots: ${P.slots}, queue_max: 100000 }`).join('\n')}
  - { name: cloud, tier: cloud, url: "${cloud.url}", model: m }
models:
  - { name: chat, backends: [${boxes.map((_, i) => `box${i}`).join(', ')}, cloud] }
routing:
  ttft_budget_ms: ${S.budget}
  request_timeout_ms: 60000
  latency: { degrade_ms: ${S.degrade}, recover_ms: ${Math.round(S.degrade * 0.8)} }
  affinity: { enabled: ${mode === 'on'}, ttl_s: 600, max_entries: ${2 * P.slots * P.cache} }
pii:
  policy: off
`);
  try {
    const t0 = performance.now();
    const res = await Promise.all(turns.map(async (q) => {
      const wait = q.at - (performance.now() - t0);
      if (wait > 0) await new Promise((ok) => setTimeout(ok, wait));
      return { q, a: await turn(gw, q) };
    }));
    const state = await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } });
    let cloudN = 0, ok = 0, failed = 0, aff = 0, hits = 0;
    const later = [];
    for (const { q, a } of res) {
      if (a.status !== 200 || a.ttft === null) { failed++; continue; }
      if (a.backend === 'cloud') cloudN++;
      else if (q.k > 1) later.push(a.ttft);
      if (a.ttft <= S.budget) ok++;
      if (a.reason === 'affinity') aff++;
      if (a.cached > 0) hits++;
    }
    const shares = (state.body?.backends ?? []).filter((b) => b.prefix_cache_hit !== undefined)
      .map((b) => `${b.name}:${(+b.prefix_cache_hit).toFixed(2)}/${(+b.prefix_cache_hit_busy).toFixed(2)}`).join(' ');
    return { n: res.length, cloud: pct(cloudN, res.length), ok: pct(ok, res.length), p50: median(later),
      aff, failed, hits, shares };
  } finally {
    await gw.stop?.();
    for (const b of [...boxes, cloud]) await b.stop?.();
  }
}

const fmt = (x, d = 2) => x.toFixed(d).padStart(8);
console.log(`agent scenario live, ${SPEEDUP}x faster: budget ${S.budget} ms, prefill ${S.prefill} ms/token, ` +
  `${S.tps} tokens/s, cloud ${S.cloud} ms, conversations start within ${S.duration / 1000} s`);
console.log('seed mode  turns  cloud%  oracle%  in_bud% or_bud%  later_p50  or_p50 affinity cached failed  hit idle/busy');
const sum = {};
for (const seed of seeds) {
  const turns = trace(seed);
  const or = oracle(turns);
  const out = await Promise.all(MODES.map((m) => run(seed, m, turns)));
  MODES.forEach((m, i) => {
    const r = out[i];
    console.log(`${String(seed).padStart(4)} ${m.padEnd(4)} ${String(r.n).padStart(6)} ${fmt(r.cloud)} ${fmt(or.cloud)} ` +
      `${fmt(r.ok)} ${fmt(or.ok)} ${fmt(r.p50 * SPEEDUP, 0)} ${fmt(or.p50 * SPEEDUP, 0)} ${String(r.aff).padStart(8)} ` +
      `${String(r.hits).padStart(6)} ${String(r.failed).padStart(6)}  ${r.shares}`);
    const s = (sum[m] ??= { cloud: 0, ok: 0, p50: 0, or: 0, n: 0 });
    s.cloud += r.cloud; s.ok += r.ok; s.p50 += r.p50 * SPEEDUP; s.or += or.cloud; s.n++;
  });
}
const mean = (m, k) => sum[m][k] / sum[m].n;
for (const m of MODES)
  console.log(`mean ${m}: cloud ${mean(m, 'cloud').toFixed(2)} % (oracle ${mean(m, 'or').toFixed(2)} %), ` +
    `within budget ${mean(m, 'ok').toFixed(2)} %, later turns' local p50 ${mean(m, 'p50').toFixed(0)} ms (replay time)`);
if (sum.on && sum.off) {
  const on = (k) => mean('on', k), off = (k) => mean('off', k);
  const rel = off('cloud') > 0 ? 100 * (1 - on('cloud') / off('cloud')) : 0;
  console.log(`targets: within budget ${on('ok').toFixed(2)} % >= 99: ${on('ok') >= 99 ? 'met' : 'MISSED'}; ` +
    `cloud ${on('cloud').toFixed(2)} <= oracle + 2 = ${(on('or') + 2).toFixed(2)}: ${on('cloud') <= on('or') + 2 ? 'met' : 'MISSED'}; ` +
    `${rel.toFixed(1)} % below off >= 30: ${rel >= 30 ? 'met' : 'MISSED'}; ` +
    `p50 off/on ${(off('p50') / on('p50')).toFixed(2)} >= 2: ${off('p50') >= 2 * on('p50') ? 'met' : 'MISSED'}`);
}
