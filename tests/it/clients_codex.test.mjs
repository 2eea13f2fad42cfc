// The Codex CLI (`@openai/codex`, `codex exec`) completing a turn through the
// gateway's POST /v1/responses: a config.toml with a model provider whose
// base_url is the gateway and wire_api "responses", an API key from the
// environment (no login), HOME and CODEX_HOME in a temporary directory. The
// turn is a real tool round trip: llmsim's scripted call (docs/llmsim.md)
// makes the model call Codex's exec_command tool, Codex runs the command in
// its sandbox and sends the output back, and the model's answer is that
// output. Through a local chat-completions backend (translated), a local
// backend that speaks the Responses API, and the cloud under overflow.
//
// Hermetic: the config turns off analytics, feedback, the update check,
// plugins, apps, web search and sub-agents (with them on, Codex resolves
// chatgpt.com, ab.chatgpt.com, github.com and api.github.com at start); the
// environment holds only what Codex needs, with HTTP(S)_PROXY at a closed
// loopback port so that any other request fails here instead of leaving;
// every run is bounded and its process group killed on time-out.
//
// Codex talks to a recording proxy in front of the gateway, which checks
// every answer and streamed event against the official spec's schemas.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { getJSON, startLlmsim, tempDir } from './lib/harness.mjs';
import { withProcs } from './lib/gateway.mjs';
import { holdLocal } from './lib/hold.mjs';
import { SPEC } from './responses_lib.mjs';
import { ADMIN, checkAnswer, responsesGateway } from './lib/responses_clients.mjs';

const SPEC_COMMIT = 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3';
const CODEX = resolve(new URL('../../node_modules/.bin/codex', import.meta.url).pathname);
const RUN_TIMEOUT_MS = 90000;
const MARK = 'spillway-codex-7f3a';
const PROMPT = `llmsim:call exec_command {"cmd":"echo ${MARK}"}`;

// The config.toml of docs/clients.md, at `baseUrl`, for gateway model `model`;
// `defaultTools` leaves Codex's web_search and sub-agent (namespace) tools on.
export function codexConfig(baseUrl, model, { defaultTools = false } = {}) {
  return `model = "${model}"
model_provider = "spillway"
check_for_update_on_startup = false
${defaultTools ? '' : 'web_search = "disabled"'}

[model_providers.spillway]
name = "Spillway"
base_url = "${baseUrl}"
env_key = "SPILLWAY_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[agents]
enabled = ${defaultTools}

[features]
plugins = false
remote_plugin = false
apps = false
goals = false
image_generation = false
api_key_model_discovery = false
`;
}

// A proxy on 127.0.0.1 in front of `target`: records each request (method,
// path, body) and each answer (status, route headers, what checkAnswer read).
async function recordingProxy(target) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rec = { method: req.method, path: req.url, body: body.length ? JSON.parse(body) : null };
      seen.push(rec);
      const headers = { ...req.headers };
      delete headers.host;
      const up = http.request(`${target}${req.url}`, { method: req.method, headers }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        const parts = [];
        ur.on('data', (d) => { parts.push(d); res.write(d); });
        ur.on('end', () => {
          Object.assign(rec, {
            status: ur.statusCode, backend: ur.headers['x-spillway-backend'], reason: ur.headers['x-spillway-reason'],
            text: Buffer.concat(parts).toString(), contentType: ur.headers['content-type'],
          });
          res.end();
        });
      });
      up.on('error', (e) => { rec.status = 502; rec.text = String(e); res.writeHead(502); res.end(); });
      up.end(body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    stop: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

// Runs `codex exec PROMPT` against baseUrl in a fresh HOME; resolves
// { code, stdout, stderr } or fails after RUN_TIMEOUT_MS, its process group
// killed either way.
async function runCodex(baseUrl, model, prompt, opts) {
  const home = tempDir('spillway-codex-');
  const codexHome = join(home, '.codex');
  const work = join(home, 'work');
  mkdirSync(codexHome);
  mkdirSync(work);
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(baseUrl, model, opts));
  const env = {
    PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, SPILLWAY_API_KEY: 'sk-codex-client',
    HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', ALL_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1,localhost', LANG: 'C.UTF-8',
  };
  const proc = spawn(CODEX, ['exec', '--skip-git-repo-check', '-C', work, prompt],
    { env, cwd: work, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  const killGroup = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  let timer;
  try {
    const code = await new Promise((res, rej) => {
      proc.on('exit', (c, sig) => res(c ?? sig));
      proc.on('error', rej);
      timer = setTimeout(() => rej(new Error(`codex exec still running after ${RUN_TIMEOUT_MS} ms:\n${stderr.slice(-2000)}`)), RUN_TIMEOUT_MS);
    });
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
    killGroup();
  }
}

// One Codex turn through `base` (the gateway) for `model`: the tool round
// trip, both requests answered by `backend`, every answer valid.
async function codexTurn(gw, model, { backend, reason }) {
  const proxy = await recordingProxy(gw.url);
  try {
    const r = await runCodex(`${proxy.url}/v1`, model, PROMPT);
    const posts = proxy.seen.filter((s) => s.method === 'POST');
    for (const s of proxy.seen) assert.equal(s.path, '/v1/responses', `Codex asks nothing else: ${s.method} ${s.path}`);
    for (const p of posts) {
      assert.equal(p.status, 200, `answer: ${p.text?.slice(0, 500)}`);
      const got = await checkAnswer(p.status, p.contentType, p.text);
      assert.equal(got.kind, 'stream', 'Codex streams');
      if (backend) assert.equal(p.backend, backend);
      if (reason) assert.equal(p.reason, reason);
    }
    assert.equal(r.code, 0, `codex exec failed:\n${r.stderr.slice(-3000)}`);
    assert.equal(posts.length, 2, 'the call, then the answer after the tool ran');
    assert.equal(posts[0].body.stream, true);
    const out = posts[1].body.input.find((i) => i.type === 'function_call_output');
    assert.ok(out, 'the tool output went back');
    assert.match(JSON.stringify(out.output), new RegExp(MARK), 'Codex ran the command');
    assert.match(r.stdout, new RegExp(MARK), 'the final message is the tool output');
    return posts;
  } finally {
    await proxy.stop();
  }
}

test('the schema file is the pinned spec', () => {
  assert.equal(SPEC.commit, SPEC_COMMIT);
});

describe('codex exec', () => {
  test('against llmsim directly: a tool round trip (the client\'s side alone)', async (t) => {
    const s = await startLlmsim(['--model', 'sim-model', '--reply', 'echo', '--decode-tps', '0']);
    t.after(() => s.stop());
    await codexTurn(s, 'sim-model', {});
  });

  test('through the gateway, a local chat-completions backend: the turn completes (translated both ways)', () => withProcs(async (track) => {
    const { gw, edge } = await responsesGateway(track);
    await codexTurn(gw, 'local-chat', { backend: 'edge' });
    const req = (await getJSON(`${edge.url}/admin/received?n=2`)).body.requests;
    assert.deepEqual(req.map((q) => q.path), ['/v1/chat/completions', '/v1/chat/completions']);
  }));

  test('through the gateway, a local backend speaking the Responses API: the turn completes', () => withProcs(async (track) => {
    const { gw, edgeR } = await responsesGateway(track);
    await codexTurn(gw, 'local-responses', { backend: 'edge-r' });
    const req = (await getJSON(`${edgeR.url}/admin/received?n=2`)).body.requests;
    assert.deepEqual(req.map((q) => q.path), ['/v1/responses', '/v1/responses']);
  }));

  test('through the gateway, the cloud under overflow: the turn completes there', () => withProcs(async (track) => {
    const { gw, edge, cloud } = await responsesGateway(track);
    const hold = await holdLocal(gw, edge, { admin: ADMIN, model: 'overflow' });
    try {
      await codexTurn(gw, 'overflow', { backend: 'cloud', reason: 'overflow' });
    } finally {
      await hold.release();
    }
    const req = (await getJSON(`${cloud.url}/admin/received?n=2`)).body.requests;
    assert.deepEqual(req.map((q) => q.path), ['/v1/responses', '/v1/responses']);
  }));

  test('with Codex\'s default tools (web_search, a namespace of sub-agent tools) a chat backend cannot carry the request: a local-only model answers 400 naming the tool, an overflow model sends it to the cloud', () => withProcs(async (track) => {
    const { gw } = await responsesGateway(track);
    const proxy = await recordingProxy(gw.url);
    try {
      const local = await runCodex(`${proxy.url}/v1`, 'local-chat', 'hello', { defaultTools: true });
      assert.notEqual(local.code, 0);
      const refused = proxy.seen.filter((s) => s.method === 'POST');
      assert.ok(refused.length >= 1);
      for (const p of refused) {
        assert.equal(p.status, 400);
        const { body } = await checkAnswer(p.status, p.contentType, p.text);
        assert.equal(body.error.code, 'untranslatable');
        assert.match(body.error.param, /^tools\[\d+\]\.type$/);
        assert.ok(['namespace', 'web_search'].includes(p.body.tools[Number(body.error.param.match(/\d+/)[0])].type));
      }
      assert.match(local.stderr, /cannot be translated to chat completions/, 'Codex shows the reason');
      proxy.seen.length = 0;
      const cloud = await runCodex(`${proxy.url}/v1`, 'overflow', 'hello', { defaultTools: true });
      assert.equal(cloud.code, 0, cloud.stderr.slice(-2000));
      assert.match(cloud.stdout, /hello/);
      const posts = proxy.seen.filter((s) => s.method === 'POST');
      assert.equal(posts.length, 1);
      assert.equal(posts[0].backend, 'cloud');
      await checkAnswer(posts[0].status, posts[0].contentType, posts[0].text);
      assert.ok(posts[0].body.tools.some((t) => t.type === 'web_search'), 'the hosted tool went to the cloud whole');
    } finally {
      await proxy.stop();
    }
  }));
});
