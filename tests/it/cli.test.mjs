// The command line: --help, --version, --check-config, and a bad config at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD, waitFor } from './lib/harness.mjs';

const bin = join(BUILD, 'spillway');
const run = (...args) => spawnSync(bin, args, { encoding: 'utf8', timeout: 10000 });

function file(text) {
  const p = join(mkdtempSync(join(tmpdir(), 'spillway-cli-')), 'c.yaml');
  writeFileSync(p, text);
  return p;
}

test('--help and --version', () => {
  const h = run('--help');
  assert.equal(h.status, 0);
  assert.match(h.stdout, /--check-config FILE/);
  const v = run('--version');
  assert.equal(v.status, 0);
  assert.match(v.stdout, /^spillway \d+\.\d+\.\d+/);
  assert.equal(run('--bogus').status, 2);
});

test('--check-config: a good file is ok, the demo config too', () => {
  const r = run('--check-config', 'examples/demo.yaml');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /examples\/demo.yaml: ok/);
});

test('--check-config: every error with file:line:col, exit 1', () => {
  const p = file(`listen: "127.0.0.1:8080"
backends:
  - name: edge
    tier: edgy
    url: "http://127.0.0.1:1"
    model: "m"
models:
  - name: chat
    backends: [edge, nope]
`);
  const r = run('--check-config', p);
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`${p}:4:11: backends\\[0\\]\\.tier: .*edgy`));
  assert.match(r.stderr, new RegExp(`${p}:9:\\d+: models\\[0\\]\\.backends\\[1\\]: .*nope`));
});

test('--check-config: a backend url ending in /v1 is valid and the notice says what it is read as', () => {
  const p = file(`listen: "127.0.0.1:8080"
backends:
  - { name: edge, tier: local, url: "http://127.0.0.1:8081/v1", model: m }
  - { name: proxy, tier: cloud, url: "https://gw.example/openai/v1/", model: m }
  - { name: plain, tier: cloud, url: "https://api.example", model: m }
models:
  - { name: chat, backends: [edge, proxy, plain] }
`);
  const r = run('--check-config', p);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /: ok/);
  assert.match(r.stderr, /backends\[0\]\.url \(edge\): read as "http:\/\/127\.0\.0\.1:8081"; the \/v1 is dropped/);
  assert.match(r.stderr, /backends\[1\]\.url \(proxy\): read as "https:\/\/gw\.example\/openai"/);
  assert.doesNotMatch(r.stderr, /plain/);
});

test('starting with an invalid config exits 1 without listening', () => {
  const r = run('-c', file('listen: 12\n'));
  assert.equal(r.status, 1);
  assert.doesNotMatch(r.stderr, /listening on/);
});

test('--check-config: every shipped example is valid (with its secrets in the environment)', () => {
  const env = { ...process.env, APP_KEY: 'sk-app-1', INTERNAL_KEY: 'sk-int-1', ADMIN_KEY: 'sk-admin-1', OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a' };
  for (const f of ['examples/demo.yaml', 'examples/llamacpp-openai.yaml', 'examples/ollama.yaml']) {
    const r = spawnSync(bin, ['--check-config', f], { encoding: 'utf8', env, timeout: 10000 });
    assert.equal(r.status, 0, `${f}: ${r.stderr}`);
  }
});

test('--check-config: the anthropic dialect is refused until its adapter exists', () => {
  const r = run('--check-config', file(`backends:
  - { name: c, tier: cloud, url: "https://api.anthropic.com", dialect: anthropic, model: m }
models:
  - { name: chat, backends: [c] }
`));
  assert.equal(r.status, 1);
  assert.match(r.stderr, /dialect: anthropic is not supported by this build yet/);
});

// `make run` = build + scripts/demo.sh: two llmsim processes on :8081/:8082 and
// the gateway on :8080 with examples/demo.yaml; Ctrl-C stops all three.
const DEMO_PORTS = [8080, 8081, 8082];
const portFree = (port) => new Promise((res) => {
  const srv = net.createServer();
  srv.once('error', () => res(false));
  srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
});

test('make run: scripts/demo.sh serves a streamed chat on :8080 and Ctrl-C frees its three ports', { timeout: 60000 }, async (t) => {
  const busy = [];
  for (const p of DEMO_PORTS) if (!(await portFree(p))) busy.push(p);
  if (busy.length) { t.skip(`the demo's fixed port(s) ${busy.join(', ')} already in use on this machine`); return; }

  const root = new URL('../..', import.meta.url).pathname;
  // Its own process group, so the finally below can stop whatever is left if the test fails.
  const demo = spawn('bash', ['scripts/demo.sh'], { cwd: root, env: { ...process.env, BUILD }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  demo.stdout.on('data', (d) => { out += d; });
  demo.stderr.on('data', (d) => { out += d; });
  let exited = null;
  const exit = new Promise((res) => demo.on('exit', (code, signal) => { exited = { code, signal }; res(exited); }));
  try {
    await waitFor(async () => {
      if (exited) throw new Error(`demo.sh exited early (${JSON.stringify(exited)}): ${out}`);
      try { return (await fetch('http://127.0.0.1:8080/healthz')).status === 200; } catch { return false; }
    }, { timeout: 20000, every: 100, what: 'http://127.0.0.1:8080/healthz' })
      .catch((e) => { throw new Error(`${e.message}; demo output: ${out}`); });

    const r = await fetch('http://127.0.0.1:8080/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'Hello!' }] }),
    });
    const body = await r.text();
    assert.equal(r.status, 200, body);
    assert.match(r.headers.get('content-type') || '', /^text\/event-stream/);
    assert.ok(r.headers.get('x-spillway-backend'), 'X-Spillway-Backend is set');
    assert.match(body, /^data: \{/);
    assert.match(body, /data: \[DONE\]\s*$/);

    demo.kill('SIGINT');
    const how = await Promise.race([exit, new Promise((res) => setTimeout(() => res(null), 15000))]);
    assert.ok(how, `demo.sh still running 15 s after SIGINT; output: ${out}`);
    await waitFor(async () => (await Promise.all(DEMO_PORTS.map(portFree))).every(Boolean),
      { timeout: 10000, every: 100, what: 'ports 8080-8082 free after Ctrl-C' });
  } finally {
    if (!exited) try { process.kill(-demo.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});
