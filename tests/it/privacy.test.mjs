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
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import { startLlmsim, startSpillway, waitFor, getJSON, BUILD, tempDir } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';
import { run } from './lib/clients.mjs';
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

function config({ edgeUrl, cloudUrl, policy = 'local_only', emergency = false, edgeSlots = 1, edgeOpts = '', keys = '', models = null, pii = '', extra = '' }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
${keys}
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: ${edgeSlots}${edgeOpts} }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
${models ?? '  - { name: chat, backends: [edge, cloud] }'}
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
  emergency: ${emergency}
pii:
  policy: ${policy}
${pii}
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
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason'), region: r.headers.get('x-spillway-region'), id: r.headers.get('x-request-id') };
}

// Like send, but writes the request by hand so a header may appear on
// several lines (`lines`: [[name, value], ...]); Connection: close.
async function sendRaw(gw, text, lines) {
  const body = chatBody(text);
  const head = [['Host', '127.0.0.1'], ['Content-Type', 'application/json'], ['Content-Length', Buffer.byteLength(body)], ['Connection', 'close'], ...lines]
    .map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const sock = net.connect(gw.port, '127.0.0.1');
  let raw = '';
  sock.setEncoding('utf8');
  sock.on('data', (d) => { raw += d; });
  await new Promise((res, rej) => { sock.on('close', res); sock.on('error', rej); sock.write(`POST /v1/chat/completions HTTP/1.1\r\n${head}\r\n${body}`); });
  const i = raw.indexOf('\r\n\r\n');
  const headText = raw.slice(0, i);
  const hdr = (n) => headText.match(new RegExp(`\r\n${n}:\\s*([^\r]*)`, 'i'))?.[1] ?? null;
  let json;
  try { json = JSON.parse(raw.slice(i + 4)); } catch { json = { raw }; }
  return { status: Number(headText.split(' ')[1]), json, content: json.choices?.[0]?.message?.content ?? null, backend: hdr('x-spillway-backend'), reason: hdr('x-spillway-reason') };
}

const bodies = (sim, since) => receivedBodies(sim, { since });
const count = async (sim) => (await receivedBodies(sim)).length;
const gwBackend = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } }))
  .body.backends.find((b) => b.name === name);

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

// Waits until n requests wait in the local queue; fails at once when the
// cloud receives anything beyond the `sent` requests it already had.
async function waitQueued(gw, n, cloud, sent) {
  await waitFor(async () => {
    const got = await count(cloud);
    if (got > sent) throw new Error(`${got - sent} request(s) that must wait for local reached the cloud`);
    return (await gwBackend(gw, 'edge')).queued === n;
  }, { timeout: 10000, what: `${n} request(s) waiting in the local queue` });
}

// A request started now and awaited later: it must not fail the run as an
// unhandled rejection when an assertion in between ends the test first.
const later = (promise) => promise.then((v) => ({ v }), (e) => ({ e }));
const settle = async (p) => { const r = await p; if (r.e) throw r.e; return r.v; };

const ROUNDS = 25;        // requests per mode
const PER_TYPE = 9;       // 9 values x 9 types = 81 values per request, ~2000 per mode

describe('privacy canary', () => {
  test('local saturated (local_only): clean requests spill, requests with PII wait for local; the cloud sees no fragment', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const clean = await proveCloudChosen(gw, cloud, { n: 3 });
      const prompts = Array.from({ length: 6 }, (_, i) => canaryPrompt(PER_TYPE, i));
      const pending = prompts.map((p, i) => later(send(gw, p.text, { stream: i % 2 === 1 })));
      await waitQueued(gw, prompts.length, cloud, clean.length);
      assert.equal(await count(cloud), clean.length, 'no request with PII went to the cloud while local was busy');
      await hold.release();
      const results = await Promise.all(pending.map(settle));
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
      assertNoLeak(bodiesText(seen), all, { baseline: canaryBaseline(clean, prompts) });
      assert.match(bodiesText(seen), /\[EMAIL_1\]/);
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
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
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
      assertNoLeak(JSON.stringify(r.json), values, {
        where: 'the error message',
        baseline: `The request contains personal data or secrets (${TYPES.join(', ')}) and its policy blocks such requests. invalid_request_error pii_blocked messages`,
      });
      assert.equal(await count(cloud), clean.length);
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
      assert.ok(st.pii.blocked.email >= 1, JSON.stringify(st.pii));
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});

describe('the leak rule itself', () => {
  test('a value masked in part, or cut and re-joined, is a leak; placeholders and baseline text are not', () => {
    const v = 'jane.doe.q7x@example.org';
    assert.equal(findLeaks('{"content":"write to [EMAIL_1]"}', [v]).length, 0);
    assert.equal(findLeaks('{"content":"write to jane.doe.[EMAIL_1]"}', [v]).length, 1, 'the local part alone is a leak');
    assert.equal(findLeaks('{"content":"host example.org"}', [v]).length, 1, 'the domain alone is a leak');
    assert.equal(findLeaks('{"content":"host example.org"}', [v], { baseline: 'host example.org' }).length, 0, 'unless clean traffic has it too');
    assert.equal(findLeaks('card 4111 **** **** 1111', ['4111 1111 1111 1111']).length, 1);
    assert.throws(() => findLeaks('x', ['abcd'], { baseline: 'abcd' }), /vacuous/);
  });
});

// Requests that may not leave, sent while the local box is saturated: a
// clean request from an unrestricted key spills to the cloud first, then the
// restricted ones must wait in the local queue, reach the cloud never, and be
// served locally once the slot frees.
const KEYS = `keys:
  - { name: app, key: "sk-app" }
  - { name: private, key: "sk-private", allow_cloud: false }
  - { name: hush, key: "sk-hush", sensitive: true }`;

async function restrictedStayLocal(variants, { during } = {}) {
  const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
  const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
  const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, keys: KEYS, policy: 'off' }));
  try {
    const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: { authorization: 'Bearer sk-app' } });
    const clean = await proveCloudChosen(gw, cloud, { headers: { authorization: 'Bearer sk-app' } });
    if (during) await during(gw, cloud);
    const texts = variants.map(() => marker());
    const pending = variants.map((v, i) => later(v.lines
      ? sendRaw(gw, texts[i], v.lines)
      : send(gw, texts[i], { headers: v.headers, extra: v.extra, stream: i % 2 === 1 })));
    await waitQueued(gw, variants.length, cloud, clean.length);
    assert.equal(await count(cloud), clean.length, 'no restricted request reached the cloud');
    await hold.release();
    const results = await Promise.all(pending.map(settle));
    results.forEach((r, i) => {
      assert.equal(r.status, 200, `${variants[i].name}: ${JSON.stringify(r.json)}`);
      assert.equal(r.backend, 'edge', variants[i].name);
      assert.equal(r.reason, 'privacy', variants[i].name);
      assert.equal(r.content, texts[i]);
    });
    assertNoLeak(bodiesText(await bodies(cloud)), texts.map(markerValue), { baseline: bodiesText(clean) });
  } finally {
    await gw.stop(); await edge.stop(); await cloud.stop();
  }
}

describe('requests that may not leave stay local while the cloud takes the overflow', () => {
  test('metadata.allow_cloud: false in the body (boolean or string)', () => restrictedStayLocal([
    { name: 'metadata false', headers: { authorization: 'Bearer sk-app' }, extra: { metadata: { allow_cloud: false } } },
    { name: 'metadata "false"', headers: { authorization: 'Bearer sk-app' }, extra: { metadata: { allow_cloud: 'false', team: 'a' } } },
  ]));

  test('X-Spillway-Allow-Cloud: false on a key that may use the cloud', () => restrictedStayLocal([
    { name: 'header false', headers: { authorization: 'Bearer sk-app', 'x-spillway-allow-cloud': 'false' } },
    { name: 'header 0', headers: { authorization: 'Bearer sk-app', 'x-spillway-allow-cloud': '0' } },
  ]));

  test('a key with allow_cloud: false: header or metadata saying true cannot loosen it; a short deadline fails locally', () => restrictedStayLocal([
    { name: 'key alone', headers: { authorization: 'Bearer sk-private' } },
    { name: 'key + header true', headers: { authorization: 'Bearer sk-private', 'x-spillway-allow-cloud': 'true' } },
    { name: 'key + metadata true', headers: { authorization: 'Bearer sk-private' }, extra: { metadata: { allow_cloud: true } } },
  ], {
    // Behind the held slot, a restricted request whose deadline comes first
    // fails cleanly instead of leaving.
    async during(gw, cloud) {
      const before = await count(cloud);
      const late = await send(gw, marker(), { headers: { authorization: 'Bearer sk-private', 'x-spillway-allow-cloud': 'true', 'x-request-timeout-ms': '300' } });
      assert.equal(late.status, 504);
      assert.equal(late.json.error.code, 'deadline_exceeded');
      assert.equal(await count(cloud), before);
    },
  }));

  test('privacy headers count every occurrence and every list element: the most restrictive wins; yes/no/on/off in any case', () => restrictedStayLocal([
    { name: 'allow-cloud true then false', lines: [['Authorization', 'Bearer sk-app'], ['X-Spillway-Allow-Cloud', 'true'], ['X-Spillway-Allow-Cloud', 'false']] },
    { name: 'allow-cloud "false, true"', headers: { authorization: 'Bearer sk-app', 'x-spillway-allow-cloud': 'false, true' } },
    { name: 'allow-cloud " No "', headers: { authorization: 'Bearer sk-app', 'x-spillway-allow-cloud': ' No ' } },
    { name: 'allow-cloud off', headers: { authorization: 'Bearer sk-app', 'x-spillway-allow-cloud': 'off' } },
    { name: 'sensitive yes', headers: { authorization: 'Bearer sk-app', 'x-spillway-sensitive': 'yes' } },
    { name: 'sensitive ON', headers: { authorization: 'Bearer sk-app', 'x-spillway-sensitive': 'ON' } },
    { name: 'sensitive false then true', lines: [['Authorization', 'Bearer sk-app'], ['X-Spillway-Sensitive', 'false'], ['X-Spillway-Sensitive', 'true']] },
    { name: 'sensitive "0,1"', headers: { authorization: 'Bearer sk-app', 'x-spillway-sensitive': '0,1' } },
    { name: 'metadata "No"', headers: { authorization: 'Bearer sk-app' }, extra: { metadata: { allow_cloud: 'No' } } },
  ]));

  test('a key with sensitive: true (a header saying false cannot clear it), and X-Spillway-Sensitive: true', () => restrictedStayLocal([
    { name: 'sensitive key', headers: { authorization: 'Bearer sk-hush' } },
    { name: 'sensitive key + header false', headers: { authorization: 'Bearer sk-hush', 'x-spillway-sensitive': 'false' } },
    { name: 'sensitive header', headers: { authorization: 'Bearer sk-app', 'x-spillway-sensitive': 'true' } },
  ]));
});

// A privacy header or metadata flag that is not one of the accepted words
// fails closed: 400 invalid_header / invalid_value naming it, and no backend
// sees the request. Set up where a clean request does spill to the cloud.
describe('privacy flags fail closed', () => {
  test('unknown values of X-Spillway-Allow-Cloud, X-Spillway-Sensitive and metadata.allow_cloud: 400 naming them, nothing sent', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1', '--keep-received', '100000']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, keys: KEYS, policy: 'off' }));
    try {
      const app = { authorization: 'Bearer sk-app' };
      const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: app });
      await proveCloudChosen(gw, cloud, { headers: app });
      const sentEdge = await count(edge);
      const sentCloud = await count(cloud);
      const headerCases = [];
      for (const h of ['X-Spillway-Allow-Cloud', 'X-Spillway-Sensitive']) {
        for (const v of ['n', 'false;', 'truthy', '', ' ', '2', 'false, maybe', 'true,', ',false', 'nope, true']) headerCases.push({ h, lines: [[h, v]] });
        headerCases.push({ h, lines: [[h, 'true'], [h, 'bogus']] });
        headerCases.push({ h, lines: [[h, 'garbage'], [h, 'false']] });
      }
      for (const c of headerCases) {
        const r = await sendRaw(gw, marker(), [['Authorization', 'Bearer sk-app'], ...c.lines]);
        const what = JSON.stringify(c.lines);
        assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error.code, 'invalid_header', what);
        assert.equal(r.json.error.type, 'invalid_request_error', what);
        assert.equal(r.json.error.param, c.h, what);
        assert.match(r.json.error.message, new RegExp(c.h), what);
        assert.equal(r.backend, 'none', what);
      }
      for (const v of ['n', 'false;', 'nein', '', 'truee']) {
        const r = await send(gw, marker(), { headers: app, extra: { metadata: { allow_cloud: v } } });
        assert.equal(r.status, 400, `metadata ${JSON.stringify(v)}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error.code, 'invalid_value');
        assert.equal(r.json.error.param, 'metadata.allow_cloud');
      }
      for (const v of [2, [], { no: true }]) {
        const r = await send(gw, marker(), { headers: app, extra: { metadata: { allow_cloud: v } } });
        assert.equal(r.status, 400, `metadata ${JSON.stringify(v)}: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error.param, 'metadata.allow_cloud');
      }
      assert.equal(await count(cloud), sentCloud, 'the cloud received none of them');
      assert.equal(await count(edge), sentEdge, 'the local box received none of them');
      await hold.release();
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

// Residency: a sensitive request (PII under local_only, the header, a
// sensitive key) may go unmasked to a cloud in its allowed regions (the
// intersection of pii.sensitive_regions, the key's and the model's lists),
// never to another cloud. The us-east cloud comes first in the model, so a
// clean overflow goes there: only the region rule sends anything to eu-west.
describe('residency: sensitive data stays local or in the listed regions', () => {
  test('overflow of sensitive requests goes to the allowed region only; key and model lists narrow the global one; allow_cloud false stays local; the log and headers name the region', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const us = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const eu = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const logFile = join(tempDir('spillway-declog-'), 'decisions.jsonl');
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
decision_log: "${logFile}"
keys:
  - { name: app, key: "sk-app" }
  - { name: eu-only, key: "sk-eu", sensitive_regions: [eu-west] }
  - { name: nowhere, key: "sk-nowhere", sensitive_regions: [] }
backends:
  - { name: edge, tier: local, url: "${edge.url}", model: edge-model, slots: 1 }
  - { name: us, tier: cloud, url: "${us.url}", model: cloud-model, region: us-east }
  - { name: eu, tier: cloud, url: "${eu.url}", model: cloud-model, region: eu-west }
models:
  - { name: chat, backends: [edge, us, eu] }
  - { name: chat-eu, backends: [edge, us, eu], sensitive_regions: [eu-west] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
pii:
  policy: local_only
  sensitive_regions: [us-east, eu-west]
`);
    const readLines = () => { try { return readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; } };
    const auth = (k) => ({ authorization: `Bearer ${k}` });
    const sens = { 'x-spillway-sensitive': 'true' };
    try {
      const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: auth('sk-app') });
      // A clean overflow goes to the first cloud, us-east.
      const clean = await send(gw, 'a clean question', { headers: auth('sk-app') });
      assert.equal(clean.status, 200, JSON.stringify(clean.json));
      assert.equal(clean.backend, 'us');
      assert.equal(clean.reason, 'overflow');
      assert.equal(clean.region, 'us-east');
      // Global list [us-east, eu-west]: a sensitive request may use either; us-east is first.
      const both = await send(gw, marker(), { headers: { ...auth('sk-app'), ...sens } });
      assert.equal(both.status, 200, JSON.stringify(both.json));
      assert.equal(both.backend, 'us');
      assert.equal(both.region, 'us-east');

      const usBefore = await count(us);
      const euBefore = await count(eu);
      const cases = [
        { name: 'key list [eu-west] narrows the global one', model: 'chat', headers: { ...auth('sk-eu'), ...sens } },
        { name: 'model list [eu-west] narrows the global one', model: 'chat-eu', headers: { ...auth('sk-app'), ...sens } },
        { name: 'sensitive key header yes', model: 'chat-eu', headers: { ...auth('sk-app'), 'x-spillway-sensitive': 'yes' } },
      ];
      const pii = `mail me at resident.${alnum(8).toLowerCase()}@example.org`;
      const served = [];
      for (const c of cases) {
        const text = marker();
        const r = await send(gw, text, { headers: c.headers, model: c.model });
        assert.equal(r.status, 200, `${c.name}: ${JSON.stringify(r.json)}`);
        assert.equal(r.backend, 'eu', c.name);
        assert.equal(r.region, 'eu-west', c.name);
        assert.equal(r.reason, 'overflow', c.name);
        assert.equal(r.content, text, c.name);
        served.push(r);
      }
      // PII found under local_only makes it sensitive: unmasked to eu-west.
      const withPii = await send(gw, pii, { headers: auth('sk-eu') });
      assert.equal(withPii.status, 200, JSON.stringify(withPii.json));
      assert.equal(withPii.backend, 'eu');
      assert.equal(withPii.content, pii);
      assert.match(bodiesText(await bodies(eu, euBefore)), new RegExp(pii.split(' ').pop().replace(/\./g, '\\.')), 'sent unmasked to the allowed region');
      served.push(withPii);
      assert.equal(await count(us), usBefore, 'the us-east cloud received none of them');
      assert.equal(await count(eu), euBefore + cases.length + 1);

      // May not leave: allow_cloud false with a region list, and an empty
      // key list: they wait for local, whatever the regions.
      const texts = [marker(), marker(), marker()];
      const sentUs = await count(us);
      const sentEu = await count(eu);
      const pending = [
        later(send(gw, texts[0], { headers: { ...auth('sk-eu'), ...sens, 'x-spillway-allow-cloud': 'false' } })),
        later(send(gw, texts[1], { headers: auth('sk-eu'), model: 'chat-eu', extra: { metadata: { allow_cloud: 'no' } } })),
        later(send(gw, texts[2], { headers: { ...auth('sk-nowhere'), ...sens } })),
      ];
      await waitFor(async () => {
        if (await count(us) !== sentUs || await count(eu) !== sentEu) throw new Error('a request that must stay local reached a cloud');
        return (await gwBackend(gw, 'edge')).queued === pending.length;
      }, { timeout: 10000, what: 'the restricted requests waiting for local' });
      await hold.release();
      const local = await Promise.all(pending.map(settle));
      local.forEach((r, i) => {
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.backend, 'edge');
        assert.equal(r.region, 'local');
        assert.equal(r.reason, 'privacy');
        assert.equal(r.content, texts[i]);
      });
      assert.equal(await count(us), sentUs);
      assert.equal(await count(eu), sentEu);

      // The decision log names the region of the backend that served.
      const ids = new Map([...served, ...local, clean].map((r) => [r.id, r.region]));
      const lines = await waitFor(() => { const l = readLines().filter((x) => ids.has(x.request_id)); return l.length === ids.size && l; }, { timeout: 10000, what: 'the decision-log lines' });
      for (const l of lines) assert.equal(l.region, ids.get(l.request_id), JSON.stringify(l));
      assert.equal(lines.find((l) => l.request_id === withPii.id).pii_outcome, 'region_cloud');
      // /admin/state counts the outcome under its own name, as /metrics does.
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
      assert.ok(Object.values(st.pii.region_cloud).some((n) => n >= 1), JSON.stringify(st.pii));
    } finally {
      await gw.stop(); await edge.stop(); await us.stop(); await eu.stop();
    }
  });

  test('--check-config rejects a sensitive region no cloud backend has, and a local backend in another region', async () => {
    const dir = tempDir('spillway-regions-');
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, `
backends:
  - { name: edge, tier: local, url: "http://127.0.0.1:9", model: m, region: eu-west }
  - { name: eu, tier: cloud, url: "http://127.0.0.1:9", model: m, region: eu-west }
models:
  - { name: chat, backends: [edge, eu], sensitive_regions: [eu-wset] }
`);
    const r = await run(join(BUILD, 'spillway'), ['--check-config', file]);
    assert.equal(r.code, 1, JSON.stringify(r));
    assert.match(r.stderr, /models\[0\]\.sensitive_regions\[0\]: "eu-wset" is no cloud backend's region \(cloud regions: eu-west\)/);
    assert.match(r.stderr, /backends\[0\]\.region: "eu-west": a local backend's region is always "local"/);
    writeFileSync(file, `
backends:
  - { name: edge, tier: local, url: "http://127.0.0.1:9", model: m }
  - { name: eu, tier: cloud, url: "http://127.0.0.1:9", model: m, region: eu-west }
models:
  - { name: chat, backends: [edge, eu], sensitive_regions: [eu-west] }
`);
    const ok = await run(join(BUILD, 'spillway'), ['--check-config', file]);
    assert.equal(ok.code, 0, JSON.stringify(ok));
  });
});

// The PII policy in force is the most restrictive of pii.policy, the key's
// and the model's: off < mask < local_only < block. The local box is down, so
// the cloud takes every request that may go there (each case first proves it
// with a clean request under the same key and model).
const MERGE_KEYS = `keys:
  - { name: plain, key: "sk-plain" }
  - { name: k-off, key: "sk-off", pii: "off" }
  - { name: k-mask, key: "sk-mask", pii: mask }
  - { name: k-block, key: "sk-block", pii: block }`;
const MERGE_MODELS = ['m-plain', 'm-off', 'm-mask', 'm-local']
  .map((m) => `  - { name: ${m}, backends: [edge, cloud]${m === 'm-plain' ? '' : `, pii: ${m === 'm-off' ? '"off"' : m.slice(2).replace('local', 'local_only')}`} }`)
  .join('\n');

async function mergeCase(gw, cloud, { key, model, expect }) {
  const headers = { authorization: `Bearer ${key}` };
  const clean = await proveCloudChosen(gw, cloud, { n: 1, headers, model, reason: 'fallback' });
  const p = canaryPrompt(1, randomInt(1000));
  const before = await count(cloud);
  const r = await send(gw, p.text, { headers, model });
  const seen = bodiesText(await bodies(cloud, before));
  const leaks = findLeaks(seen, p.values, { baseline: canaryBaseline(clean, [p]) });
  const what = `${key} on ${model}`;
  if (expect === 'raw') {
    assert.equal(r.status, 200, what);
    assert.equal(r.backend, 'cloud', what);
    assert.equal(leaks.length, p.values.length, `${what}: with scanning off every value goes as it is (the control for the leak rule)`);
    return;
  }
  if (expect === 'mask') {
    assert.equal(r.status, 200, `${what}: ${JSON.stringify(r.json)}`);
    assert.equal(r.backend, 'cloud', what);
    assert.equal(r.content, p.text, `${what}: restored`);
    assert.match(seen, /\[EMAIL_1\]/, `${what}: the cloud saw placeholders`);
  } else if (expect === 'local_only') {
    assert.equal(r.status, 503, `${what}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.code, 'privacy_restricted', what);
    assert.equal(await count(cloud), before, `${what}: nothing sent`);
  } else if (expect === 'block') {
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.code, 'pii_blocked', what);
    assert.equal(await count(cloud), before, `${what}: nothing sent`);
  }
  assert.deepEqual(leaks, [], `${what}: no fragment reached the cloud`);
}

describe('PII policy merge: the most restrictive of global, key and model wins', () => {
  for (const [global, cases] of Object.entries({
    off: [
      { key: 'sk-plain', model: 'm-plain', expect: 'raw' },
      { key: 'sk-mask', model: 'm-plain', expect: 'mask' },
      { key: 'sk-plain', model: 'm-mask', expect: 'mask' },
      { key: 'sk-mask', model: 'm-local', expect: 'local_only' },
      { key: 'sk-block', model: 'm-mask', expect: 'block' },
    ],
    mask: [
      { key: 'sk-off', model: 'm-plain', expect: 'mask' },
      { key: 'sk-plain', model: 'm-off', expect: 'mask' },
      { key: 'sk-off', model: 'm-off', expect: 'mask' },
      { key: 'sk-off', model: 'm-local', expect: 'local_only' },
    ],
    block: [
      { key: 'sk-off', model: 'm-off', expect: 'block' },
      { key: 'sk-mask', model: 'm-mask', expect: 'block' },
    ],
  })) {
    test(`pii.policy ${global}: ${cases.map((c) => `${c.key.slice(3)}/${c.model} -> ${c.expect}`).join(', ')}`, async () => {
      const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
      const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: global === 'off' ? '"off"' : global, keys: MERGE_KEYS, models: MERGE_MODELS }));
      try {
        for (const c of cases) await mergeCase(gw, cloud, c);
      } finally {
        await gw.stop(); await cloud.stop();
      }
    });
  }
});

describe('fail closed', () => {
  test('masking failed (over 4096 distinct values): the request is never sent to the cloud', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: 'mask' }));
    try {
      const clean = await proveCloudChosen(gw, cloud, { reason: 'fallback' });
      // Masking works for a request within the bounds...
      const small = canaryPrompt(1, 3);
      const ok = await send(gw, small.text);
      assert.equal(ok.status, 200, JSON.stringify(ok.json));
      assert.equal(ok.backend, 'cloud');
      assert.equal(ok.content, small.text);
      const before = await count(cloud);
      // ... and a request with more distinct values than one map holds is not sent.
      const values = Array.from({ length: 4200 }, (_, i) => `u${i}.${alnum(8).toLowerCase()}@example${i % 7}.org`);
      const r = await send(gw, `Please file these: ${values.join(' ')}`, { stream: false });
      assert.equal(r.status, 503, JSON.stringify(r.json).slice(0, 300));
      assert.match(r.json.error.message, /masking failed/);
      assert.equal(await count(cloud), before, 'nothing reached the cloud');
      const streamed = await send(gw, `Please file these: ${values.join(' ')}`, { stream: true });
      assert.equal(streamed.status, 503, 'not served (stream)');
      assert.equal(await count(cloud), before, 'nothing reached the cloud (stream)');
      assertNoLeak(bodiesText(await bodies(cloud)), [...values, ...small.values], { baseline: canaryBaseline(clean, [small]) });
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('scan failed (too many candidates for the scanner): the request is sensitive and waits for local', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const clean = await proveCloudChosen(gw, cloud);
      // "a:b:" starts an IPv6 candidate (and is none): 262,200 of them are
      // more than the scanner's 262,144 candidates, so the scan fails before
      // it reaches the values at the end.
      const values = [`jane.${alnum(8).toLowerCase()}@example.org`, `sk-proj-${alnum(40)}`];
      const text = `${'a:b: '.repeat(262200)}mail ${values[0]} key ${values[1]}`;
      const pending = later(send(gw, text, { maxTokens: 4 }));
      await waitQueued(gw, 1, cloud, clean.length);
      assert.equal(await count(cloud), clean.length, 'nothing went to the cloud while local was busy');
      await hold.release();
      const r = await settle(pending);
      assert.equal(r.status, 200);
      assert.equal(r.backend, 'edge');
      assert.equal(r.reason, 'privacy');
      assert.match(gw.output(), /PII scan failed; treated as sensitive/);
      assertNoLeak(bodiesText(await bodies(cloud)), values, { baseline: bodiesText(clean) });
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

describe('tool calls through the gateway', () => {
  const TOOLS = [{ type: 'function', function: { name: 'save_records', parameters: { type: 'object', properties: { records: { type: 'string' } } } } }];

  test('policy mask, cloud-only model: arguments carry placeholders to the cloud and come back restored, streamed and not', async () => {
    const cloud = await startToolsim();
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: 'mask', models: '  - { name: chat, backends: [cloud] }' }));
    const call = async (text, stream, history = []) => {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat', stream, tools: TOOLS, messages: [...history, { role: 'user', content: text }] }),
      });
      const raw = await r.text();
      assert.equal(r.status, 200, raw.slice(0, 300));
      assert.equal(r.headers.get('x-spillway-backend'), 'cloud');
      if (!stream) return JSON.parse(raw).choices[0].message.tool_calls[0].function.arguments;
      let args = '';
      for (const ev of raw.split('\n\n')) {
        const data = ev.replace(/^data: /, '');
        if (!data || data === '[DONE]') continue;
        args += JSON.parse(data).choices?.[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? '';
      }
      return args;
    };
    try {
      const cleanText = 'no personal data in this record';
      assert.deepEqual(JSON.parse(await call(cleanText, false)), { records: cleanText });
      assert.deepEqual(JSON.parse(await call(cleanText, true)), { records: cleanText });
      const clean = await bodies(cloud);
      assert.equal(clean.length, 2, 'the cloud received the clean requests');

      const prompts = [];
      const skeletons = [];
      for (const stream of [false, true]) {
        const p = canaryPrompt(3, stream ? 41 : 40);
        // An earlier tool call and its result carry values too: scanned and masked.
        const old = canaryPrompt(1, stream ? 43 : 42);
        prompts.push(p, old);
        const historyOf = (records) => [
          { role: 'user', content: 'save the old records' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'save_records', arguments: JSON.stringify({ records }) } }] },
          { role: 'tool', tool_call_id: 'call_0', content: `saved: ${records}` },
        ];
        const history = historyOf(old.text);
        // The same history without its values: baseline for the leak rule.
        skeletons.push(JSON.stringify(historyOf(old.template)));
        const args = await call(p.text, stream, history);
        assert.deepEqual(JSON.parse(args), { records: p.text }, `restored in the ${stream ? 'streamed' : 'whole'} tool call`);
      }
      const seen = bodiesText(await bodies(cloud, clean.length));
      const base = [canaryBaseline(clean, prompts), ...skeletons].join('\n');
      assertNoLeak(seen, prompts.flatMap((p) => p.values), { baseline: base });
      assert.match(seen, /\[EMAIL_1\]/);
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});

describe('decision log', () => {
  test('a file decision log records what happened to PII (kept local, masked, blocked) and never a value', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const logFile = join(tempDir('spillway-declog-'), 'decisions.jsonl');
    const keys = `keys:
  - { name: app, key: "sk-app" }
  - { name: keeper, key: "sk-keeper", pii: local_only }
  - { name: blocker, key: "sk-blocker", pii: block }`;
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, keys, policy: 'mask', extra: `decision_log: "${logFile}"` }));
    const readLines = () => { try { return readFileSync(logFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; } };
    try {
      const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: { authorization: 'Bearer sk-app' } });
      await proveCloudChosen(gw, cloud, { n: 1, headers: { authorization: 'Bearer sk-app' } });
      const prompts = [canaryPrompt(3, 1), canaryPrompt(3, 2), canaryPrompt(3, 3)];
      const masked = await send(gw, prompts[0].text, { headers: { authorization: 'Bearer sk-app' } });
      assert.equal(masked.status, 200);
      assert.equal(masked.backend, 'cloud');
      assert.equal(masked.content, prompts[0].text);
      const blocked = await send(gw, prompts[1].text, { headers: { authorization: 'Bearer sk-blocker' }, stream: true });
      assert.equal(blocked.status, 400);
      const sent = await count(cloud);
      const local = later(send(gw, prompts[2].text, { headers: { authorization: 'Bearer sk-keeper' } }));
      await waitQueued(gw, 1, cloud, sent);
      await hold.release();
      assert.equal((await settle(local)).backend, 'edge');
      // holder, clean, masked, blocked, local
      const lines = await waitFor(() => { const l = readLines(); return l.length >= 5 && l; }, { timeout: 10000, what: 'five decision-log lines' });
      const outcomes = lines.map((l) => l.pii_outcome).filter(Boolean).sort();
      assert.deepEqual(outcomes, ['blocked', 'kept_local', 'masked_cloud'], 'the log recorded the PII requests');
      for (const l of lines.filter((x) => x.pii_outcome)) assert.equal(l.pii.email, 3, JSON.stringify(l.pii));
      // Clock-made fields (time, id, durations, counts) are numbers the
      // gateway writes itself; left in, random digits in a value would match them.
      const scrub = (l) => JSON.stringify({ ...l, time: null, request_id: null }, (k, v) => (typeof v === 'number' ? 0 : v));
      const clean = lines.filter((l) => !l.pii_outcome).map(scrub).join('\n');
      const vocabulary = `app keeper blocker kept_local masked_cloud blocked pii_blocked privacy overflow ${TYPES.join(' ')}`;
      assertNoLeak(lines.map(scrub).join('\n'), prompts.flatMap((p) => p.values), { baseline: `${clean}\n${vocabulary}`, where: 'the decision log' });
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});

// ---- The whole request is scanned ----
// Every string of the body (any depth, unknown fields too) and every key is
// scanned, not only the messages' text. Each case sends the same shape twice
// through a gateway whose local box is down: first with a clean value, which
// must reach the cloud (so the field's shape is routable there), then with an
// e-mail address and a card number in that one field only.

async function post(gw, body, { stream = false, headers = {} } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ stream, ...body }),
  });
  const raw = await r.text();
  let json = null;
  let content = null;
  if (stream && r.status === 200) {
    content = '';
    for (const ev of raw.split('\n\n')) {
      const data = ev.replace(/^data: /, '');
      if (!data || data === '[DONE]') continue;
      content += JSON.parse(data).choices?.[0]?.delta?.content ?? '';
    }
  } else {
    try { json = JSON.parse(raw); } catch { json = { raw }; }
    content = json.choices?.[0]?.message?.content ?? null;
  }
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
}

// A field case: `put(v, text)` is the request (model chat) with v in the
// field and `text` as the user's message; `at(body)` reads the field back
// from what the cloud received.
const userMsg = (text) => [{ role: 'user', content: text }];
const FIELD_CASES = [
  { name: 'prediction.content', put: (v, text) => ({ messages: userMsg(text), prediction: { type: 'content', content: v } }), at: (b) => b.prediction.content },
  { name: 'user', put: (v, text) => ({ messages: userMsg(text), user: v }), at: (b) => b.user },
  { name: 'stop (a string)', put: (v, text) => ({ messages: userMsg(text), stop: v }), at: (b) => b.stop },
  { name: 'stop (an array)', put: (v, text) => ({ messages: userMsg(text), stop: ['END', v] }), at: (b) => b.stop[1] },
  {
    name: 'response_format.json_schema',
    put: (v, text) => ({ messages: userMsg(text), response_format: { type: 'json_schema', json_schema: { name: 'record', schema: { type: 'object', properties: { note: { type: 'string', description: v } } } } } }),
    at: (b) => b.response_format.json_schema.schema.properties.note.description,
  },
  {
    name: 'tools[].function.description',
    put: (v, text) => ({ messages: userMsg(text), tools: [{ type: 'function', function: { name: 'save_note', description: v, parameters: { type: 'object', properties: {} } } }] }),
    at: (b) => b.tools[0].function.description,
  },
  {
    name: 'tools[].function.parameters enum values',
    put: (v, text) => ({ messages: userMsg(text), tools: [{ type: 'function', function: { name: 'save_note', parameters: { type: 'object', properties: { to: { type: 'string', enum: ['nobody', v] } } } } }] }),
    at: (b) => b.tools[0].function.parameters.properties.to.enum[1],
  },
  { name: 'metadata values', put: (v, text) => ({ messages: userMsg(text), metadata: { team: 'a', owner: v } }), at: (b) => b.metadata.owner },
  { name: 'messages[].name', put: (v, text) => ({ messages: [{ role: 'user', name: v, content: text }] }), at: (b) => b.messages[0].name },
  {
    name: 'a file part\'s filename',
    put: (v, text) => ({ messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'file', file: { file_id: 'file-abc123', filename: v } }] }] }),
    at: (b) => b.messages[0].content[1].file.filename,
  },
  { name: 'an unknown top-level field', put: (v, text) => ({ messages: userMsg(text), x_internal_note: v }), at: (b) => b.x_internal_note },
];

// The protected values of one case: an e-mail address and a card number.
function fieldValues(i) {
  const email = generators.email(7000 + i);
  const card = generators.card();
  return { email, card, v: `owner ${email} card ${card}` };
}
const CLEAN_V = 'owner nobody in particular';

// Sends the clean shape and asserts the cloud took it; returns its body.
async function cleanToCloud(gw, cloud, c, opts) {
  const before = await count(cloud);
  const r = await post(gw, { model: 'chat', max_tokens: 4000, ...c.put(CLEAN_V, 'a clean question') }, opts);
  assert.equal(r.status, 200, `${c.name} (clean): ${JSON.stringify(r.json)}`);
  assert.equal(r.backend, 'cloud', `${c.name}: a clean request of this shape must go to the cloud here`);
  assert.equal(r.reason, 'fallback');
  const got = await bodies(cloud, before);
  assert.equal(got.length, 1, 'the cloud received the clean request');
  return got;
}

function fieldGateway(policy) {
  const ctx = {};
  before(async () => {
    ctx.cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    ctx.gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: ctx.cloud.url, policy, edgeOpts: ', supports_images: true' }));
  });
  after(async () => { await ctx.gw?.stop(); await ctx.cloud?.stop(); });
  return ctx;
}

describe('local_only: PII anywhere in the body keeps the request off the cloud', () => {
  const ctx = fieldGateway('local_only');
  FIELD_CASES.forEach((c, i) => {
    test(`in ${c.name}`, async () => {
      const { gw, cloud } = ctx;
      const clean = await cleanToCloud(gw, cloud, c);
      const { email, card, v } = fieldValues(i);
      const before = await count(cloud);
      const r = await post(gw, { model: 'chat', max_tokens: 4000, ...c.put(v, 'a clean question') }, { stream: i % 2 === 1 });
      assert.equal(r.status, 503, JSON.stringify(r.json));
      assert.equal(r.json.error.code, 'privacy_restricted');
      assert.equal(await count(cloud), before, 'nothing reached the cloud');
      assertNoLeak(bodiesText(await bodies(cloud)), [email, card], { baseline: bodiesText(clean) });
    });
  });

  test('in an object key (a tool schema\'s property name, a metadata key)', async () => {
    const { gw, cloud } = ctx;
    const shapes = [
      (k) => ({ messages: userMsg('a clean question'), tools: [{ type: 'function', function: { name: 'save_note', parameters: { type: 'object', properties: { [k]: { type: 'string' } } } } }] }),
      (k) => ({ messages: userMsg('a clean question'), metadata: { [k]: 'yes' } }),
    ];
    for (const [j, shape] of shapes.entries()) {
      const cleanBody = { model: 'chat', max_tokens: 4000, ...shape('recipient') };
      const ok = await post(gw, cleanBody);
      assert.equal(ok.backend, 'cloud', `shape ${j}: a clean key goes to the cloud (${JSON.stringify(ok.json)})`);
      const email = generators.email(7100 + j);
      const before = await count(cloud);
      const r = await post(gw, { model: 'chat', max_tokens: 4000, ...shape(email) });
      assert.equal(r.status, 503, `shape ${j}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.error.code, 'privacy_restricted');
      assert.equal(await count(cloud), before, `shape ${j}: nothing reached the cloud`);
      assertNoLeak(bodiesText(await bodies(cloud)), [email], { baseline: JSON.stringify(cleanBody) });
    }
  });
});

describe('mask: PII anywhere in the body reaches the cloud only as placeholders', () => {
  const ctx = fieldGateway('mask');
  FIELD_CASES.forEach((c, i) => {
    test(`in ${c.name}`, async () => {
      const { gw, cloud } = ctx;
      const clean = await cleanToCloud(gw, cloud, c);
      const { email, card, v } = fieldValues(100 + i);
      // The message names the same address, so the echoed answer shows the
      // placeholder coming back restored.
      const text = `please write to ${email}`;
      const before = await count(cloud);
      const r = await post(gw, { model: 'chat', max_tokens: 4000, ...c.put(v, text) }, { stream: i % 2 === 1 });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.backend, 'cloud');
      assert.equal(r.content, text, 'the echoed answer comes back restored');
      const got = await bodies(cloud, before);
      assert.equal(got.length, 1);
      const field = c.at(got[0]);
      assert.match(field, /^owner \[EMAIL_1\] card \[CARD_1\]$/, `the field carries placeholders only: ${field}`);
      assert.equal(got[0].messages.at(-1).content?.[0]?.text ?? got[0].messages.at(-1).content, 'please write to [EMAIL_1]',
        'the same value has the same placeholder in the message and in the field');
      assertNoLeak(bodiesText(got), [email, card], { baseline: bodiesText(clean) + text.replace(email, '') });
    });
  });

  test('in an object key: it cannot be masked, so the request is never sent', async () => {
    const { gw, cloud } = ctx;
    const shape = (k, text) => ({ messages: userMsg(text), tools: [{ type: 'function', function: { name: 'save_note', parameters: { type: 'object', properties: { [k]: { type: 'string' } } } } }] });
    const ok = await post(gw, { model: 'chat', max_tokens: 4000, ...shape('recipient', 'a clean question') });
    assert.equal(ok.backend, 'cloud', JSON.stringify(ok.json));
    // Masking itself works for this shape when the key is clean...
    const other = generators.email(7200);
    const masked = await post(gw, { model: 'chat', max_tokens: 4000, ...shape('recipient', `write to ${other}`) });
    assert.equal(masked.status, 200, JSON.stringify(masked.json));
    assert.equal(masked.backend, 'cloud');
    const before = await count(cloud);
    // ... but not when the key holds the value.
    const email = generators.email(7201);
    for (const stream of [false, true]) {
      const r = await post(gw, { model: 'chat', max_tokens: 4000, ...shape(email, 'a clean question') }, { stream });
      assert.equal(r.status, 503, JSON.stringify(r.json));
      if (!stream) assert.match(r.json.error.message, /masking failed/);
      assert.equal(await count(cloud), before, 'nothing reached the cloud');
    }
    assertNoLeak(bodiesText(await bodies(cloud)), [email], { baseline: JSON.stringify(shape('recipient', 'a clean question')) });
  });
});

// ---- Content parts no scanner can read ----
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const BINARY_PARTS = [
  { name: 'an image as a data: URL', part: { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } } },
  { name: 'input_audio', part: { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=', format: 'wav' } } },
  { name: 'a file with file_data', part: { type: 'file', file: { filename: 'notes.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQKJcfsj6IK' } } },
];
const HTTP_IMAGE = { type: 'image_url', image_url: { url: 'https://images.example.org/cat.png' } };
const withPart = (text, part) => ({ model: 'chat', max_tokens: 4000, messages: [{ role: 'user', content: [{ type: 'text', text }, part] }] });

describe('binary content parts (data: images, audio, file bytes)', () => {
  test('local_only: they keep the request local while the cloud takes clean overflow, http image included', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, edgeOpts: ', supports_images: true' }));
    try {
      const hold = await holdLocal(gw, edge, { admin: ADMIN });
      const clean = await proveCloudChosen(gw, cloud, { n: 1 });
      const img = await post(gw, withPart('describe this picture', HTTP_IMAGE));
      assert.equal(img.status, 200, JSON.stringify(img.json));
      assert.equal(img.backend, 'cloud', 'an http(s) image is text: a clean one may overflow');
      const sent = clean.length + 1;
      const pending = BINARY_PARTS.map((b, i) => later(post(gw, withPart(`part ${i}`, b.part), { stream: i % 2 === 1 })));
      await waitQueued(gw, BINARY_PARTS.length, cloud, sent);
      assert.equal(await count(cloud), sent, 'no request with a binary part went to the cloud');
      await hold.release();
      const results = await Promise.all(pending.map(settle));
      results.forEach((r, i) => {
        assert.equal(r.status, 200, `${BINARY_PARTS[i].name}: ${JSON.stringify(r.json)}`);
        assert.equal(r.backend, 'edge', BINARY_PARTS[i].name);
        assert.equal(r.reason, 'privacy', BINARY_PARTS[i].name);
      });
      assert.match(gw.output(), /content part\(s\) cannot be scanned; treated as sensitive/);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  const maskGateway = async (pii = '', keys = '', models = null) => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: 'mask', pii, keys, models, edgeOpts: ', supports_images: true' }));
    return { gw, cloud };
  };

  test('mask: they cannot be masked, so the request is not sent to the cloud', async () => {
    const { gw, cloud } = await maskGateway();
    try {
      const img = await post(gw, withPart('describe this picture', HTTP_IMAGE));
      assert.equal(img.backend, 'cloud', `a clean http image goes to the cloud: ${JSON.stringify(img.json)}`);
      const before = await count(cloud);
      for (const [i, b] of BINARY_PARTS.entries()) {
        const r = await post(gw, withPart(`part ${i}`, b.part), { stream: i % 2 === 1 });
        assert.equal(r.status, 503, `${b.name}: ${JSON.stringify(r.json)}`);
        if (r.json) assert.equal(r.json.error.code, 'privacy_restricted', b.name);
        assert.equal(await count(cloud), before, `${b.name}: nothing reached the cloud`);
      }
      // A declared emergency sends sensitive requests masked: these cannot be.
      const declared = await getJSON(`${gw.url}/admin/emergency`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: true, reason: 'binary' }),
      });
      assert.equal(declared.status, 200);
      const masked = await post(gw, { model: 'chat', max_tokens: 4000, messages: userMsg(`write to ${generators.email(7400)}`) });
      assert.equal(masked.backend, 'cloud', `in the emergency, masking works for text: ${JSON.stringify(masked.json)}`);
      const sent = await count(cloud);
      for (const b of BINARY_PARTS) {
        const r = await post(gw, withPart('part in an emergency', b.part));
        assert.equal(r.status, 503, `${b.name} in an emergency: ${JSON.stringify(r.json)}`);
        assert.match(r.json.error.message, /content parts that cannot be scanned/, b.name);
        assert.equal(await count(cloud), sent, `${b.name} in an emergency: nothing reached the cloud`);
      }
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('mask + binary_parts: allow: they go to the cloud as they are, the text still masked; a key or model saying local wins', async () => {
    const keys = `keys:
  - { name: app, key: "sk-app" }
  - { name: strict, key: "sk-strict", pii_binary_parts: local }`;
    const models = `  - { name: chat, backends: [edge, cloud] }
  - { name: chat-strict, backends: [edge, cloud], pii_binary_parts: local }`;
    const { gw, cloud } = await maskGateway('  binary_parts: allow', keys, models);
    const app = { authorization: 'Bearer sk-app' };
    try {
      await proveCloudChosen(gw, cloud, { n: 1, headers: app, reason: 'fallback' });
      for (const [i, b] of BINARY_PARTS.entries()) {
        const email = generators.email(7300 + i);
        const text = `part ${i} for ${email}`;
        const before = await count(cloud);
        const r = await post(gw, withPart(text, b.part), { headers: app, stream: i % 2 === 1 });
        assert.equal(r.status, 200, `${b.name}: ${JSON.stringify(r.json)}`);
        assert.equal(r.backend, 'cloud', b.name);
        assert.equal(r.content, text, `${b.name}: restored`);
        const got = await bodies(cloud, before);
        assert.equal(got.length, 1);
        assert.equal(got[0].messages[0].content[0].text, `part ${i} for [EMAIL_1]`);
        assert.deepEqual(got[0].messages[0].content[1], b.part, `${b.name}: sent as it is`);
        assertNoLeak(bodiesText(got), [email], { baseline: `part ${i} for ` });
      }
      const before = await count(cloud);
      for (const [what, headers, model] of [['key', { authorization: 'Bearer sk-strict' }, 'chat'], ['model', app, 'chat-strict']]) {
        const r = await post(gw, { ...withPart('part 0', BINARY_PARTS[0].part), model }, { headers });
        assert.equal(r.status, 503, `${what} saying local: ${JSON.stringify(r.json)}`);
        assert.equal(r.json.error.code, 'privacy_restricted', what);
        assert.equal(await count(cloud), before, `${what} saying local: nothing reached the cloud`);
      }
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});
