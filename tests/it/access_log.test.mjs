// The access log (access_log: {path, format}): one JSON line per request,
// the API's and every other (404, 401, 405), with the request id, client,
// method, path, status, bytes, duration, backend, reason and key name; never
// a prompt, a key or a query string (a canary planted in each is absent).
// SIGHUP reopens the file after logrotate moved it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { startLlmsim, startSpillway, waitFor, tempDir } from './lib/harness.mjs';

const KEY = 'sk-access-secret-9d1e';
const ADMIN = 'sk-admin-access-77aa';
const PROMPT_CANARY = 'prompt-canary-c4f1';
const QUERY_CANARY = 'query-canary-b7e2';

const config = (edgeUrl, cloudUrl, path) => `
listen: "127.0.0.1:0"
keys:
  - { name: app, key: "${KEY}" }
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model }
models:
  - { name: chat, backends: [edge, cloud] }
routing:
  health_interval_ms: 100
pii:
  policy: off
access_log: { path: "${path}", format: json }
`;

const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

test('access log: one parsable line per request, 404/401/405 included, no prompt, key or query; reopened on SIGHUP', async () => {
  const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
  const cloud = await startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']);
  const dir = tempDir('spillway-access-');
  const file = join(dir, 'access.log');
  const gw = await startSpillway(config(edge.url, cloud.url, file));
  try {
    const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const chat = await fetch(`${gw.url}/v1/chat/completions?token=${QUERY_CANARY}`, {
      method: 'POST', headers: auth,
      body: JSON.stringify({ model: 'chat', max_tokens: 8, messages: [{ role: 'user', content: `say hi ${PROMPT_CANARY}` }] }),
    });
    assert.equal(chat.status, 200, await chat.text());
    const rid = chat.headers.get('x-request-id');
    assert.equal((await fetch(`${gw.url}/no/such/path`, { headers: auth })).status, 404);
    const unauth = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(unauth.status, 401);
    const wrong = await fetch(`${gw.url}/v1/chat/completions`, { headers: auth });
    assert.equal(wrong.status, 405);

    await waitFor(() => lines(file).length >= 4, { timeout: 10000, what: 'four access-log lines' });
    const got = lines(file);
    const text = readFileSync(file, 'utf8');
    for (const canary of [PROMPT_CANARY, QUERY_CANARY, KEY, ADMIN, 'Bearer'])
      assert.ok(!text.includes(canary), `${canary} in the access log`);
    const served = got.find((l) => l.request_id === rid);
    assert.ok(served, JSON.stringify(got));
    assert.equal(served.method, 'POST');
    assert.equal(served.path, '/v1/chat/completions');
    assert.equal(served.status, 200);
    assert.equal(served.backend, 'edge');
    assert.equal(served.reason, 'baseline');
    assert.equal(served.key, 'app');
    assert.equal(served.client, '127.0.0.1');
    assert.ok(served.bytes_in > 0 && served.bytes_out > 0 && served.duration_ms >= 0);
    assert.match(served.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const by = (status) => got.find((l) => l.status === status);
    assert.equal(by(404).path, '/no/such/path');
    assert.equal(by(404).key, 'app');
    assert.equal(by(401).key, null);
    assert.ok([null, 'none'].includes(by(401).backend));
    assert.equal(by(405).method, 'GET');

    // logrotate: move the file, SIGHUP; the next line goes to a new file.
    renameSync(file, `${file}.1`);
    gw.proc.kill('SIGHUP');
    await waitFor(() => existsSync(file), { timeout: 10000, what: 'the access log reopened' });
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    await waitFor(() => lines(file).some((l) => l.path === '/healthz'), { timeout: 10000, what: 'a line in the new file' });
    assert.ok(!lines(`${file}.1`).some((l) => l.path === '/healthz'));
  } finally {
    await gw.stop(); await edge.stop(); await cloud.stop();
  }
});
