// Prefix affinity on a small agent scenario, live: the gateway in front of
// two llmsim boxes (2 slots each, a prefix cache of one prompt per slot, as
// llama.cpp keeps one per slot) and an llmsim cloud, four conversations of
// six turns (each turn resends the conversation so far and a new tool
// output, a think time after the answer to the last one, a different one
// per conversation), once with routing.affinity on and once off, side by
// side over the same conversations. box0 prefills faster than box1 (0.25
// against 0.5 ms per prompt token), so the least-wait order without prefix
// knowledge sends a turn there whenever it has a free slot. Everything
// asserted is a count or a ratio measured in that one run: the first turns
// fill both boxes (two conversations each); with affinity every later turn
// goes to the box that served its conversation (reason affinity where that
// is not the least-wait box) and finds its prompt cached there; without it
// the turns crowd on box0, evict each other's prompts and prefill them
// again, so the reported cached share is far lower and the later turns'
// first token (a ratio between the arms, no absolute time) several times
// slower. The budget is far above any first token: no turn goes to the
// cloud, the comparison is the local boxes' alone. About 10 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway } from './lib/harness.mjs';

const CONVERSATIONS = 4;
const TURNS = 6;
const THINK_MS = [300, 400, 500, 600];    // per conversation: they drift apart

// ~n tokens by the estimate llmsim and the gateway share (bytes / 4 + 4 per
// message), unique to its tag.
const text = (tag, n) => `${tag} ` + 'read the file, edit it and run the tests. '.repeat(Math.ceil((4 * n) / 42));

const config = (boxes, cloud, on) => `
listen: "127.0.0.1:0"
decision_log: "/dev/null"
backends:
${boxes.map((b, i) => `  - { name: box${i}, tier: local, url: "${b.url}", model: m, slots: 2, queue_max: 100 }`).join('\n')}
  - { name: cloud, tier: cloud, url: "${cloud.url}", model: m }
models:
  - { name: chat, backends: [box0, box1, cloud] }
routing:
  ttft_budget_ms: 20000
  latency: { degrade_ms: 15000, recover_ms: 12000 }
  affinity: { enabled: ${on}, ttl_s: 600, max_entries: 4 }
pii:
  policy: off
`;

async function turn(gw, messages, maxTokens) {
  const t0 = performance.now();
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', max_tokens: maxTokens, stream: true,
      stream_options: { include_usage: true }, messages }),
  });
  assert.equal(r.status, 200);
  let ttft = null, buf = '', usage = null;
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    if (ttft === null && /"content":"[^"]/.test(buf)) ttft = performance.now() - t0;
  }
  for (const line of buf.split('\n'))
    if (line.startsWith('data: {') && line.includes('"usage"')) usage = JSON.parse(line.slice(6)).usage;
  assert.ok(ttft !== null && usage, buf.slice(-300));
  return { backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'),
    ttft, prompt: usage.prompt_tokens, cached: usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

// One conversation: its turns in order, each after the last answer.
async function conversation(gw, c) {
  const msgs = [{ role: 'system', content: text(`agent ${c} system`, 1500) }];
  const out = [];
  for (let k = 1; k <= TURNS; k++) {
    msgs.push({ role: 'user', content: text(`agent ${c} tool output ${k}`, 100 + 40 * ((c + k) % 4)) });
    const t = await turn(gw, msgs, 16);
    out.push({ c, k, ...t });
    msgs.push({ role: 'assistant', content: text(`agent ${c} answer ${k}`, 16) });
    await new Promise((ok) => setTimeout(ok, THINK_MS[c]));
  }
  return out;
}

async function arm(on) {
  const common = ['--model', 'm', '--slots', '2', '--prefix-cache', '1', '--decode-tps', '200', '--keep-received', '0'];
  const boxes = [await startLlmsim([...common, '--prefill-ms-per-token', '0.25']),
    await startLlmsim([...common, '--prefill-ms-per-token', '0.5'])];
  const cloud = await startLlmsim(['--model', 'm', '--decode-tps', '0', '--keep-received', '0']);
  const procs = [...boxes, cloud];
  try {
    const gw = await startSpillway(config(boxes, cloud, on));
    procs.push(gw);
    const turns = (await Promise.all([...Array(CONVERSATIONS).keys()].map((c) => conversation(gw, c)))).flat();
    const later = turns.filter((t) => t.k > 1);
    const prev = (t) => turns.find((u) => u.c === t.c && u.k === t.k - 1);
    const sorted = later.map((t) => t.ttft).sort((a, b) => a - b);
    return {
      turns, later,
      cloud: turns.filter((t) => t.backend === 'cloud').length,
      sticky: later.filter((t) => t.backend === prev(t).backend).length / later.length,
      cachedShare: later.reduce((a, t) => a + t.cached, 0) / later.reduce((a, t) => a + t.prompt, 0),
      p50: (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2,
      affinity: turns.filter((t) => t.reason === 'affinity').length,
    };
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

test('agent conversations stick to the box holding their prefix: cached share and later first tokens against affinity off', { timeout: 40000 }, async (ctx) => {
  const [on, off] = await Promise.all([arm(true), arm(false)]);
  const show = (r) => `sticky ${r.sticky.toFixed(2)}, cached share ${r.cachedShare.toFixed(2)}, ` +
    `later p50 ${r.p50.toFixed(0)} ms, affinity ${r.affinity}, cloud ${r.cloud}, ` +
    r.turns.map((t) => `${t.c}.${t.k}:${t.backend}/${t.cached}`).join(' ');
  const why = `on: ${show(on)}\noff: ${show(off)}`;
  ctx.diagnostic(`on: ${show(on)}`);
  ctx.diagnostic(`off: ${show(off)}`);
  for (const r of [on, off]) {
    assert.equal(r.turns.length, CONVERSATIONS * TURNS, why);
    assert.equal(r.cloud, 0, why);
  }
  // The first turns fill both boxes: two conversations each.
  const firsts = on.turns.filter((t) => t.k === 1).map((t) => t.backend).sort();
  assert.deepEqual(firsts, ['box0', 'box0', 'box1', 'box1'], why);
  // With affinity the later turns go where their conversation went and find
  // it cached there.
  assert.ok(on.sticky >= 0.9, why);
  assert.ok(on.affinity > 0, why);
  assert.equal(off.affinity, 0, why);
  assert.ok(on.cachedShare >= 0.8, why);
  assert.ok(on.cachedShare >= 2 * off.cachedShare, why);
  // What that is worth: the later turns' first token, a ratio between the
  // arms, measured side by side on the same machine.
  assert.ok(off.p50 >= 3 * on.p50, why);
});
