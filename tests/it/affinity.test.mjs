// Prefix affinity with two local llmsim boxes that keep a prefix cache per
// slot (--prefix-cache) and a cloud. A conversation whose first turn went
// to the second box (the first one's only slot was held) keeps going there
// although the first box is idle again and first in the configured order:
// the later turns report cached tokens (usage.prompt_tokens_details and
// llama.cpp's timings.cache_n, streamed and not), the second turn carries
// reason affinity, the gateway learns the box's hit and counts it, an
// unrelated conversation starts on the first box, and no prompt text
// reaches /metrics, /admin/state or the gateway's log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';

const ADMIN = 'sk-admin-affinity';
const auth = { authorization: `Bearer ${ADMIN}` };
const CANARY = 'affinity-canary-91c2';

const config = (a, b, cloud) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${a}", model: m, slots: 1, prefill_tps: 1000000 }
  - { name: edge2, tier: local, url: "${b}", model: m, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloud}", model: m }
models:
  - { name: chat, backends: [edge, edge2, cloud] }
  - { name: hold, backends: [edge] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 20000
  affinity: { enabled: true, ttl_s: 60, max_entries: 1000 }
pii:
  policy: off
`;

// ~2000 tokens of system prompt: its prefill is what the cache saves.
const system = (tag) => `${CANARY} ${tag} ` + 'you are a careful coding agent; read before you write. '.repeat(140);

async function turn(gw, messages, { stream = false } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', max_tokens: 8, messages, stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}) }),
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  let usage, timings, content = '';
  if (stream) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: {')) continue;
      const ev = JSON.parse(line.slice(6));
      if (ev.usage) usage = ev.usage;
      if (ev.timings) timings = ev.timings;
      content += ev.choices?.[0]?.delta?.content ?? '';
    }
  } else {
    const body = JSON.parse(text);
    usage = body.usage;
    timings = body.timings;
    content = body.choices[0].message.content;
  }
  return { backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'),
    cached: usage?.prompt_tokens_details?.cached_tokens ?? -1, cacheN: timings?.cache_n ?? -1,
    prompt: usage?.prompt_tokens ?? 0, content };
}

test('a conversation sticks to the box that holds its prefix and reports cached tokens', async () => {
  const args = ['--model', 'm', '--slots', '1', '--prefix-cache', '4', '--prefill-ms-per-token', '0.05', '--decode-tps', '0'];
  const a = await startLlmsim(args);
  const b = await startLlmsim(args);
  const cloud = await startLlmsim(['--model', 'm', '--decode-tps', '0']);
  const gw = await startSpillway(config(a.url, b.url, cloud.url));
  try {
    // The first box's only slot is held: the conversation starts on the second.
    const hold = await holdLocal(gw, a, { admin: ADMIN, model: 'hold' });
    const msgs = [{ role: 'system', content: system('one') }, { role: 'user', content: 'fix the build' }];
    const t1 = await turn(gw, msgs);
    assert.equal(t1.backend, 'edge2');
    assert.equal(t1.cached, 0);
    await hold.release();
    const edgeIdle = async () => (await getJSON(`${gw.url}/admin/state`, { headers: auth }))
      .body.backends.find((x) => x.name === 'edge').in_flight === 0;
    await waitFor(edgeIdle, { timeout: 10000, what: 'the first box idle again' });

    // Later turns extend the prompt; each stays on edge2 and finds the
    // earlier turns in its cache.
    let last = t1;
    const later = [];
    for (let k = 2; k <= 5; k++) {
      msgs.push({ role: 'assistant', content: last.content }, { role: 'user', content: `step ${k}` });
      last = await turn(gw, msgs, { stream: k === 4 });
      later.push(last);
    }
    for (const t of later) {
      assert.equal(t.backend, 'edge2', JSON.stringify(later));
      assert.ok(t.cached > 0 && t.cached < t.prompt, JSON.stringify(t));
      assert.equal(t.cacheN, t.cached);
    }
    for (let k = 1; k < later.length; k++)
      assert.ok(later[k].cached > later[k - 1].cached, 'each turn finds more of its prompt cached');
    // Turn 2: no hit learned yet, and the first box (configured far faster,
    // never measured) has the lower estimate: affinity is what chose the
    // second.
    assert.equal(later[0].reason, 'affinity');
    for (const t of later) assert.ok(['affinity', 'baseline'].includes(t.reason), t.reason);

    // The gateway learned the box's hit and holds the conversation's prefixes.
    const st = (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
    const e2 = st.backends.find((x) => x.name === 'edge2');
    assert.ok(e2.prefix_cache_hit > 0.5 && e2.prefix_cache_hit <= 1, `${e2.prefix_cache_hit}`);
    assert.ok(st.state.affinity_entries >= 2, `${st.state.affinity_entries}`);

    // An unrelated conversation: nothing held anywhere, the first box.
    const other = await turn(gw, [{ role: 'system', content: system('two') }, { role: 'user', content: 'hello' }]);
    assert.deepEqual([other.backend, other.reason], ['edge', 'baseline']);

    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /spillway_requests_total\{[^}]*backend="edge2"[^}]*reason="affinity"\} [1-9]/);
    for (const text of [metrics, JSON.stringify(st), gw.output()])
      assert.ok(!text.includes(CANARY), 'no prompt text in metrics, state or log');
  } finally {
    await gw.stop();
    await Promise.all([a.stop(), b.stop(), cloud.stop()]);
  }
});

// A request sent while the request whose whole prompt it extends still runs
// waits for that request's slot (which then holds its prefix) instead of
// taking the free slot, which holds nothing of it: the next turn of a
// conversation sent before the previous answer ended.
test('a request extending a running request\'s prompt follows it onto its slot and finds its prefix cached', async () => {
  const box = await startLlmsim(['--model', 'm', '--slots', '2', '--prefix-cache', '1',
    '--prefill-ms-per-token', '1', '--decode-tps', '20']);
  const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${box.url}", model: m, slots: 2 }
models:
  - { name: chat, backends: [edge] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 20000
  affinity: { enabled: true, ttl_s: 60, max_entries: 1000 }
pii:
  policy: off
`);
  try {
    // Two turns one after the other: the gateway learns the box's rates and
    // its hit on an idle slot.
    const msgs = [{ role: 'system', content: system('follow') }, { role: 'user', content: 'fix the build' }];
    const t1 = await turn(gw, msgs, { stream: true });
    msgs.push({ role: 'assistant', content: t1.content }, { role: 'user', content: 'step 2' });
    const t2 = await turn(gw, msgs, { stream: true });
    assert.ok(t2.cached > 0, JSON.stringify(t2));
    await waitFor(async () => (await getJSON(`${gw.url}/admin/state`, { headers: auth }))
      .body.backends[0].prefix_cache_hit > 0, { timeout: 10000, what: 'the idle hit learned' });
    // Turn 3 runs (8 tokens at 20/s after a short prefill); the next request
    // extends its whole prompt and is sent at once.
    msgs.push({ role: 'assistant', content: t2.content }, { role: 'user', content: 'step 3' });
    const running = turn(gw, [...msgs], { stream: true });
    await waitFor(async () => (await getJSON(`${gw.url}/admin/state`, { headers: auth }))
      .body.backends[0].in_flight === 1, { timeout: 10000, every: 5, what: 'turn 3 running' });
    const next = await turn(gw, [...msgs, { role: 'user', content: 'and also the tests' }], { stream: true });
    const t3 = await running;
    assert.ok(t3.cached > 0, JSON.stringify(t3));
    // The free slot holds nothing of this conversation: a cache hit means
    // the request waited for turn 3's slot.
    assert.ok(next.cached >= t3.prompt - 16, `${JSON.stringify(next)} after ${JSON.stringify(t3)}`);
  } finally {
    await gw.stop();
    await box.stop();
  }
});

// A request queued for the box that holds its prefix, behind a request that
// runs far longer than the gateway's rates said (it named no max_tokens, and
// the estimate assumed routing.default_max_tokens, 8), moves to the other
// local once it has waited about as long as moving costs, instead of
// waiting the running request out.
test('a request queued behind one that outlasts its estimate moves to the local with a free slot', async () => {
  const args = ['--model', 'm', '--slots', '1', '--prefix-cache', '1', '--prefill-ms-per-token', '0.5',
    '--decode-tps', '20', '--reply', 'echo', '--max-output-tokens', '400'];
  const a = await startLlmsim(args);
  const b = await startLlmsim(args);
  let gw, long;
  try {
    gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${a.url}", model: m, slots: 1 }
  - { name: edge2, tier: local, url: "${b.url}", model: m, slots: 1 }
models:
  - { name: chat, backends: [edge, edge2] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 20000
  default_max_tokens: 8
  affinity: { enabled: true, ttl_s: 60, max_entries: 1000 }
pii:
  policy: off
`);
    const state = async () => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
    const sys = { role: 'system', content: system('move') };
    const t1 = await turn(gw, [sys, { role: 'user', content: 'hello' }]);
    const holder = t1.backend;
    // No max_tokens: llmsim echoes the 400 pieces of the user's text at 20/s.
    long = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', stream: true,
        messages: [sys, { role: 'user', content: 'read '.repeat(320) }] }),
    }).then(async (r) => ({ status: r.status, backend: r.headers.get('x-spillway-backend'), text: await r.text() }));
    await waitFor(async () => (await state()).backends.find((x) => x.name === holder).in_flight === 1,
      { timeout: 10000, every: 5, what: 'the long request running on the holder' });
    const y = await turn(gw, [sys, { role: 'user', content: 'quick' }], { stream: true });
    // Answered elsewhere while the long request still runs on the holder.
    assert.notEqual(y.backend, holder, JSON.stringify(y));
    const st = await state();
    assert.equal(st.backends.find((x) => x.name === holder).in_flight, 1, 'the long request still runs');
    // It was queued on the holder first: its decision lists that attempt.
    const dec = (await getJSON(`${gw.url}/admin/decisions?limit=5`, { headers: auth })).body;
    const d = (dec.decisions ?? dec).find((x) => x.backend === y.backend && x.attempts?.length > 1);
    assert.ok(d, JSON.stringify(dec));
    assert.deepEqual([d.attempts[0].backend, d.attempts[0].outcome], [holder, 'skipped'], JSON.stringify(d));
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`spillway_queue_moves_total\\{backend="${holder}"\\} 1\\b`));
    const l = await long;
    assert.equal(l.status, 200);
    assert.equal(l.backend, holder);
  } finally {
    await long?.catch(() => {});
    await gw?.stop();
    await Promise.all([a.stop(), b.stop()]);
  }
});
