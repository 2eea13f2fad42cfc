// Agent and structured-output fields across dialects, through the official
// SDKs: an Anthropic client's output_config.format (what LangChain's
// ChatAnthropic().withStructuredOutput() sends) is response_format for an
// OpenAI-speaking box and goes as it is to an Anthropic backend, and the
// answer is judged against its schema on both; an OpenAI client's
// json_object request is answered by an Anthropic backend (a forced tool of
// any object); translation.unsupported: reject answers a 400 naming the
// field that the only backend cannot carry, drop sends the request without it
// and says so in the decision log and /metrics.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { getJSON, startLlmsim, startSpillway, waitFor } from './lib/harness.mjs';

const ADMIN = 'sk-fields-admin';
const SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

function config(edgeUrl, cloudUrl) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model }
  - { name: claude, tier: cloud, url: "${cloudUrl}", dialect: anthropic, model: claude-model, api_key: "sk-ant-up" }
models:
  - { name: local-only, backends: [edge] }
  - { name: local-drop, backends: [edge], translation: { unsupported: drop } }
  - { name: cloud-only, backends: [claude] }
  - { name: cloud-drop, backends: [claude], translation: { unsupported: drop } }
routing:
  health_interval_ms: 100
pii:
  policy: off
`;
}

const admin = { headers: { authorization: `Bearer ${ADMIN}` } };
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100`)).body.requests;
async function decision(gw, id) {
  let d;
  await waitFor(async () => (d = (await getJSON(`${gw.url}/admin/decisions?n=100`, admin)).body.decisions
    .find((x) => x.request_id === id)), { timeout: 10000, what: `the decision of ${id}` });
  return d;
}

describe('agent fields across dialects', () => {
  let edge, cloud, gw, anth, oai;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-model', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(config(edge.url, cloud.url));
    anth = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
    oai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await gw?.stop(); await edge?.stop(); await cloud?.stop(); });

  // The echo of a JSON text is that JSON: one that follows the schema and one that does not.
  const OK = '{"city":"Utrecht"}';
  const BAD = '{"city":7}';
  const structured = (model, text, stream = false) => anth.messages.create({
    model, max_tokens: 64, stream, messages: [{ role: 'user', content: text }],
    output_config: { format: { type: 'json_schema', schema: SCHEMA } },
  }).withResponse();

  test('output_config.format to an OpenAI box: response_format json_schema, the answer judged', async () => {
    const { data, response } = await structured('local-only', OK);
    assert.equal(data.content[0].text, OK);
    const got = (await received(edge)).at(-1).body;
    assert.deepEqual(got.response_format, { type: 'json_schema', json_schema: { name: 'output', schema: SCHEMA } });
    assert.equal(got.output_config, undefined);
    assert.equal((await decision(gw, response.headers.get('x-request-id'))).contract, 'ok');
    const bad = await structured('local-only', BAD);
    assert.equal((await decision(gw, bad.response.headers.get('x-request-id'))).contract, 'violation');
  });

  test('output_config.format to an Anthropic backend: as it is, the text judged, whole and streamed', async () => {
    const { data, response } = await structured('cloud-only', OK);
    assert.equal(data.content[0].text, OK);
    assert.deepEqual((await received(cloud)).at(-1).body.output_config, { format: { type: 'json_schema', schema: SCHEMA } });
    assert.equal((await decision(gw, response.headers.get('x-request-id'))).contract, 'ok');
    const bad = await structured('cloud-only', BAD);
    assert.equal((await decision(gw, bad.response.headers.get('x-request-id'))).contract, 'violation');
    const s = await structured('cloud-only', BAD, true);
    let text = '';
    for await (const ev of s.data) if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    assert.equal(text, BAD);
    assert.equal((await decision(gw, s.response.headers.get('x-request-id'))).contract, 'violation');
  });

  test('an OpenAI json_object request is answered by an Anthropic backend, whole and streamed', async () => {
    const r = await oai.chat.completions.create({
      model: 'cloud-only', max_tokens: 64, response_format: { type: 'json_object' },
      messages: [{ role: 'user', content: '{"answer":"yes"}' }],
    });
    assert.deepEqual(JSON.parse(r.choices[0].message.content), { answer: 'yes' });
    assert.equal(r.choices[0].finish_reason, 'stop');
    const got = (await received(cloud)).at(-1).body;
    assert.equal(got.tool_choice.type, 'tool');
    assert.deepEqual(got.tools[0].input_schema, { type: 'object' });
    const s = await oai.chat.completions.create({
      model: 'cloud-only', max_tokens: 64, stream: true, response_format: { type: 'json_object' },
      messages: [{ role: 'user', content: '{"answer":"no"}' }],
    });
    let text = '';
    for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
    assert.deepEqual(JSON.parse(text), { answer: 'no' });
  });

  test('translation.unsupported: reject is a 400 naming the field, drop leaves it out and says so', async () => {
    const body = {
      max_tokens: 64, messages: [{ role: 'user', content: 'hello' }],
      thinking: { type: 'enabled', budget_tokens: 2048 },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    };
    await assert.rejects(anth.messages.create({ model: 'local-only', ...body }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /context_management/);
      return true;
    });
    const { data, response } = await anth.messages.create({ model: 'local-drop', ...body }).withResponse();
    assert.equal(data.content[0].text, 'hello');
    const got = (await received(edge)).at(-1).body;
    assert.equal(got.context_management, undefined);
    assert.equal(got.reasoning_effort, 'low');      // thinking carried as the effort
    const d = await decision(gw, response.headers.get('x-request-id'));
    assert.deepEqual(d.dropped, ['context_management']);
    const m = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(m, /spillway_translation_dropped_total\{field="context_management"\} 1/);
  });

  test('an OpenAI client\'s fields an Anthropic backend cannot carry: a 400 under reject, left out under drop', async () => {
    const body = { max_tokens: 64, reasoning_effort: 'low', seed: 7, messages: [{ role: 'user', content: 'hi there' }] };
    await assert.rejects(oai.chat.completions.create({ model: 'cloud-only', ...body }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /reasoning_effort|seed/);
      return true;
    });
    const { data, response } = await oai.chat.completions.create({ model: 'cloud-drop', ...body }).withResponse();
    assert.equal(data.choices[0].message.content, 'hi there');
    const got = (await received(cloud)).at(-1).body;
    assert.equal(got.reasoning_effort, undefined);
    assert.equal(got.seed, undefined);
    const d = await decision(gw, response.headers.get('x-request-id'));
    assert.deepEqual(d.dropped, ['reasoning_effort', 'seed']);
  });
});
