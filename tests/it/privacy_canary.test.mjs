// The privacy canary at scale: generated values in every format (lib/piigen.mjs),
// placed in every field of the request schema, sent through every path where
// the cloud is chosen for a request without PII. The cloud simulator's
// /admin/received must never contain a fragment of one of them (the rule of
// lib/leak.mjs, after undoing zero-width characters, no-break spaces,
// full-width forms and JSON escapes), and masked answers that echo the
// placeholders come back restored.
//
// A cell is (format, field, variant). Under `local_only` one value found makes
// the whole request stay local, so each request carries one cell (a leak there
// says exactly which cell is not caught); under masking each value is masked
// on its own, so requests carry many cells. On failure the test prints a
// matrix format x field of leaked values per path, never the bodies.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';
import { fragments, stripPlaceholders } from './lib/leak.mjs';
import { rng, FORMATS, generate, variantsFor, render, normalise, luhnOk, ibanOk, elfproefOk } from './lib/piigen.mjs';

const ADMIN = 'sk-admin-canary';
const SEED = Number(process.env.CANARY_SEED || 20261130);
// Under local_only each request carries one cell, 3 values of it; the two
// local_only paths share the cells (alternate ones each: the decision to keep
// a request local is the same on both, the route after it is not). Masked
// paths take every cell, 2 values of each, 64 values per request.
const LOCAL_PER_CELL = 3;
const MASK_PER_CELL = 2;
const PER_REQUEST = 64;
const DOWN = 'http://127.0.0.1:9';

const FIELDS = ['content', 'part', 'name', 'args', 'tool', 'tooldesc', 'toolparam', 'prediction', 'user', 'stop', 'metadata', 'schema', 'unknown', 'nested', 'key'];

// ---- Cells and values ----
// CANARY_CELLS=REGEX runs only the cells whose "format|field|variant" matches
// (e.g. 'phone/DE/.*\|content\|' while working on one detector); the scale
// floor applies to the full run only.
const ONLY = process.env.CANARY_CELLS ? new RegExp(process.env.CANARY_CELLS) : null;
function cells() {
  const out = [];
  for (const format of FORMATS) for (const field of FIELDS) for (const variant of variantsFor(format, field)) out.push({ format, field, variant });
  return ONLY ? out.filter((c) => ONLY.test(`${c.format}|${c.field}|${c.variant}`)) : out;
}

// perCell values for every cell (or every other one, half 0 or 1; without
// the fields in exclude):
// { cell, value (canonical), before, raw, after }.
function slotsFor(seed, perCell, half = null, exclude = []) {
  const r = rng(seed);
  const out = [];
  for (const [i, cell] of cells().entries()) {
    if ((half !== null && i % 2 !== half) || exclude.includes(cell.field)) continue;
    for (let k = 0; k < perCell; k++) {
      const v = generate(r, cell.format);
      const rend = render(r, v, cell.variant);
      if (normalise(rend.raw) !== v.value) throw new Error(`variant ${cell.variant} of ${JSON.stringify(v.value)} does not normalise back: ${JSON.stringify(rend.raw)}`);
      out.push({ cell, value: v.value, ...rend });
    }
  }
  return out;
}

// A text of a clean request, in every form a field takes (so the structure of
// the bodies is baseline for the leak rule).
function cleanSlots() {
  const r = rng(7);
  const out = [];
  for (const field of FIELDS) {
    for (const variant of ['plain', 'text', 'esc']) {
      if (variant === 'esc' && field !== 'args') continue;
      out.push({ cell: { field, variant }, value: null, ...render(r, { type: 'note', pre: '', value: `nothing personal ${field}` }, variant) });
    }
  }
  return out;
}

// ---- The request body: every field of the chat schema ----
const jsonInner = (s) => JSON.stringify(s).slice(1, -1);

function build(tag, slots, { stream, n, fill = null }) {
  const by = Object.fromEntries(FIELDS.map((f) => [f, []]));
  for (const s of slots) {
    const raw = fill ?? s.raw;
    if (s.cell.field === 'args') by.args.push(s.cell.variant === 'esc' ? s.before + raw + s.after : jsonInner(s.before + raw + s.after));
    else by[s.cell.field].push(s.before + raw + s.after);
  }
  const lines = (f, empty) => (by[f].length ? by[f].join('\n') : empty);
  const half = (f, i) => by[f].filter((_, j) => j % 2 === i);
  const parts = [{ type: 'text', text: 'Records:' }, ...by.part.map((text) => ({ type: 'text', text }))];
  const partsLast = n % 2 === 1;
  const lastUser = partsLast ? parts.map((p) => p.text).join('') : lines('content', 'Nothing to add.');
  const body = {
    model: 'chat',
    stream,
    max_tokens: 8000,
    user: by.user.length ? by.user.join(' ') : 'client-7',
    messages: [
      { role: 'system', content: `Records assistant, ref ${tag}.` },
      { role: 'user', name: by.name.length ? by.name.join(' ') : 'client', content: partsLast ? lines('content', 'Nothing to add.') : parts },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'save_records', arguments: `{"records":["${by.args.join('","')}"]}` } }] },
      { role: 'tool', tool_call_id: 'call_1', content: lines('tool', 'saved') },
      { role: 'user', content: partsLast ? parts : lastUser },
    ],
    tools: [{
      type: 'function',
      function: {
        name: 'save_records',
        description: `Saves records. ${lines('tooldesc', '')}`,
        parameters: {
          type: 'object',
          properties: {
            records: { type: 'array', items: { type: 'string' }, description: half('toolparam', 0).join('\n') || 'the records' },
            kind: { type: 'string', enum: [...half('toolparam', 1), 'other'] },
          },
        },
      },
    }],
    prediction: { type: 'content', content: lines('prediction', 'Records:') },
    stop: n % 2 === 0 ? lines('stop', 'END') : [...by.stop, 'END'],
    metadata: { source: 'canary', ...Object.fromEntries(by.metadata.map((s, i) => [`note_${i}`, s])) },
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'records',
        schema: { type: 'object', description: half('schema', 0).join('\n') || 'records', properties: { kind: { type: 'string', enum: [...half('schema', 1), 'other'] } } },
      },
    },
    x_note: lines('unknown', 'none'),
    x_context: { trace: { items: by.nested.map((note) => ({ note })) } },
    x_index: Object.fromEntries(by.key.map((k, i) => [k, i])),
  };
  return { body, lastUser };
}

function makeRequests(slots, perRequest, { prefix }) {
  const out = [];
  for (let i = 0; i * perRequest < slots.length; i++) {
    const mine = slots.slice(i * perRequest, (i + 1) * perRequest);
    const tag = `${prefix}${String(i).padStart(5, '0')}`;
    const stream = i % 2 === 1;
    const { body, lastUser } = build(tag, mine, { stream, n: i });
    out.push({ tag, slots: mine, body, lastUser, skeleton: build(tag, mine, { stream, n: i, fill: '\u0000' }).body });
  }
  return out;
}

// Deterministic shuffle, so one masked request carries many formats and fields.
function shuffled(arr, seed) {
  const r = rng(seed);
  const a = [...arr];
  for (let i = a.length - 1; i > 0; i--) { const j = r.int(i + 1); [a[i], a[j]] = [a[j], a[i]]; }
  return a;
}

// ---- Sending ----
async function send(gw, body, headers = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const raw = await r.text();
  let content = null;
  let json = null;
  if (body.stream && r.status === 200) {
    content = '';
    for (const ev of raw.split('\n\n')) {
      const data = ev.replace(/^data: /, '');
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      if (chunk.error) { json = chunk; break; }
      content += chunk.choices?.[0]?.delta?.content ?? '';
    }
  } else {
    try { json = JSON.parse(raw); } catch { json = { raw }; }
    content = json.choices?.[0]?.message?.content ?? null;
  }
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
}

// Sends every request, `concurrency` at a time; returns the answers in order.
async function sendAll(gw, reqs, { concurrency = 1, headers = {} } = {}) {
  const out = new Array(reqs.length);
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const i = next++;
      out[i] = await send(gw, reqs[i].body, headers);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100000`)).body.requests.map((q) => q.body);
const countReceived = async (sim) => (await received(sim)).length;
const cloudCount = async (sim) => (await getJSON(`${sim.url}/admin/stats`)).body.chat_requests;
// A later promise's outcome, without an unhandled rejection if a test ends first.
const later = (promise) => promise.then((v) => ({ v }), (e) => ({ e }));
const settle = async (p) => { const r = await p; if (r.e) throw r.e; return r.v; };
// With the local slot held, the cloud takes what may leave as `overflow`; on
// a loaded machine the held box may miss a health check, and the same request
// goes as `fallback`: either way the cloud was chosen.
const SPILL = ['overflow', 'fallback'];
const WAVE = 60;
// Masked paths: a value in an object key cannot be masked (a key is structure;
// renaming it would break a tool schema), so a request carrying one is never
// sent to the cloud at all (tests/it/privacy.test.mjs covers that); the masked
// routes place values everywhere else.
const UNMASKABLE = ['key'];
const gwBackend = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } }))
  .body.backends.find((b) => b.name === name);

// Clean requests (every field filled with text that carries nothing) must
// reach the cloud on this path: else "the cloud saw nothing" would prove
// nothing. Returns the bodies the cloud received (baseline for the leak rule).
async function proveCloudChosen(gw, cloud, { reason, headers = {} }) {
  const reqs = [0, 1].map((i) => {
    const { body } = build(`rclean${i}`, cleanSlots(), { stream: i === 1, n: i });
    return { body };
  });
  const before = await countReceived(cloud);
  for (const q of reqs) {
    const r = await send(gw, q.body, headers);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.backend, 'cloud', `a clean request must go to the cloud on this path (reason ${r.reason})`);
    if (reason) assert.ok([reason].flat().includes(r.reason), `reason ${r.reason}, expected ${reason}`);
  }
  const got = (await received(cloud)).slice(before);
  assert.equal(got.length, reqs.length, 'the cloud received the clean requests');
  return got;
}

// ---- The leak check ----
// Every string (and key, and number) of a body, with the tricks undone and
// placeholders replaced by a separator.
function texts(x, out = []) {
  if (typeof x === 'string') out.push(x);
  else if (typeof x === 'number' || typeof x === 'boolean') out.push(String(x));
  else if (Array.isArray(x)) for (const e of x) texts(e, out);
  else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) { out.push(k); texts(v, out); }
  return out;
}
const seen = (body) => stripPlaceholders(normalise(texts(body).join('\u0001')));
function grams(text, set = new Set()) {
  for (let i = 0; i + 4 <= text.length; i++) set.add(text.slice(i, i + 4));
  return set;
}

// Checks what the cloud received against the values of the requests it came
// from (matched by the request's ref tag). A value leaks when one of its
// fragments not in the baseline (clean bodies, the request's own text without
// its values) is in the body. For the matrix a value is attributed by the
// fragments no other value of the same request has, so one leaked phone
// number does not make its neighbours look leaked too.
function checkLeaks(reqs, bodies, cleanBodies) {
  const cleanGrams = new Set();
  for (const b of cleanBodies) grams(seen(b), cleanGrams);
  const byTag = new Map(reqs.map((q) => [q.tag, q]));
  const result = { leaked: [], vacuous: [], untagged: 0, bodies: 0 };
  for (const b of bodies) {
    const tag = JSON.stringify(b).match(/ref ([a-z]+\d+)\./)?.[1];
    if (tag?.startsWith('rclean')) continue;
    result.bodies++;
    const q = byTag.get(tag);
    if (!q) { result.untagged++; continue; }
    const hay = grams(seen(b));
    const base = grams(seen(q.skeleton));
    const checked = q.slots.map((s) => fragments(s.value).filter((f) => !cleanGrams.has(f) && !base.has(f)));
    const uses = new Map();
    for (const fs of checked) for (const f of new Set(fs)) uses.set(f, (uses.get(f) || 0) + 1);
    q.slots.forEach((s, i) => {
      const fs = checked[i];
      if (fs.length === 0) { result.vacuous.push(s); return; }
      const hits = fs.filter((f) => hay.has(f));
      if (hits.length === 0) return;
      const own = fs.filter((f) => uses.get(f) === 1);
      const attributed = own.length === 0 || own.some((f) => hay.has(f));
      result.leaked.push({ slot: s, attributed, fragment: hits[0], whole: hits.length === fs.length });
    });
  }
  return result;
}

// ---- The report: leaked values per format x field (and per variant) ----
const SHORT = { content: 'cont', part: 'part', name: 'name', args: 'args', tool: 'tool', tooldesc: 'tdsc', toolparam: 'tprm', prediction: 'pred', user: 'user', stop: 'stop', metadata: 'meta', schema: 'schm', unknown: 'unkn', nested: 'nest', key: 'key' };
function matrix(path, sent, res) {
  const total = new Map();
  const leak = new Map();
  const inc = (m, k) => m.set(k, (m.get(k) || 0) + 1);
  for (const s of sent) { inc(total, `${s.cell.format}|${s.cell.field}`); inc(total, `v|${s.cell.variant}`); inc(total, `f|${s.cell.format}`); }
  const attributed = res.leaked.filter((l) => l.attributed);
  for (const { slot: s } of attributed) { inc(leak, `${s.cell.format}|${s.cell.field}`); inc(leak, `v|${s.cell.variant}`); inc(leak, `f|${s.cell.format}`); }
  const lines = [`${path}: ${res.leaked.length} of ${sent.length} values leaked (${attributed.length} attributed below; a cell is the values of that format leaked from that field, '.' none)`];
  lines.push(`${'format'.padEnd(16)} ${FIELDS.map((f) => SHORT[f].padStart(4)).join(' ')}   leaked/sent`);
  for (const format of FORMATS) {
    const row = FIELDS.map((field) => String(leak.get(`${format}|${field}`) || '.').padStart(4)).join(' ');
    lines.push(`${format.padEnd(16)} ${row}   ${leak.get(`f|${format}`) || 0}/${total.get(`f|${format}`) || 0}`);
  }
  lines.push(`by variant: ${['plain', 'text', 'zw', 'nbsp', 'fullwidth', 'esc'].map((v) => `${v} ${leak.get(`v|${v}`) || 0}/${total.get(`v|${v}`) || 0}`).join(', ')}`);
  // The values themselves are generated (no real person's), so they are
  // listed: what leaked, where, and what was written around it.
  for (const l of res.leaked) {
    const s = l.slot;
    lines.push(`  leaked ${s.cell.format} in ${s.cell.field} (${s.cell.variant}${l.attributed ? '' : ', not attributed'}): ${JSON.stringify(s.before + s.raw + s.after)}`);
  }
  if (res.vacuous.length) lines.push(`${res.vacuous.length} value(s) had no fragment to check (all in the baseline): ${res.vacuous.slice(0, 3).map((s) => s.cell.format).join(', ')}`);
  if (res.untagged) lines.push(`${res.untagged} body/bodies the cloud received carried no request tag`);
  return lines.join('\n');
}

function assertNoLeaks(path, reqs, bodies, clean) {
  const sent = reqs.flatMap((q) => q.slots);
  const res = checkLeaks(reqs, bodies, clean);
  const report = matrix(path, sent, res);
  if (process.env.CANARY_REPORT) console.log(report);
  assert.ok(ONLY || sent.length >= 5000, `${sent.length} values on this path`);
  assert.ok(sent.length > 0, 'no values sent');
  assert.ok(res.leaked.length === 0 && res.vacuous.length === 0 && res.untagged === 0, `\n${report}`);
}

function config({ edgeUrl, cloudUrl, policy = 'local_only', emergency = false }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: chat, backends: [edge, cloud] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
  emergency: ${emergency}
pii:
  policy: ${policy}
`;
}

const startCloud = () => startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
const startEdge = () => startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);

// Masked paths: every answer is the echo of the last user message, restored.
function assertRestored(reqs, answers, reasons) {
  const bad = [];
  answers.forEach((a, i) => {
    if (a.status !== 200 || a.backend !== 'cloud' || !reasons.includes(a.reason)) bad.push(`${reqs[i].tag}: ${a.status} ${a.backend} ${a.reason} ${JSON.stringify(a.json?.error ?? '').slice(0, 200)}`);
    else if (a.content !== reqs[i].lastUser) bad.push(`${reqs[i].tag}: the echoed answer is not the text sent (${a.content?.length} vs ${reqs[i].lastUser.length} characters)`);
  });
  assert.deepEqual(bad.slice(0, 5), [], `${bad.length} of ${answers.length} masked answers wrong`);
}

describe('privacy canary at scale', () => {
  test('local down, local_only: a request with a value is refused, never sent; one cell per request', async () => {
    const cloud = await startCloud();
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url }));
    try {
      const clean = await proveCloudChosen(gw, cloud, { reason: 'fallback' });
      const reqs = makeRequests(slotsFor(SEED, LOCAL_PER_CELL, 0), LOCAL_PER_CELL, { prefix: 'd' });
      const answers = await sendAll(gw, reqs, { concurrency: 6 });
      const odd = answers.filter((a) => !(a.status === 200 && a.backend === 'cloud') && !(a.status === 503 && a.json?.error?.code === 'privacy_restricted'));
      assert.deepEqual(odd.slice(0, 3), [], 'every answer is the cloud (a value not found) or privacy_restricted');
      assertNoLeaks('local down, local_only', reqs, await received(cloud), clean);
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('local saturated, local_only: a request with a value waits for local and is served there, never by the cloud; one cell per request', async () => {
    const edge = await startEdge();
    const cloud = await startCloud();
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      let hold = await holdLocal(gw, edge, { admin: ADMIN });
      const clean = await proveCloudChosen(gw, cloud, { reason: SPILL });
      const reqs = makeRequests(slotsFor(SEED + 1, LOCAL_PER_CELL, 1), LOCAL_PER_CELL, { prefix: 's' });
      // In waves that fit the local queue (queue_max 64): while the slot is
      // held, each request of a wave either reaches the cloud (no value
      // found: a leak) or waits in the local queue; once every one is in one
      // of the two, the slot is freed, the queue drains locally, and the slot
      // is held again for the next wave. No deadline decides the outcome.
      const answers = [];
      for (let i = 0; i < reqs.length; i += WAVE) {
        const wave = reqs.slice(i, i + WAVE);
        if (!hold) hold = await holdLocal(gw, edge, { admin: ADMIN });
        // Answered or waiting in the local queue: a request is never both (a
        // queued request that moves on to the cloud leaves the queue first), so
        // the sum reaches the wave's size only once every request was routed.
        const done = [];
        const pending = wave.map((q) => later(send(gw, q.body).then((a) => { done.push(a); return a; })));
        await waitFor(async () => (await gwBackend(gw, 'edge')).queued + done.length === wave.length,
          { timeout: 30000, what: 'every request of the wave answered or in the local queue' });
        await hold.release();
        hold = null;
        answers.push(...await Promise.all(pending.map(settle)));
        await waitFor(async () => { const e = await gwBackend(gw, 'edge'); return e.in_flight === 0 && e.queued === 0 && (await getJSON(`${edge.url}/admin/stats`)).body.hanging === 0; },
          { timeout: 10000, what: 'the local box idle again' });
      }
      const odd = answers.filter((a) => !(a.status === 200 && a.backend === 'cloud')
        // the local box: waiting for it (privacy), or queued as baseline when
        // the learned wait fits the TTFT budget (fast echo answers teach it so)
        && !(a.status === 200 && a.backend === 'edge' && ['privacy', 'baseline'].includes(a.reason))
        && !(a.status === 503 && a.json?.error?.code === 'privacy_restricted'));
      assert.deepEqual(odd.slice(0, 3), [], 'every answer is the cloud (a value not found) or the local box (or privacy_restricted if it was seen down)');
      assertNoLeaks('local saturated, local_only', reqs, await received(cloud), clean);
      assert.ok(answers.some((a) => a.backend === 'edge'), 'requests with a value were served locally');
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('emergency (local down, local_only): what goes to the cloud is masked and comes back restored, streamed and not', async () => {
    const cloud = await startCloud();
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url }));
    try {
      const clean = await proveCloudChosen(gw, cloud, { reason: 'fallback' });
      const declared = await getJSON(`${gw.url}/admin/emergency`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: true, reason: 'canary' }),
      });
      assert.equal(declared.status, 200);
      const reqs = makeRequests(shuffled(slotsFor(SEED + 2, MASK_PER_CELL, null, UNMASKABLE), SEED + 2), PER_REQUEST, { prefix: 'e' });
      const answers = await sendAll(gw, reqs, { concurrency: 2 });
      assert.ok(answers.some((a) => a.reason === 'emergency'), 'requests with values went as an emergency');
      assertRestored(reqs, answers, ['emergency', 'fallback']);
      assertNoLeaks('emergency, local down', reqs, await received(cloud), clean);
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('policy mask under overflow (local saturated): what spills is masked and comes back restored, streamed and not', async () => {
    const edge = await startEdge();
    const cloud = await startCloud();
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, policy: 'mask' }));
    try {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const clean = await proveCloudChosen(gw, cloud, { reason: SPILL });
      const reqs = makeRequests(shuffled(slotsFor(SEED + 3, MASK_PER_CELL, null, UNMASKABLE), SEED + 3), PER_REQUEST, { prefix: 'm' });
      const answers = await sendAll(gw, reqs, { concurrency: 2 });
      assertRestored(reqs, answers, SPILL);
      await hold.release();
      assertNoLeaks('mask, local saturated', reqs, await received(cloud), clean);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

describe("the canary's own tools", () => {
  test('the generator: seeded, every value valid for its kind, every variant normalises back to the value', () => {
    const a = slotsFor(1, 1);
    const b = slotsFor(1, 1);
    assert.deepEqual(a.map((s) => s.raw), b.map((s) => s.raw), 'the same seed gives the same values');
    assert.notDeepEqual(slotsFor(2, 1).map((s) => s.raw), a.map((s) => s.raw));
    const r = rng(3);
    for (let i = 0; i < 300; i++) {
      const digits = (v) => v.replace(/\D/g, '');
      const card = generate(r, FORMATS.filter((f) => f.startsWith('card/'))[i % 3]).value;
      assert.ok(luhnOk(digits(card)), `card ${card} is Luhn valid`);
      const iban = generate(r, 'iban/grouped').value;
      assert.ok(ibanOk(iban.replace(/ /g, '')), `IBAN ${iban} passes mod 97`);
      const bsn = generate(r, FORMATS.filter((f) => f.startsWith('bsn/'))[i % 3]).value;
      assert.ok(elfproefOk(digits(bsn)), `BSN ${bsn} passes the 11-proef`);
      const dni = generate(r, i % 2 ? 'dni/dni' : 'dni/nie').value.replace(/[-. ]/g, '');
      const number = Number(dni.slice(0, -1).replace(/^[XYZ]/, (c) => String('XYZ'.indexOf(c))));
      assert.equal(dni.at(-1), 'TRWAGMYFPDXBNJZSQVHLCKE'[number % 23], `DNI/NIE ${dni} check letter`);
      const ssn = generate(r, 'ssn/dashed').value;
      assert.match(ssn, /^(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}$/, `SSN ${ssn}`);
    }
    for (const s of a) assert.equal(normalise(s.raw), s.value, `${s.cell.variant} of ${s.cell.format}`);
  });

  test('the leak check: a value split by zero-width characters, no-break spaced, full-width or JSON-escaped in arguments still counts', () => {
    const r = rng(4);
    const slots = ['zw', 'nbsp', 'fullwidth', 'esc', 'plain'].map((variant) => {
      const v = generate(r, 'phone/NL/plus');
      v.value = v.value.replace(/^\+31\d/, '+31 6 ').replace(/-/g, ' '); // has a space for nbsp
      return { cell: { format: 'phone/NL/plus', field: 'args', variant }, value: v.value, ...render(r, v, variant) };
    });
    // One request per value, so no value's fragments show through another's.
    const reqs = makeRequests(slots, 1, { prefix: 't' });
    // The cloud got the bodies as they were sent: every value leaked...
    const all = checkLeaks(reqs, reqs.map((q) => JSON.parse(JSON.stringify(q.body))), []);
    assert.equal(all.leaked.length, slots.length, JSON.stringify(all.leaked.map((l) => l.slot.cell.variant)));
    // ... and seen whole: every fragment of each, once the tricks are undone.
    assert.deepEqual(all.leaked.filter((l) => !l.whole).map((l) => l.slot.cell.variant), []);
    // The cloud got each value as a placeholder: nothing leaked.
    const masked = reqs.map((q, i) => build(q.tag, q.slots, { stream: false, n: i, fill: '[PHONE_1]' }).body);
    const none = checkLeaks(reqs, masked, []);
    assert.deepEqual(none.leaked, []);
    assert.deepEqual(none.vacuous, []);
  });
});
