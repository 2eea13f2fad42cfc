// The command line: --help, --version, --check-config, and a bad config at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD } from './lib/harness.mjs';

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
