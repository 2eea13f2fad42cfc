// Refusals by path class and the access log across reloads: every 401, 404
// and 405 is counted in spillway_http_refused_total{status,path_class} with
// a class from a bounded set (api, models, admin, ops, unknown), never the
// path itself; a reload that changes access_log takes effect without a
// restart (a new file, a new format, or off), and one whose file cannot be
// opened is refused with a logged error while the old log keeps writing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startLlmsim, startSpillway, waitFor, tempDir, removeTempDir } from './lib/harness.mjs';

const KEY = 'sk-access-reload-51c0';
const ADMIN = 'sk-admin-access-reload';
const PATH_CANARY = 'path-canary-e93b';

const config = (edgeUrl, access) => `
listen: "127.0.0.1:0"
keys:
  - { name: app, key: "${KEY}" }
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model }
models:
  - { name: chat, backends: [edge] }
routing:
  health_interval_ms: 100
pii:
  policy: off
${access}
`;

const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
const refused = async (gw) => {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out = {};
  for (const m of text.matchAll(/^spillway_http_refused_total\{status="(\d+)",path_class="(\w+)"\} (\S+)$/gm))
    out[`${m[1]} ${m[2]}`] = Number(m[3]);
  return { out, text };
};
const reloads = async (gw, result) => {
  const m = (await (await fetch(`${gw.url}/metrics`)).text()).match(new RegExp(`^spillway_config_reloads_total\\{result="${result}"\\} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : 0;
};

test('refusals counted by path class; access_log changes applied on reload, an unopenable one refused', async () => {
  const edge = await startLlmsim(['--model', 'edge-model', '--decode-tps', '0']);
  const dir = tempDir('spillway-access-reload-');
  const first = join(dir, 'first.log');
  const second = join(dir, 'second.log');
  const gw = await startSpillway(config(edge.url, `access_log: { path: "${first}", format: json }`));
  try {
    const auth = { authorization: `Bearer ${KEY}` };
    const expect = [
      [`/v1/${PATH_CANARY}`, { headers: auth }, 404],
      [`/v1/models/${PATH_CANARY}`, { headers: auth }, 404],
      [`/admin/${PATH_CANARY}`, {}, 404],
      [`/${PATH_CANARY}`, {}, 404],
      ['/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }, 401],
      ['/v1/models', {}, 401],
      ['/v1/chat/completions', { headers: auth }, 405],
    ];
    for (const [path, init, status] of expect)
      assert.equal((await fetch(`${gw.url}${path}`, init)).status, status, path);
    const { out, text } = await refused(gw);
    assert.deepEqual(out, { '404 api': 1, '404 models': 1, '404 admin': 1, '404 unknown': 1, '401 api': 1, '401 models': 1, '405 api': 1 });
    assert.ok(!text.includes(PATH_CANARY), 'a path in /metrics');

    // 1. A new file: the next lines go there, the old file gets no more.
    await waitFor(() => lines(first).length >= expect.length, { timeout: 10000, what: 'the first file\'s lines' });
    const ok0 = await reloads(gw, 'ok');
    writeFileSync(gw.configFile, config(edge.url, `access_log: { path: "${second}", format: combined }`));
    gw.proc.kill('SIGHUP');
    await waitFor(async () => (await reloads(gw, 'ok')) > ok0, { timeout: 10000, what: 'the reload' });
    const n1 = lines(first).length;
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    await waitFor(() => lines(second).some((l) => l.includes('"GET /healthz')), { timeout: 10000, what: 'a combined line in the new file' });
    assert.equal(lines(first).length, n1, 'the old file got a line after the reload');
    assert.ok(!lines(first).some((l) => l.includes('/healthz')));

    // 2. A file that cannot be opened: refused, logged, the old log goes on.
    const failed0 = await reloads(gw, 'failed');
    writeFileSync(gw.configFile, config(edge.url, `access_log: { path: "${join(dir, 'no/such/dir/x.log')}" }`));
    gw.proc.kill('SIGHUP');
    await waitFor(async () => (await reloads(gw, 'failed')) > failed0, { timeout: 10000, what: 'the refused reload' });
    assert.match(gw.output(), /reload refused: cannot open the access log .*no\/such\/dir\/x\.log/);
    const n2 = lines(second).length;
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
    await waitFor(() => lines(second).length > n2, { timeout: 10000, what: 'the old log still writing' });

    // 3. Off: no more lines anywhere.
    const ok1 = await reloads(gw, 'ok');
    writeFileSync(gw.configFile, config(edge.url, ''));
    gw.proc.kill('SIGHUP');
    await waitFor(async () => (await reloads(gw, 'ok')) > ok1, { timeout: 10000, what: 'the reload to no access log' });
    const n3 = lines(second).length;
    assert.equal((await fetch(`${gw.url}/nope`)).status, 404);
    assert.equal((await refused(gw)).out['404 unknown'], 2, 'still counted with the log off');
    assert.equal(lines(second).length, n3);
  } finally {
    await gw.stop(); await edge.stop();
    removeTempDir(dir);
  }
});
