// The real Claude Code CLI (`claude -p`, @anthropic-ai/claude-code) through
// Spillway with examples/claude-code.yaml, its backends replaced by llmsim
// (an OpenAI-speaking local box, an Anthropic-speaking cloud, both echoing
// the last user message): a turn runs on the local box at baseline, spills
// to the cloud under load with every Anthropic field it sent, and a file it
// reads that holds a secret stays local (under pii.policy: mask it goes to the
// cloud masked). The example's pii.allow entry is checked against what the
// CLI really sends: its system prompt's vendor address is counted as allowed.
//
// The CLI runs with HOME in a temporary dir, its API at the gateway, a test
// key, telemetry, auto-update and every nonessential call off, and a dead
// loopback proxy for anything that is not loopback; each run is bounded and
// killed on timeout.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getJSON, removeTempDir, startLlmsim, startSpillway, tempDir, waitFor } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ADMIN = 'sk-cc-admin';
const KEY = 'sk-cc-client-test';
const RUN_TIMEOUT_MS = 90000;
// A turn queued behind an overdue local slot reaches the cloud within this
// (the model's TTFT budget is 30 s; the slot is overdue ~7 s after it was taken).
const LEAVE_BOUND_MS = 20000;

// The CLI's native binary: the platform package's (what the wrapper package
// installs over its bin/claude.exe), else the wrapper's bin.
function claudeBin() {
  const require = createRequire(join(root, 'package.json'));
  for (const pkg of [`@anthropic-ai/claude-code-${process.platform}-${process.arch}`]) {
    try {
      const bin = join(dirname(require.resolve(`${pkg}/package.json`)), 'claude');
      if (existsSync(bin)) return bin;
    } catch { /* not installed */ }
  }
  const bin = join(root, 'node_modules/.bin/claude');
  return existsSync(bin) ? bin : null;
}
const CLAUDE = claudeBin();

// examples/claude-code.yaml with llmsim in place of llama-server and
// Anthropic, an admin key for the test's look at the decisions, fast health
// checks, one local slot (so one held request fills the box), and the
// file's secrets filled in.
function exampleConfig(edgeUrl, cloudUrl, policy) {
  let y = readFileSync(join(root, 'examples/claude-code.yaml'), 'utf8');
  const sub = (from, to) => {
    assert.ok(y.includes(from), `examples/claude-code.yaml has ${from}`);
    y = y.replace(from, to);
  };
  sub('listen: "127.0.0.1:8080"', `listen: "127.0.0.1:0"\nadmin: { key: "${ADMIN}" }`);
  sub('url: "http://127.0.0.1:8081"', `url: "${edgeUrl}"`);
  sub('url: "https://api.anthropic.com"', `url: "${cloudUrl}"`);
  sub('slots: 2 ', 'slots: 1 ');
  // a slot held past 4 x its expected hold + 1 s counts as not freeing
  // (the held request below: 4 x ~1.6 s + 1 s)
  sub('routing:\n', 'routing:\n  health_interval_ms: 100\n  overdue_floor_ms: 1000\n');
  sub('${CLAUDE_CODE_KEY}', KEY);
  sub('${ANTHROPIC_API_KEY}', 'sk-ant-upstream-test');
  if (policy) sub('policy: local_only', `policy: ${policy}`);
  return y;
}

// Runs `claude -p prompt` in cwd with the gateway as its API; resolves to
// { code, stdout, stderr } (code null: killed at the timeout).
function runClaude(gw, cwd, prompt, args = [], timeout = RUN_TIMEOUT_MS) {
  const env = {
    PATH: process.env.PATH,
    HOME: cwd,
    ANTHROPIC_BASE_URL: gw.url,
    ANTHROPIC_AUTH_TOKEN: KEY,
    ANTHROPIC_MODEL: 'coder',
    ANTHROPIC_SMALL_FAST_MODEL: 'coder',
    // llmsim answers max_tokens tokens unless the echo ends first
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: '4096',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    // anything not on loopback goes to a port where nothing listens
    HTTPS_PROXY: 'http://127.0.0.1:9',
    HTTP_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1,localhost',
  };
  return new Promise((res, rej) => {
    const p = spawn(CLAUDE, ['-p', prompt, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), timeout);
    p.on('error', (e) => { clearTimeout(timer); rej(e); });
    p.on('exit', (code) => { clearTimeout(timer); res({ code, stdout, stderr }); });
  });
}

const admin = { headers: { authorization: `Bearer ${ADMIN}` } };
const decisions = async (gw) => (await getJSON(`${gw.url}/admin/decisions?n=100`, admin)).body.decisions;
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100`)).body.requests;
const edgeState = async (gw) => (await getJSON(`${gw.url}/admin/state`, admin)).body.backends.find((b) => b.name === 'edge');

// The decisions of the chat requests made since `before` decisions were logged.
async function newDecisions(gw, before) {
  const all = await decisions(gw);
  return all.slice(0, all.length - before);
}

// A prompt that makes the CLI read a file (an @-mention: the CLI reads it
// and sends its text in a system message inside `messages`), and the file.
// (built from pieces, so the repository's own secret scan does not count it)
const SECRET = ['AKIA', 'Z7QBQXW4', 'MVTL3RUN'].join('');
const SECRET_LINE = `aws_access_key_id = ${SECRET}\naws_secret_access_key = ${['q8Hc5vTn2Lm9', 'Rz0Kx4Wb7Yd1', 'Pf6Gs3Ja8Ue2Ni5O'].join('')}\n`;
const EMAIL = 'maria.jansen@example-patient.nl';
const IBAN = 'NL91ABNA0417164300';

async function gateway(policy) {
  const edge = await startLlmsim(['--model', 'qwen-coder', '--slots', '1', '--reply', 'echo', '--keep-received', '100']);
  const cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-sonnet-4-5', '--reply', 'echo',
    '--keep-received', '100']);
  const gw = await startSpillway(exampleConfig(edge.url, cloud.url, policy));
  return { edge, cloud, gw, async stop() { await gw.stop(); await edge.stop(); await cloud.stop(); } };
}

describe('Claude Code through examples/claude-code.yaml', { skip: !CLAUDE && 'the claude CLI is not installed (npm ci)' }, () => {
  let env, dir;
  before(async () => {
    dir = tempDir('spillway-claude-');
    env = await gateway();
  });
  after(async () => {
    await env?.stop();
    if (dir) removeTempDir(dir);
  });

  test('at baseline a turn runs on the local box, translated; the vendor address is allowed', async () => {
    const before = (await decisions(env.gw)).length;
    const r = await runClaude(env.gw, dir, 'say pong');
    assert.equal(r.code, 0, `claude -p: ${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /say pong/);   // the local box echoes the turn
    const ds = (await newDecisions(env.gw, before)).filter((d) => d.api === 'anthropic');
    assert.ok(ds.length >= 1, JSON.stringify(ds));
    for (const d of ds) {
      assert.equal(d.backend, 'edge', JSON.stringify(d));
      assert.equal(d.reason, 'baseline');
      // the CLI's system prompt holds the vendor's no-reply address: allowed
      // by the example, so nothing sensitive was found
      assert.ok(d.pii_allowed >= 1, JSON.stringify(d));
      assert.deepEqual(d.pii, {});
      assert.ok(d.dropped.includes('context_management'), JSON.stringify(d));
    }
    const got = (await received(env.edge)).at(-1).body;
    // a system message inside messages stays a system message in place
    assert.ok(got.messages.slice(1).some((m) => m.role === 'system'), 'a later system message');
    assert.equal(got.messages[0].role, 'system');
    assert.equal(got.reasoning_effort !== undefined, true);   // thinking / effort as reasoning_effort
    assert.equal(got.context_management, undefined);
    assert.equal(got.thinking, undefined);
    assert.ok(Array.isArray(got.tools) && got.tools.length > 0);
  });

  test('json and stream-json output formats', async () => {
    const j = await runClaude(env.gw, dir, 'json please', ['--output-format', 'json']);
    assert.equal(j.code, 0, `${j.stdout}\n${j.stderr}`);
    const res = JSON.parse(j.stdout.trim().split('\n').at(-1));
    assert.equal(res.type, 'result');
    assert.equal(res.is_error, false);
    assert.match(res.result, /json please/);
    const s = await runClaude(env.gw, dir, 'stream please', ['--output-format', 'stream-json', '--verbose']);
    assert.equal(s.code, 0, `${s.stdout}\n${s.stderr}`);
    const events = s.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(events.some((e) => e.type === 'assistant'));
    assert.match(events.at(-1).result, /stream please/);
  });

  test('under load the turn spills to the cloud with every Anthropic field it sent', async () => {
    const hold = await holdLocal(env.gw, env.edge, { admin: ADMIN, model: 'coder', headers: { authorization: `Bearer ${KEY}` } });
    const before = (await decisions(env.gw)).length;
    const n0 = (await received(env.cloud)).length;
    let r;
    try {
      const run = runClaude(env.gw, dir, 'spill over');
      // The held slot runs far past its own estimate: it counts as not
      // freeing, so the turn reaches the cloud well before the model's 30 s
      // budget would move it (the bound is below that budget).
      await waitFor(async () => (await received(env.cloud)).length > n0,
        { timeout: LEAVE_BOUND_MS, what: 'the turn left the local queue for the cloud' });
      r = await run;
    } finally {
      await hold.release();
    }
    assert.equal(r.code, 0, `claude -p: ${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /spill over/);
    const ds = (await newDecisions(env.gw, before)).filter((d) => d.api === 'anthropic' && d.decision === 'served');
    assert.ok(ds.length >= 1);
    for (const d of ds) {
      assert.equal(d.backend, 'claude', JSON.stringify(d));
      assert.equal(d.reason, 'overflow');
      assert.equal(d.dropped, undefined);
    }
    const reqs = (await received(env.cloud)).slice(n0);
    assert.ok(reqs.length >= 1);
    const got = reqs.at(-1);
    // the client's own body, untranslated: thinking, context_management,
    // output_config and its betas reach the cloud; the system message that
    // the mid-conversation-system beta allows stays in place
    assert.ok(got.body.thinking && got.body.context_management && got.body.output_config, JSON.stringify(Object.keys(got.body)));
    assert.match(got.headers['anthropic-beta'] || '', /mid-conversation-system-/);
    assert.ok(got.body.messages.some((m) => m.role === 'system'));
    assert.equal(got.headers['x-api-key'], 'sk-ant-upstream-test');
  });

  test('a file it reads holding a secret stays local, even under load', async () => {
    writeFileSync(join(dir, 'creds.ini'), `[default]\n${SECRET_LINE}`);
    const hold = await holdLocal(env.gw, env.edge, { admin: ADMIN, model: 'coder', headers: { authorization: `Bearer ${KEY}` } });
    const n0 = (await received(env.cloud)).length;
    const before = (await decisions(env.gw)).length;
    let released = false;
    const run = runClaude(env.gw, dir, 'what is in @creds.ini ?');
    try {
      // it waits in Spillway's local queue instead of spilling
      await waitFor(async () => (await edgeState(env.gw)).queued >= 1, { timeout: 30000, what: 'the turn queued for the local box' });
      await hold.release();
      released = true;
    } finally {
      if (!released) await hold.release();
    }
    const r = await run;
    assert.equal(r.code, 0, `claude -p: ${r.stdout}\n${r.stderr}`);
    assert.ok(JSON.stringify((await received(env.edge)).at(-1).body).includes(SECRET), 'the local box saw the file');
    const cloudText = JSON.stringify((await received(env.cloud)).slice(n0));
    assert.ok(!cloudText.includes(SECRET), 'the secret reached the cloud');
    const ds = (await newDecisions(env.gw, before)).filter((d) => d.api === 'anthropic' && d.decision === 'served');
    assert.ok(ds.length >= 1);
    for (const d of ds) assert.equal(d.backend, 'edge', JSON.stringify(d));
    assert.ok(ds.some((d) => d.pii_outcome === 'kept_local'), JSON.stringify(ds));
  });
});

describe('Claude Code under pii.policy: mask', { skip: !CLAUDE && 'the claude CLI is not installed (npm ci)' }, () => {
  let env, dir;
  before(async () => {
    dir = tempDir('spillway-claude-');
    env = await gateway('mask');
  });
  after(async () => {
    await env?.stop();
    if (dir) removeTempDir(dir);
  });

  test('under load a file with personal data goes to the cloud masked, in its own API, and comes back restored', async () => {
    writeFileSync(join(dir, 'patient.txt'), `Account: ${IBAN}\n`);
    const hold = await holdLocal(env.gw, env.edge, { admin: ADMIN, model: 'coder', headers: { authorization: `Bearer ${KEY}` } });
    const n0 = (await received(env.cloud)).length;
    const before = (await decisions(env.gw)).length;
    let r;
    try {
      // the turn's own text (which the cloud echoes) holds an address too
      r = await runClaude(env.gw, dir, `write to ${EMAIL} about @patient.txt`);
    } finally {
      await hold.release();
    }
    assert.equal(r.code, 0, `claude -p: ${r.stdout}\n${r.stderr}`);
    assert.ok(r.stdout.includes(EMAIL), 'the answer is restored for the client');
    const reqs = (await received(env.cloud)).slice(n0);
    assert.ok(reqs.length >= 1);
    assert.ok(!JSON.stringify(reqs).includes(EMAIL), 'the address reached the cloud unmasked');
    assert.ok(!JSON.stringify(reqs).includes(IBAN), 'the file\'s account number reached the cloud unmasked');
    // rebuilt in the backend's own API: the Anthropic fields are still there
    const got = reqs.at(-1).body;
    assert.ok(got.thinking && got.context_management && got.output_config, JSON.stringify(Object.keys(got)));
    const ds = (await newDecisions(env.gw, before)).filter((d) => d.api === 'anthropic' && d.decision === 'served');
    assert.ok(ds.some((d) => d.backend === 'claude' && d.pii_outcome === 'masked_cloud'), JSON.stringify(ds));
  });
});
