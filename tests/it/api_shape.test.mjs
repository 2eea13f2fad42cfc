// Answers in the shape each API's clients expect, with the official SDKs:
// GET /v1/models and GET /v1/models/{id} in OpenAI's shape, and in
// Anthropic's (paging fields, created_at) when the request carries
// anthropic-version; an unknown model id is a 404 in the caller's error shape
// that no log line records; a chat answer translated from an Anthropic
// backend carries message.refusal and choices[].logprobs (null), streamed too.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startLlmsim, startSpillway, getJSON } from './lib/harness.mjs';

const KEY = 'sk-shape';
const UNKNOWN = 'zq-no-such-model-41c7';
const MODELS = ['chat', 'claude', 'org/slash-model'];
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const config = (edge, claude) => `
listen: "127.0.0.1:0"
keys:
  - { name: app, key: "${KEY}" }
backends:
  - { name: edge, tier: local, url: "${edge}", model: edge-model }
  - { name: claude, tier: cloud, url: "${claude}", model: claude-upstream, dialect: anthropic, api_key: "sk-ant-up" }
models:
  - { name: chat, backends: [edge] }
  - { name: claude, backends: [claude] }
  - { name: "org/slash-model", backends: [edge] }
pii: { policy: "off" }
`;

describe('API shapes', () => {
  let edge, claude, gw, oa, an;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    claude = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(config(edge.url, claude.url));
    oa = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEY, maxRetries: 0 });
    an = new Anthropic({ baseURL: gw.url, apiKey: KEY, maxRetries: 0 });
  });
  after(async () => { await gw?.stop(); await edge?.stop(); await claude?.stop(); });

  test('OpenAI client: models.list and models.retrieve, a name with a slash, an unknown id is 404 model_not_found', async () => {
    const list = [];
    for await (const m of oa.models.list()) list.push(m);
    assert.deepEqual(list.map((m) => m.id), MODELS);
    const { data: m, response } = await oa.models.retrieve('chat').withResponse();
    assert.deepEqual(Object.keys(m).sort(), ['created', 'id', 'object', 'owned_by']);
    assert.equal(m.id, 'chat');
    assert.equal(m.object, 'model');
    assert.equal(m.created, list[0].created);
    assert.ok(Number.isInteger(m.created) && m.created > 0);
    assert.equal(m.owned_by, 'spillway');
    assert.match(response.headers.get('x-request-id'), /^sw-/);
    assert.equal((await oa.models.retrieve('org/slash-model')).id, 'org/slash-model');
    await assert.rejects(oa.models.retrieve(UNKNOWN), (e) => {
      assert.equal(e.status, 404);
      assert.equal(e.error.type, 'invalid_request_error');
      assert.equal(e.error.code, 'model_not_found');
      return true;
    });
    const raw = await getJSON(`${gw.url}/v1/models/${UNKNOWN}`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(raw.status, 404);
    assert.deepEqual(Object.keys(raw.body.error).sort(), ['code', 'message', 'param', 'type']);
    // The id is the client's text: no log line and no decision record carries it.
    assert.ok(!gw.output().includes(UNKNOWN), 'the unknown id is not logged');
  });

  test('GET /v1/models/{id}: no key is 401, POST is 405, a decoded NUL or an over-long id is 404', async () => {
    assert.equal((await getJSON(`${gw.url}/v1/models/chat`)).status, 401);
    const post = await getJSON(`${gw.url}/v1/models/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(post.status, 405);
    assert.equal(post.body.error.code, 'method_not_allowed');
    for (const id of ['chat%00x', 'x'.repeat(700)]) {
      const r = await getJSON(`${gw.url}/v1/models/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
      assert.equal(r.status, 404);
      assert.equal(r.body.error.code, 'model_not_found');
    }
    const head = await fetch(`${gw.url}/v1/models/claude`, { method: 'HEAD', headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(head.status, 200);
  });

  test('Anthropic client: models.list in its shape with paging, models.retrieve, unknown id not_found_error', async () => {
    const page = await an.models.list();
    assert.deepEqual(page.data.map((m) => m.id), MODELS);
    for (const m of page.data) {
      assert.deepEqual(Object.keys(m).sort(), ['created_at', 'display_name', 'id', 'type']);
      assert.equal(m.type, 'model');
      assert.equal(m.display_name, m.id);
      assert.match(m.created_at, RFC3339);
    }
    assert.equal(page.has_more, false);
    assert.equal(page.first_id, 'chat');
    assert.equal(page.last_id, 'org/slash-model');
    // One model a page: the SDK walks the pages by after_id.
    const walked = [];
    for await (const m of an.models.list({ limit: 1 })) walked.push(m.id);
    assert.deepEqual(walked, MODELS);
    const first = await an.models.list({ limit: 1 });
    assert.equal(first.has_more, true);
    assert.deepEqual([first.first_id, first.last_id], ['chat', 'chat']);
    const hdr = { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' };
    const before = await getJSON(`${gw.url}/v1/models?before_id=org%2Fslash-model&limit=1`, { headers: hdr });
    assert.deepEqual(before.body, { data: [{ type: 'model', id: 'claude', display_name: 'claude', created_at: page.data[0].created_at }],
      has_more: true, first_id: 'claude', last_id: 'claude' });
    const empty = await getJSON(`${gw.url}/v1/models?after_id=org%2Fslash-model`, { headers: hdr });
    assert.deepEqual(empty.body, { data: [], has_more: false, first_id: null, last_id: null });
    for (const q of ['limit=0', 'limit=x', `after_id=${UNKNOWN}`]) {
      const bad = await getJSON(`${gw.url}/v1/models?${q}`, { headers: hdr });
      assert.equal(bad.status, 400, q);
      assert.equal(bad.body.type, 'error');
      assert.equal(bad.body.error.type, 'invalid_request_error');
    }

    const m = await an.models.retrieve('claude');
    assert.deepEqual(m, { type: 'model', id: 'claude', display_name: 'claude', created_at: page.data[0].created_at });
    await assert.rejects(an.models.retrieve(UNKNOWN), (e) => {
      assert.equal(e.status, 404);
      assert.equal(e.error.type, 'error');
      assert.equal(e.error.error.type, 'not_found_error');
      return true;
    });
    const noKey = await getJSON(`${gw.url}/v1/models`, { headers: { 'anthropic-version': '2023-06-01' } });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error.type, 'authentication_error');
    assert.ok(!gw.output().includes(UNKNOWN), 'the unknown id is not logged');
  });

  test('OpenAI client -> Anthropic backend: message.refusal and choices[].logprobs are null, streamed choices carry logprobs null', async () => {
    const c = await oa.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hello shapes' }], max_tokens: 32 });
    assert.equal(c.choices[0].message.content, 'hello shapes');
    assert.ok('refusal' in c.choices[0].message);
    assert.equal(c.choices[0].message.refusal, null);
    assert.ok('logprobs' in c.choices[0]);
    assert.equal(c.choices[0].logprobs, null);
    const stream = await oa.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hello stream' }], max_tokens: 32, stream: true });
    let text = '';
    let withChoices = 0;
    for await (const ch of stream) {
      for (const choice of ch.choices) {
        withChoices++;
        assert.ok('logprobs' in choice);
        assert.equal(choice.logprobs, null);
        text += choice.delta?.content ?? '';
      }
    }
    assert.equal(text, 'hello stream');
    assert.ok(withChoices >= 2);
  });
});
