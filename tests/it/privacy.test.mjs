// The privacy canary: thousands of generated PII values (valid checksums)
// through the real gateway in every mode and failure path. The cloud
// simulator's /admin/received must never contain any fragment of one of them
// (lib/leak.mjs), and answers that echo the placeholders must come back to
// the client restored.
//
// Every test runs where the cloud IS chosen for a request without PII (the
// local box saturated, down, or a cloud-only model) and first proves that a
// clean request reached the cloud, so "nothing reached the cloud" can never
// pass only because nothing would have gone there anyway.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { assertNoLeak, findLeaks, receivedBodies, bodiesText } from './lib/leak.mjs';
import { startToolsim } from './lib/toolsim.mjs';

const ADMIN = 'sk-admin-canary';

// ---- Generators (each value passes the checksum its type requires) ----
const digits = (n) => Array.from({ length: n }, () => randomInt(10)).join('');
const alnum = (n) => Array.from({ length: n }, () => 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'[randomInt(57)]).join('');
function luhnDigit(body) {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}
function iban() {
  const bban = 'ABNA' + digits(10);
  const num = (bban + 'NL00').replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  const check = 98 - Number(BigInt(num) % 97n);
  return `NL${String(check).padStart(2, '0')}${bban}`;
}
function bsn() {
  for (;;) {
    const d = digits(8);
    let s = 0;
    for (let i = 0; i < 8; i++) s += Number(d[i]) * (9 - i);
    const last = s % 11;
    if (last < 10) return d + last;
  }
}
const generators = {
  email: (i) => `canary.${i}.${alnum(6).toLowerCase()}@example${i % 7}.org`,
  phone: () => `+31 6 ${digits(8)}`,
  iban,
  card: () => { const b = '4' + digits(14); return b + luhnDigit(b); },
  bsn: () => `BSN ${bsn()}`,
  ssn: () => `${String(100 + randomInt(500))}-${String(10 + randomInt(89))}-${String(1000 + randomInt(8999))}`,
  ipv4: () => `10.${randomInt(256)}.${randomInt(256)}.${1 + randomInt(254)}`,
  ipv6: () => `2001:db8:${randomInt(65536).toString(16)}::${randomInt(65536).toString(16)}`,
  secret: () => `sk-proj-${alnum(40)}`,
};
const TYPES = Object.keys(generators);

// One prompt with `perType` values of every type; returns the text and the raw values.
function canaryPrompt(perType, seed) {
  const values = [];
  const lines = [];
  for (let k = 0; k < perType; k++) {
    for (const t of TYPES) {
      const v = generators[t](seed * 1000 + k);
      values.push(v.replace(/^BSN /, ''));
      lines.push(`${t}: ${v}`);
    }
  }
  const text = `Please repeat these records exactly.\n${lines.join('\n')}`;
  // The prompt without its values: its labels are baseline for the leak rule
  // (a random secret may contain "hone", as "phone: " does).
  let template = text;
  for (const v of values) template = template.replace(v, '\n');
  return { text, values, template };
}

// Baseline for the leak rule: what the cloud may see of canary traffic that
// carries no value (the clean requests it received, the prompts' labels, in
// plain and JSON-escaped form as they appear in a received body).
const canaryBaseline = (clean, prompts) => [bodiesText(clean), ...prompts.map((p) => p.template + JSON.stringify(p.template))].join('\n');

// A short random token that no detector matches: the payload of restricted
// requests that carry no PII, checked with the same leak rule.
const marker = () => `restricted note ${alnum(16)} stays on premises`;
const markerValue = (text) => text.split(' ')[2];

// Ports nothing listens on (connect refused): a local box that is down.
const DOWN = 'http://127.0.0.1:9';

function config({ edgeUrl, cloudUrl, policy = 'local_only', emergency = false, edgeSlots = 1, keys = '', models = null, extra = '' }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
${keys}
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: ${edgeSlots} }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
${models ?? '  - { name: chat, backends: [edge, cloud] }'}
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
  emergency: ${emergency}
pii:
  policy: ${policy}
${extra}
`;
}

function chatBody(text, { stream = false, model = 'chat', maxTokens = 4000, extra = {} } = {}) {
  return JSON.stringify({ model, stream, max_tokens: maxTokens, messages: [{ role: 'user', content: text }], ...extra });
}

async function send(gw, text, { stream = false, headers = {}, model, maxTokens, extra } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: chatBody(text, { stream, model, maxTokens, extra }),
  });
  const raw = await r.text();
  let content = null;
  let json = null;
  if (stream && r.status === 200) {
    content = '';
    for (const ev of raw.split('\n\n')) {
      const data = ev.replace(/^data: /, '');
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      assert.equal(chunk.error, undefined, `stream error: ${data}`);
      content += chunk.choices?.[0]?.delta?.content ?? '';
    }
  } else {
    try { json = JSON.parse(raw); } catch { json = { raw }; }
    content = json.choices?.[0]?.message?.content ?? null;
  }
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
}

const bodies = (sim, since) => receivedBodies(sim, { since });
const count = async (sim) => (await receivedBodies(sim)).length;
const gwBackend = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } }))
  .body.backends.find((b) => b.name === name);

// Holds the single local slot with a request the local box accepts and never
// answers (llmsim's hang fault, on only while that one request arrives).
// While it is held, a request that may leave is estimated to start locally
// far beyond the TTFT budget and overflows to the cloud; one that may not
// leave waits in Spillway's local queue. release() lets the holder's client
// go away, which frees the slot for the queue.
async function holdLocal(gw, edge) {
  await getJSON(`${edge.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ hang: true }) });
  const ac = new AbortController();
  const held = fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', signal: ac.signal,
    headers: { 'content-type': 'application/json', 'x-spillway-allow-cloud': 'false' },
    body: chatBody('hold the only local slot', { maxTokens: 8 }),
  }).then((r) => r.text()).catch(() => null);
  await waitFor(async () => (await getJSON(`${edge.url}/admin/stats`)).body.hanging === 1, { timeout: 10000, what: 'the local slot held' });
  await fetch(`${edge.url}/admin/faults`, { method: 'DELETE' });
  await waitFor(async () => (await gwBackend(gw, 'edge')).in_flight === 1, { timeout: 10000, what: 'spillway sees the slot busy' });
  return {
    async release() { ac.abort(); await held; },
  };
}

// Sends clean requests while the local box is saturated (or down) and
// asserts they went to the cloud: the precondition that makes every "the
// cloud saw none of it" below mean something. Returns the clean bodies the
// cloud received (the baseline for the leak rule).
async function proveCloudChosen(gw, cloud, { n = 2, headers = {}, model, reason = 'overflow', texts } = {}) {
  const before = await count(cloud);
  for (let i = 0; i < n; i++) {
    const text = texts?.[i] ?? `a clean question number ${i} with nothing personal in it`;
    const r = await send(gw, text, { headers, model, stream: i % 2 === 1 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.backend, 'cloud', `a clean request must spill to the cloud here (reason ${r.reason})`);
    if (reason) assert.equal(r.reason, reason);
  }
  const got = await bodies(cloud, before);
  assert.equal(got.length, n, 'the cloud received the clean requests');
  return got;
}

async function waitQueued(gw, n) {
  await waitFor(async () => (await gwBackend(gw, 'edge')).queued === n, { timeout: 10000, what: `${n} request(s) waiting in the local queue` });
}

const ROUNDS = 25;        // requests per mode
const PER_TYPE = 9;       // 9 values x 9 types = 81 values per request, ~2000 per mode

describe('privacy canary', () => {
  test('local saturated (local_only): clean requests spill, requests with PII wait for local; the cloud sees no fragment', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      const hold = await holdLocal(gw, edge);
      const clean = await proveCloudChosen(gw, cloud, { n: 3 });
      const prompts = Array.from({ length: 6 }, (_, i) => canaryPrompt(PER_TYPE, i));
      const pending = prompts.map((p, i) => send(gw, p.text, { stream: i % 2 === 1 }));
      await waitQueued(gw, prompts.length);
      assert.equal(await count(cloud), clean.length, 'no request with PII went to the cloud while local was busy');
      await hold.release();
      const results = await Promise.all(pending);
      results.forEach((r, i) => {
        assert.equal(r.status, 200);
        assert.equal(r.backend, 'edge');
        assert.equal(r.reason, 'privacy');
        assert.equal(r.content, prompts[i].text, 'local answers are never rewritten');
      });
      assertNoLeak(bodiesText(await bodies(cloud)), prompts.flatMap((p) => p.values), { baseline: canaryBaseline(clean, prompts) });
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('local down, no emergency: refused, never sent; with an emergency: masked to the cloud and restored', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url }));
    const all = [];
    const prompts = [];
    try {
      const clean = await proveCloudChosen(gw, cloud, { reason: 'fallback' });
      const first = canaryPrompt(PER_TYPE, 99);
      const { text, values } = first;
      prompts.push(first);
      all.push(...values);
      const refused = await send(gw, text);
      assert.equal(refused.status, 503);
      assert.equal(refused.json.error.code, 'privacy_restricted');
      assert.equal(await count(cloud), clean.length);

      const declared = await getJSON(`${gw.url}/admin/emergency`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: true, reason: 'canary' }),
      });
      assert.equal(declared.status, 200);
      for (let i = 0; i < ROUNDS; i++) {
        const p = canaryPrompt(PER_TYPE, i);
        prompts.push(p);
        all.push(...p.values);
        const r = await send(gw, p.text, { stream: i % 2 === 1 });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.backend, 'cloud');
        assert.equal(r.reason, 'emergency');
        assert.equal(r.content, p.text, 'the echoed placeholders come back restored');
      }
      const seen = await bodies(cloud);
      assert.equal(seen.length, clean.length + ROUNDS);
      assert.match(bodiesText(seen), /\[EMAIL_1\]/);
      assertNoLeak(bodiesText(seen), all, { baseline: canaryBaseline(clean, prompts) });
      assert.ok(all.length >= 2000, `${all.length} canary values`);
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('policy mask under overflow: what spills is masked, restored in streams and whole answers', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--slots', '1', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, policy: 'mask' }));
    const all = [];
    const prompts = [];
    try {
      const hold = await holdLocal(gw, edge);
      const clean = await proveCloudChosen(gw, cloud);
      for (let i = 0; i < ROUNDS; i++) {
        const p = canaryPrompt(PER_TYPE, 500 + i);
        prompts.push(p);
        all.push(...p.values);
        const r = await send(gw, p.text, { stream: i % 2 === 0 });
        assert.equal(r.status, 200);
        assert.equal(r.backend, 'cloud');
        assert.equal(r.reason, 'overflow');
        assert.equal(r.content, p.text);
      }
      assertNoLeak(bodiesText(await bodies(cloud)), all, { baseline: canaryBaseline(clean, prompts) });
      await hold.release();
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('policy block: a request with PII is refused before any backend sees it', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: 'block' }));
    try {
      const clean = await proveCloudChosen(gw, cloud, { reason: 'fallback' });
      const { text, values } = canaryPrompt(1, 7);
      const r = await send(gw, text);
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'pii_blocked');
      assertNoLeak(JSON.stringify(r.json), values, { where: 'the error message' });
      assert.equal(await count(cloud), clean.length);
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
      assert.ok(st.pii.blocked.email >= 1, JSON.stringify(st.pii));
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});
