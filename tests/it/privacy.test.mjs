// The privacy canary: thousands of generated PII values (valid checksums)
// through the real gateway in every mode and failure path. The cloud
// simulator's /admin/received must never contain one of them unmasked, and
// answers that echo the placeholders must come back to the client restored.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

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
  return { text: `Please repeat these records exactly.\n${lines.join('\n')}`, values };
}

function config({ edgeUrl, cloudUrl, policy = 'local_only', emergency = false, edgeSlots = 4 }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: ${edgeSlots} }
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

async function send(gw, text, { stream = false, headers = {} } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'chat', stream, max_tokens: 4000, messages: [{ role: 'user', content: text }] }),
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
    json = JSON.parse(raw);
    content = json.choices?.[0]?.message?.content ?? null;
  }
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
}

const receivedText = async (sim) => JSON.stringify((await getJSON(`${sim.url}/admin/received?n=100000`)).body.requests);

function assertNoLeak(cloudText, values) {
  const leaked = values.filter((v) => cloudText.includes(v));
  assert.deepEqual(leaked.slice(0, 5), [], `${leaked.length} value(s) reached the cloud unmasked`);
}

const ROUNDS = 25;        // requests per mode
const PER_TYPE = 9;       // 9 values x 9 types = 81 values per request, ~2000 per mode

describe('privacy canary', () => {
  test('local up (local_only): every request with PII is served locally; the cloud sees none', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
    try {
      for (let i = 0; i < 5; i++) {
        const { text } = canaryPrompt(PER_TYPE, i);
        const r = await send(gw, text, { stream: i % 2 === 1 });
        assert.equal(r.status, 200);
        assert.equal(r.backend, 'edge');
        assert.equal(r.content, text, 'local answers are never rewritten');
      }
      assert.equal((await getJSON(`${cloud.url}/admin/received`)).body.requests.length, 0);
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('local down, no emergency: refused, never sent; with an emergency: masked to the cloud and restored', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: 'http://127.0.0.1:9', cloudUrl: cloud.url }));
    const all = [];
    try {
      const { text, values } = canaryPrompt(PER_TYPE, 99);
      all.push(...values);
      const refused = await send(gw, text);
      assert.equal(refused.status, 503);
      assert.equal(refused.json.error.code, 'privacy_restricted');
      assert.equal((await getJSON(`${cloud.url}/admin/received`)).body.requests.length, 0);

      const declared = await getJSON(`${gw.url}/admin/emergency`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: true, reason: 'canary' }),
      });
      assert.equal(declared.status, 200);
      for (let i = 0; i < ROUNDS; i++) {
        const p = canaryPrompt(PER_TYPE, i);
        all.push(...p.values);
        const r = await send(gw, p.text, { stream: i % 2 === 1 });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.backend, 'cloud');
        assert.equal(r.reason, 'emergency');
        assert.equal(r.content, p.text, 'the echoed placeholders come back restored');
      }
      const seen = await receivedText(cloud);
      assert.equal((await getJSON(`${cloud.url}/admin/received?n=100000`)).body.requests.length, ROUNDS);
      assertNoLeak(seen, all);
      assert.ok(all.length >= 2000, `${all.length} canary values`);
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('policy mask under overflow: what spills is masked, restored in streams and whole answers', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--slots', '1', '--decode-tps', '5']);
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, policy: 'mask', edgeSlots: 1 }));
    const all = [];
    try {
      // Occupy the single local slot so everything else overflows.
      // Settled either way (it may run into its deadline); an assertion below must not leave it unhandled.
      const long = send(gw, 'a long local answer '.repeat(50)).catch((e) => e);
      await waitFor(async () => (await getJSON(`${edge.url}/admin/stats`)).body.in_flight === 1, { what: 'edge busy' });
      for (let i = 0; i < ROUNDS; i++) {
        const p = canaryPrompt(PER_TYPE, 500 + i);
        all.push(...p.values);
        const r = await send(gw, p.text, { stream: i % 2 === 0 });
        assert.equal(r.status, 200);
        assert.equal(r.backend, 'cloud');
        assert.equal(r.reason, 'overflow');
        assert.equal(r.content, p.text);
      }
      assertNoLeak(await receivedText(cloud), all);
      await long;
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });

  test('policy block: a request with PII is refused before any backend sees it', async () => {
    const edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, policy: 'block' }));
    try {
      const r = await send(gw, canaryPrompt(1, 7).text);
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'pii_blocked');
      assert.doesNotMatch(r.json.error.message, /@example/);
      assert.equal((await getJSON(`${edge.url}/admin/received`)).body.requests.length, 0);
      const clean = await send(gw, 'no personal data here');
      assert.equal(clean.status, 200);
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
      assert.ok(st.pii.blocked.email >= 1, JSON.stringify(st.pii));
    } finally {
      await gw.stop(); await edge.stop(); await cloud.stop();
    }
  });
});
