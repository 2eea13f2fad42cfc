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
import { getJSON, startLlmsim } from './lib/harness.mjs';
import { recordingProxy, runCodex } from './lib/codex.mjs';
import { withProcs } from './lib/gateway.mjs';
import { holdLocal } from './lib/hold.mjs';
import { SPEC } from './responses_lib.mjs';
import { ADMIN, checkAnswer, responsesGateway } from './lib/responses_clients.mjs';

const SPEC_COMMIT = 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3';
const MARK = 'spillway-codex-7f3a';
const PROMPT = `llmsim:call exec_command {"cmd":"echo ${MARK}"}`;

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
