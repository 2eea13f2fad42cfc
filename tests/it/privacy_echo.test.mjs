// Headers and echoes are data. What a client writes outside the scanned
// body — a header value, a model name, a field name it made up — and what
// an operator writes into a backend URL never reach a log, the decision log,
// /admin/decisions or the dashboard, and the only client headers that reach
// an upstream are the Anthropic ones a client of /v1/messages may pass on,
// validated to their grammar. The gateway's stderr and its decision-log file
// are captured whole and searched for every planted value.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD, startLlmsim, startSpillway, tempDir, waitFor, getJSON } from './lib/harness.mjs';

const ADMIN = 'sk-admin-echo';
const KEY = 'sk-client-echo';

// Values as people type them, in the places a client controls.
const EMAIL = 'marieke.jansen@ziggo.nl';
const PHONE = '06 4128 3371';
const MODEL = `gpt-4o for ${EMAIL}`;
const FIELD = 'patient_marieke_jansen_1983';
const URL_USER = 'deploy-bot';
const URL_PASS = 'Tr0ub4dor-and-3';
const URL_QUERY = 'sig=9f8e7d6c5b4a';

function config({ edgeUrl, cloudUrl, logFile }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
keys:
  - { name: team, key: "${KEY}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model }
  - { name: claude, tier: cloud, url: "${cloudUrl}", model: claude-upstream, dialect: anthropic, api_key: "sk-ant-up" }
models:
  - { name: chat, backends: [edge, claude] }
  - { name: local-only, backends: [edge] }
  - { name: cloud-only, backends: [claude] }
routing:
  health_interval_ms: 100
decision_log: "${logFile}"
`;
}

async function post(gw, path, body, headers = {}) {
  const r = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY, authorization: `Bearer ${KEY}`, ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text, id: r.headers.get('x-request-id') };
}

const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
const clear = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });
const admin = (gw, path) => fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }).then((r) => r.text());

// Waits until stderr holds every line written so far: a request with a
// wrong key logs one line, after whatever the earlier requests logged.
async function stderrBarrier(gw) {
  const count = () => (gw.output().match(/unknown API key/g) || []).length;
  const before = count();
  await fetch(`${gw.url}/v1/models`, { headers: { authorization: 'Bearer sk-wrong' } }).then((r) => r.text());
  await waitFor(() => count() > before, { what: 'the barrier line on stderr' });
}

// Everything an operator can read: stderr, the decision-log file, the
// decisions ring, the dashboard and its data, the metrics, the state.
async function everything(gw, logFile) {
  await stderrBarrier(gw);
  const parts = [gw.output(), readFileSync(logFile, 'utf8')];
  for (const p of ['/admin/decisions?n=1000', '/admin/state', '/admin/series', '/dashboard']) parts.push(await admin(gw, p));
  parts.push(await (await fetch(`${gw.url}/metrics`)).text());
  return parts.join('\n');
}

function assertAbsent(haystack, values) {
  for (const v of values) {
    assert.ok(!haystack.includes(v), `"${v}" appears where an operator reads:\n${haystack.split('\n').filter((l) => l.includes(v)).join('\n')}`);
  }
}

describe('headers and echoes are data', () => {
  let edge, cloud, gw, logFile;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
    cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--decode-tps', '0']);
    logFile = join(tempDir('spillway-echo-'), 'decisions.jsonl');
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, logFile }));
  });
  after(async () => {
    for (const p of [gw, cloud, edge]) if (p) await p.stop();
  });

  test('an unknown model is "unknown" in the decision log, /admin/decisions and the dashboard; the 404 may name it to the client', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/messages', { model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/embeddings', { model: MODEL, input: 'hi' }],
    ]) {
      const r = await post(gw, path, body);
      assert.equal(r.status, 404, r.text);
      const d = await waitFor(async () => JSON.parse(await admin(gw, '/admin/decisions?n=1000')).decisions.find((x) => x.request_id === r.id),
        { what: `the decision of ${path}` });
      assert.equal(d.model, 'unknown');
      assert.equal(d.code, 'model_not_found');
    }
    await waitFor(() => readFileSync(logFile, 'utf8').split('\n').filter((l) => l.includes('model_not_found')).length >= 3,
      { what: 'three lines in the decision-log file' });
    assertAbsent(await everything(gw, logFile), [EMAIL, 'gpt-4o for']);
  });

  test('a field name the client made up is never printed: the 400 names it, stderr does not', async () => {
    const r = await post(gw, '/v1/messages', {
      model: 'local-only', max_tokens: 5, [FIELD]: true,
      messages: [{ role: 'user', content: 'hello' }],
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.type, 'error');
    assert.match(r.json.error.message, new RegExp(FIELD));
    await waitFor(() => readFileSync(logFile, 'utf8').includes(r.id), { what: 'its decision-log line' });
    assertAbsent(await everything(gw, logFile), [FIELD]);
  });

  test('anthropic-beta and anthropic-version outside their grammar: 400 in Anthropic\'s shape naming the header, nothing sent, nothing logged', async () => {
    await clear(cloud);
    const cases = [
      ['anthropic-beta', `prompt-caching-2024-07-31,${EMAIL}`],
      ['anthropic-beta', `call ${PHONE}`],
      ['anthropic-beta', 'prompt-caching-2024-07-31,'],
      ['anthropic-beta', Array.from({ length: 17 }, (_, i) => `feature${i}-2025-01-01`).join(',')],
      ['anthropic-version', `2023-06-01 ${EMAIL}`],
      ['anthropic-version', '2023-6-1'],
    ];
    for (const [name, value] of cases) {
      const r = await post(gw, '/v1/messages', { model: 'cloud-only', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
        { [name]: value });
      assert.equal(r.status, 400, `${name}: ${value}: ${r.text}`);
      assert.equal(r.json.type, 'error');
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.match(r.json.error.message, new RegExp(name));
      assert.ok(!r.text.includes(value), 'the answer does not quote the value');
    }
    assert.equal((await received(cloud)).length, 0, 'no request reached the cloud');
    assertAbsent(await everything(gw, logFile), [EMAIL, PHONE]);
  });

  test('only the allowed Anthropic headers reach an upstream; every other client header stays at the door', async () => {
    await clear(cloud);
    const extra = {
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'prompt-caching-2024-07-31, claude-code-20250219',
      'x-user-email': EMAIL,
      cookie: `session=${PHONE}`,
      'x-forwarded-for': '10.1.2.3',
      'user-agent': `support-desk/${EMAIL}`,
      'x-stainless-os': 'Linux',
      'anthropic-dangerous-direct-browser-access': 'true',
    };
    const r = await post(gw, '/v1/messages', { model: 'cloud-only', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, extra);
    assert.equal(r.status, 200, r.text);
    const [got] = await received(cloud);
    const names = Object.keys(got.headers).map((h) => h.toLowerCase()).sort();
    const allowed = ['accept', 'anthropic-beta', 'anthropic-version', 'content-length', 'content-type', 'host', 'x-api-key', 'x-request-id'];
    assert.deepEqual(names.filter((h) => !allowed.includes(h)), [], `unexpected headers upstream: ${names}`);
    assert.equal(got.headers['anthropic-beta'], extra['anthropic-beta']);
    assert.equal(got.headers['anthropic-version'], '2023-06-01');
    assert.equal(got.headers['x-api-key'], 'sk-ant-up', "the backend's key, never the client's");
    assert.ok(!JSON.stringify(got.headers).includes(EMAIL) && !JSON.stringify(got.headers).includes(PHONE));

    // An OpenAI client's anthropic-beta is not the Anthropic API's: never forwarded.
    await clear(cloud);
    const o = await post(gw, '/v1/chat/completions', { model: 'cloud-only', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-beta': 'prompt-caching-2024-07-31' });
    assert.equal(o.status, 200, o.text);
    const [og] = await received(cloud);
    assert.equal(og.headers['anthropic-beta'], undefined);
  });
});

describe('config errors never print URL credentials or query strings', () => {
  const bad = (edgeUrl) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model }
  - { name: cloud, tier: cloudy, url: "https://${URL_USER}:${URL_PASS}@api.example.com/v1?${URL_QUERY}", model: m, slots: lots }
  - { name: other, tier: cloud, url: "https://api.example.com/v1?${URL_QUERY}", model: m }
models:
  - { name: chat, backends: [edge, cloud, other] }
`;

  test('--check-config shows https://***@host/v1?***', async () => {
    const file = join(tempDir('spillway-echo-cfg-'), 'bad.yaml');
    writeFileSync(file, bad('http://127.0.0.1:9'));
    const r = spawnSync(join(BUILD, 'spillway'), ['--check-config', file], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 1, r.stderr + r.stdout);
    const out = r.stdout + r.stderr;
    assert.match(out, /backends\[1\]\.tier/, 'the other error is reported');
    assert.match(out, /"https:\/\/\*\*\*@api\.example\.com\/v1\?\*\*\*"/);
    assertAbsent(out, [URL_USER, URL_PASS, URL_QUERY]);
  });

  test('a refused reload (POST /admin/reload and SIGHUP) shows neither', async () => {
    const edge = await startLlmsim(['--model', 'edge-model']);
    const logFile = join(tempDir('spillway-echo-'), 'decisions.jsonl');
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: edge.url, logFile }));
    try {
      writeFileSync(gw.configFile, bad(edge.url));
      const r = await fetch(`${gw.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
      const text = await r.text();
      assert.equal(r.status, 422, text);
      assertAbsent(text, [URL_USER, URL_PASS, URL_QUERY]);
      gw.proc.kill('SIGHUP');
      await waitFor(() => (gw.output().match(/reload refused/g) || []).length >= 2, { what: 'two refused reloads in the log' });
      assert.match(gw.output(), /\*\*\*@api\.example\.com/);
      assertAbsent(gw.output(), [URL_USER, URL_PASS, URL_QUERY]);
    } finally {
      await gw.stop();
      await edge.stop();
    }
  });
});
