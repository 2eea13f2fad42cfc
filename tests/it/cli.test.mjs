// The command line: --help, --version, --check-config, and a bad config at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD, waitFor, tempDir } from './lib/harness.mjs';

const bin = join(BUILD, 'spillway');
const run = (...args) => spawnSync(bin, args, { encoding: 'utf8', timeout: 10000 });

function file(text) {
  const p = join(tempDir('spillway-cli-'), 'c.yaml');
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
  const env = { ...process.env, APP_KEY: 'sk-app-1', INTERNAL_KEY: 'sk-int-1', ADMIN_KEY: 'sk-admin-1', OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a', CLAUDE_CODE_KEY: 'sk-cc' };
  for (const f of ['examples/demo.yaml', 'examples/llamacpp-openai.yaml', 'examples/ollama.yaml', 'examples/claude-code.yaml']) {
    const r = spawnSync(bin, ['--check-config', f], { encoding: 'utf8', env, timeout: 10000 });
    assert.equal(r.status, 0, `${f}: ${r.stderr}`);
  }
});

test('--check-config: anthropic backends, dialects and anthropic_version are accepted', () => {
  const r = run('--check-config', file(`backends:
  - { name: c, tier: cloud, url: "https://api.anthropic.com", dialect: anthropic, model: m, anthropic_version: "2023-06-01" }
  - { name: both, tier: cloud, url: "https://gw.example", dialects: [anthropic, openai], model: m }
models:
  - { name: chat, backends: [c, both] }
`));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /: ok/);
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

// The harness removes its temporary directories: the config directory of a
// stopped, a failed and an abandoned spillway, and tempDir()s when the test
// process exits or is killed by SIGTERM. Each child runs with its own TMPDIR.
test('the test harness leaves no spillway-it-* directory behind', async () => {
  const harness = new URL('./lib/harness.mjs', import.meta.url).href;
  const tmp = tempDir('spillway-harness-');
  const left = (d) => readdirSync(d).filter((n) => n.startsWith('spillway-'));
  const node = (dir, script) => spawn(process.execPath, ['--input-type=module', '-e', script],
    { env: { ...process.env, TMPDIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  const finish = (child) => new Promise((res) => {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code, signal) => res({ code, signal, out }));
  });

  const runs = join(tmp, 'runs');
  mkdirSync(runs);
  const r = await finish(node(runs, `
    import { readdirSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { startLlmsim, startSpillway, tempDir } from '${harness}';
    const left = () => readdirSync(tmpdir()).filter((n) => n.startsWith('spillway-'));
    const sim = await startLlmsim();
    const cfg = (url) => 'listen: "127.0.0.1:0"\\nbackends:\\n  - { name: e, tier: local, url: "' + url + '", model: m }\\nmodels:\\n  - { name: chat, backends: [e] }\\n';
    const gw = await startSpillway(cfg(sim.url));
    if (left().length !== 1) throw new Error('expected the config dir while running: ' + left());
    await gw.stop();
    console.log('after stop:', left().length);
    await startSpillway('listen: 12\\n').then(() => { throw new Error('started'); }, () => {});
    console.log('after failed start:', left().length);
    const abandoned = await startSpillway(cfg(sim.url));
    tempDir('spillway-extra-');
    abandoned.proc.kill('SIGKILL');
    await abandoned.exited;
    await sim.stop();
    console.log('at exit:', left().length);
  `));
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /after stop: 0/);
  assert.match(r.out, /after failed start: 0/);
  assert.match(r.out, /at exit: 2/);
  assert.deepEqual(left(runs), [], 'left behind after the process exited');

  const killed = join(tmp, 'killed');
  mkdirSync(killed);
  const child = node(killed, `
    import { tempDir } from '${harness}';
    tempDir('spillway-it-');
    console.log('ready');
    setInterval(() => {}, 1000);
  `);
  let said = '';
  child.stdout.on('data', (d) => { said += d; });
  const done = finish(child);
  await waitFor(() => said.includes('ready'), { timeout: 10000, what: 'the child to make its directory' });
  assert.equal(left(killed).length, 1);
  child.kill('SIGTERM');
  const k = await done;
  assert.equal(k.signal, 'SIGTERM', k.out);
  assert.deepEqual(left(killed), [], 'left behind after SIGTERM');
});
