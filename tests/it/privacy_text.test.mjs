// PII written the way people write it, through the real gateway: digits of
// other scripts (Arabic-Indic, Persian, Devanagari, Thai), Unicode dashes and
// minus signs as separators, numbers broken over two lines or split by tabs,
// card and phone groupings with dots and slashes, internationalised e-mail
// addresses, '@' written %40 or &#64;, zero-padded IPv4 addresses.
//
// Where the cloud is chosen for a clean request (local down; a cloud-only
// model), a request with such a value is refused under local_only and goes
// masked under mask: the cloud simulator's /admin/received never holds a
// fragment of a value, and an answer that echoes the placeholders comes back
// to the client restored, byte for byte.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { startLlmsim, startSpillway } from './lib/harness.mjs';
import { receivedBodies, bodiesText, stripPlaceholders, FRAGMENT } from './lib/leak.mjs';

const ADMIN = 'sk-admin-text';
const DOWN = 'http://127.0.0.1:9';

// ---- Values as people type them ----
const digits = (n) => Array.from({ length: n }, () => randomInt(10)).join('');
const word = (n) => Array.from({ length: n }, () => 'abcdefghijkmnopqrstuvwxyz'[randomInt(25)]).join('');
function luhn(body) {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}
function bsn() {
  for (;;) {
    const d = String(1 + randomInt(9)) + digits(7);
    let s = 0;
    for (let i = 0; i < 8; i++) s += Number(d[i]) * (9 - i);
    if (s % 11 < 10) return d + (s % 11);
  }
}
function iban() {
  const bban = 'ABNA' + digits(10);
  const num = (bban + 'NL00').replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  return `NL${String(98 - Number(BigInt(num) % 97n)).padStart(2, '0')}${bban}`;
}
const ZERO = { arabic: 0x660, persian: 0x6f0, devanagari: 0x966, thai: 0xe50, bengali: 0x9e6 };
const script = (s, name) => s.replace(/[0-9]/g, (d) => String.fromCodePoint(ZERO[name] + Number(d)));
const group = (s, sizes, sep) => { const out = []; let i = 0; for (const n of sizes) { out.push(s.slice(i, i + n)); i += n; } return out.join(sep); };
const card16 = () => luhn('4' + digits(14));
const amex = () => luhn('37' + digits(12));

// Each: [label, the value as written]. The label goes before it in the prompt.
const VALUES = () => [
  ['بطاقتي', script(group(card16(), [4, 4, 4, 4], ' '), 'arabic')],
  ['card', group(amex(), [4, 6, 5], '.')],
  ['card', group(card16(), [4, 4, 4, 4], '/')],
  ['card', ((c) => `${c.slice(0, 4)} ${c.slice(4, 8)}\n${c.slice(8, 12)} ${c.slice(12)}`)(card16())],
  ['card', group(card16(), [4, 4, 4, 4], '\t')],
  ['bel', `06\u2013${1 + randomInt(9)}${digits(7)}`],
  ['شماره', script(`+31 6 ${1 + randomInt(9)}${digits(7)}`, 'persian')],
  ['phone', `+31 6\n${1 + randomInt(9)}${digits(3)} ${digits(4)}`],
  ['tél', `06.${digits(2)}.${digits(2)}.${digits(2)}.${digits(2)}`],
  ['Tel.', `(+31) 6 ${1 + randomInt(9)}${digits(7)}`],
  ['नंबर', script(`+91 9${digits(4)} ${digits(5)}`, 'devanagari')],
  ['IBAN', script(iban(), 'arabic')],
  ['BSN', script(bsn(), 'thai')],
  ['SSN', `${100 + randomInt(500)}\u2212${10 + randomInt(89)}\u2212${1000 + randomInt(8999)}`],
  ['host', [10, randomInt(256), randomInt(256), 1 + randomInt(254)].map((x) => String(x).padStart(3, '0')).join('.')],
  ['الخادم', script(`10.${randomInt(256)}.${randomInt(256)}.${1 + randomInt(254)}`, 'arabic')],
  ['mail', `jürgen.${word(6)}@bücher.de`],
  ['почта', `иван.${word(6)}@пример.рф`],
  ['mail', `${word(7)}%40example.nl`],
  ['mail', `${word(7)}&#64;example.org`],
];

function prompt() {
  const vals = VALUES();
  const text = `Please repeat these records exactly.\n${vals.map(([l, v]) => `${l}: ${v}`).join('\n')}\nThanks.`;
  let template = text;
  for (const [, v] of vals) template = template.replace(v, '\n');
  return { text, values: vals.map(([, v]) => v), template };
}

// ---- The leak rule of lib/leak.mjs, for values of any script ----
// Digits of every script read as ASCII digits and every dash as '-' on both
// sides (a value must not come back in another script's digits either); a
// fragment counts when it has two letters or digits of any script.
function digitValue(ch) {
  let cp = ch.codePointAt(0), k = 0;
  while (/\p{Nd}/u.test(String.fromCodePoint(cp - 1))) { cp--; k++; }
  return String(k % 10);
}
const fold = (s) => s.replace(/\p{Nd}/gu, digitValue).replace(/[\p{Pd}\u2212]/gu, '-');
function fragments(v) {
  const chars = [...fold(v)];
  const out = new Set();
  for (let i = 0; i + FRAGMENT <= chars.length; i++) {
    const f = chars.slice(i, i + FRAGMENT).join('');
    if ((f.match(/[\p{L}\p{N}]/gu) || []).length >= 2) out.add(f);
  }
  return [...out];
}
function assertNoLeak(haystack, values, baseline) {
  const hay = fold(stripPlaceholders(haystack));
  const base = fold(stripPlaceholders(baseline));
  const leaks = [];
  for (const v of values) {
    const checked = fragments(v).filter((f) => !base.includes(f));
    assert.ok(checked.length > 0, `leak check for ${JSON.stringify(v)} would be vacuous`);
    const hit = checked.find((f) => hay.includes(f));
    if (hit !== undefined) leaks.push({ value: v, fragment: hit });
  }
  assert.deepEqual(leaks.slice(0, 5), [], `${leaks.length} of ${values.length} value(s) reached the cloud (in whole or in part)`);
}

function config({ edgeUrl, cloudUrl, policy, models }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
${models}
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
pii:
  policy: ${policy}
`;
}

async function send(gw, text, { stream = false } = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat', stream, max_tokens: 4000, messages: [{ role: 'user', content: text }] }),
  });
  const raw = await r.text();
  let json = null, content = null;
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
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend') };
}

const count = async (sim) => (await receivedBodies(sim)).length;

// Clean requests go to the cloud here: the precondition that gives "the
// cloud saw none of it" its meaning. Returns what the cloud received.
async function proveCloudChosen(gw, cloud) {
  const before = await count(cloud);
  for (let i = 0; i < 2; i++) {
    const r = await send(gw, `a clean question number ${i} with nothing personal in it`, { stream: i === 1 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.backend, 'cloud');
  }
  const got = (await receivedBodies(cloud)).slice(before);
  assert.equal(got.length, 2, 'the cloud received the clean requests');
  return got;
}

describe('PII as people write it', () => {
  test('local down, local_only: every request with such a value is refused and never sent', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '10000']);
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: 'local_only', models: '  - { name: chat, backends: [edge, cloud] }' }));
    try {
      const clean = await proveCloudChosen(gw, cloud);
      const prompts = [];
      // one value per request: each form must make its request sensitive on its own
      for (let round = 0; round < 2; round++) {
        for (const [label, v] of VALUES()) {
          const text = `${label}: ${v}`;
          prompts.push({ text, values: [v], template: `${label}: ` });
          const r = await send(gw, text, { stream: round === 1 });
          assert.equal(r.status, 503, `${JSON.stringify(text)}: ${JSON.stringify(r.json)}`);
          assert.equal(r.json.error.code, 'privacy_restricted');
        }
      }
      assert.equal(await count(cloud), clean.length, 'no request with a value reached the cloud');
      assertNoLeak(bodiesText(await receivedBodies(cloud)), prompts.flatMap((p) => p.values),
        [bodiesText(clean), ...prompts.map((p) => p.template)].join('\n'));
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });

  test('cloud-only model, mask: the cloud sees placeholders only, the echoed answer comes back restored', async () => {
    const cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '10000']);
    const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, policy: 'mask', models: '  - { name: chat, backends: [cloud] }' }));
    try {
      const clean = await proveCloudChosen(gw, cloud);
      const prompts = [];
      for (let i = 0; i < 8; i++) {
        const p = prompt();
        prompts.push(p);
        const r = await send(gw, p.text, { stream: i % 2 === 1 });
        assert.equal(r.status, 200, JSON.stringify(r.json));
        assert.equal(r.backend, 'cloud');
        assert.equal(r.content, p.text, 'the answer echoing the placeholders is restored');
      }
      const got = await receivedBodies(cloud);
      assert.equal(got.length, clean.length + prompts.length);
      assertNoLeak(bodiesText(got), prompts.flatMap((p) => p.values),
        [bodiesText(clean), ...prompts.map((p) => p.template + JSON.stringify(p.template))].join('\n'));
    } finally {
      await gw.stop(); await cloud.stop();
    }
  });
});
