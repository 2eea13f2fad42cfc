// The spill decision live: Spillway in front of two llmsim processes (a
// "local box": 4 slots, 0.5 ms per prompt token, 30 tokens/s per slot; a
// "cloud": first byte after 400 ms), fed a Poisson stream of streamed chat
// requests (~400-token prompts, max_tokens 128) at LOAD x the box's capacity
// through the official openai client. Prints how many went to the cloud and
// how many got their first token within the 1000 ms TTFT budget (measured
// by the client). Compare two builds on the same seed:
//   SPILLWAY_BUILD=build node bench/spill_live.mjs [SECONDS] [LOAD] [SEED]
// Defaults: 300 s, 0.6, 1. docs/routing.md "Replay against an oracle".
import OpenAI from 'openai';
import { startLlmsim, startSpillway, BUILD } from '../tests/it/lib/harness.mjs';

const seconds = Number(process.argv[2] || 300);
const load = Number(process.argv[3] || 0.6);
let seed = Number(process.argv[4] || 1) >>> 0;
const BUDGET = 1000;
const SLOTS = 4, PREFILL = 0.5, TPS = 30, OUT = 128;

// A small seeded generator (mulberry32) so two builds see the same arrivals.
function rand() {
  seed = (seed + 0x6D2B79F5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

// ~400 prompt tokens by llmsim's (and the gateway's) estimate: bytes / 4 + 4.
const prompt = 'lorem ipsum dolor sit amet '.repeat(58).slice(0, 1584);
const serviceMs = 400 * PREFILL + (OUT * 1000) / TPS;
const rate = (load * SLOTS) / serviceMs; // per ms

const local = await startLlmsim(['--model', 'edge', '--slots', String(SLOTS),
  '--prefill-ms-per-token', String(PREFILL), '--decode-tps', String(TPS)]);
const cloud = await startLlmsim(['--model', 'cloud', '--slots', '100000', '--latency-ms', '400']);
const gw = await startSpillway(`
listen: "127.0.0.1:0"
decision_log: "/dev/null"
backends:
  - { name: edge, tier: local, url: "${local.url}", model: edge, slots: ${SLOTS}, queue_max: 1000 }
  - { name: cloud, tier: cloud, url: "${cloud.url}", model: cloud }
models:
  - { name: chat, backends: [edge, cloud] }
routing:
  ttft_budget_ms: ${BUDGET}
  latency: { degrade_ms: ${BUDGET}, recover_ms: ${BUDGET * 0.8} }
`);
const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });

const results = [];
// SPILL_LIVE_STREAM=0: non-streamed requests (the first token is not seen by
// the client then; only where each went is reported).
const STREAM = process.env.SPILL_LIVE_STREAM !== '0';
async function one() {
  const t0 = performance.now();
  const { data, response } = await client.chat.completions
    .create({ model: 'chat', stream: STREAM, max_tokens: OUT, messages: [{ role: 'user', content: prompt }] })
    .withResponse();
  let first = null;
  if (STREAM) {
    for await (const chunk of data) {
      if (first === null && chunk.choices?.[0]?.delta?.content) first = performance.now() - t0;
    }
  }
  results.push({ tier: response.headers.get('x-spillway-tier'), ttft: first });
}

// One request before the trace, not counted: the client's first request pays
// for connection set-up and the gateway learns the box's rates.
await one();
results.length = 0;

const pending = [];
const end = performance.now() + seconds * 1000;
let next = performance.now();
while (true) {
  next += -Math.log(1 - rand()) / rate;
  if (next > end) break;
  const wait = next - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  pending.push(one().catch((e) => results.push({ tier: 'error', ttft: null, error: String(e) })));
}
await Promise.all(pending);
await gw.stop();
await local.stop();
await cloud.stop();

if (process.env.SPILL_LIVE_DEBUG) console.log(results);
const n = results.length;
const cloudN = results.filter((r) => r.tier === 'cloud').length;
const okN = results.filter((r) => r.ttft !== null && r.ttft <= BUDGET).length;
const within = STREAM ? `${(100 * okN / n).toFixed(1)} %` : 'not measured (non-streamed)';
const errN = results.filter((r) => r.tier === 'error').length;
console.log(`build ${BUILD}: ${seconds} s at ${load} x capacity (${(rate * 1000).toFixed(3)} req/s): ` +
  `${n} requests, cloud ${(100 * cloudN / n).toFixed(1)} %, first token within ${BUDGET} ms ` +
  `${within}, errors ${errN}`);
