// llmsim serves the OpenAI Responses API (POST /v1/responses) as vLLM does,
// through the official `openai` SDK: whole and streamed answers, the typed
// event sequence with its sequence numbers, a forced function tool, usage,
// and the faults (error status, mid-stream error, malformed answers). Every
// object and event validates against the official spec's schemas
// (tests/spec/openai_responses.json, the spec at its pinned commit, checked
// by responses_lib.mjs; tests/unit/test_responses_schema.c does the same
// for the translator with Spillway's own validator).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getJSON, openai, postFaults, readSSE, sim, stats } from './llmsim_lib.mjs';
import { SPEC, assertEvents, assertResponse } from './responses_lib.mjs';

const SPEC_COMMIT = 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3';

test('the schema file is the pinned spec', () => {
  assert.equal(SPEC.commit, SPEC_COMMIT);
  assert.ok(SPEC.components.schemas.Response && SPEC.components.schemas.ResponseStreamEvent);
});

test('non-streamed response: message item, usage in the Responses shape', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--reply', 'echo']);
  const r = await openai(s).responses.create({
    model: 'gpt-test', instructions: 'be brief', input: 'hello there', max_output_tokens: 100,
    metadata: { k: 'v' },
  });
  assertResponse(r);
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.equal(r.model, 'gpt-test');
  assert.equal(r.instructions, 'be brief');
  assert.deepEqual(r.metadata, { k: 'v' });
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output_text, 'hello there'); // the SDK's join of output_text parts
  // ceil((8 + 11 bytes) / 4) + 4 per message (instructions and input)
  assert.deepEqual(r.usage, {
    input_tokens: 13, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: 3, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 16,
  });
  const rec = await getJSON(`${s.url}/admin/received?n=1`);
  assert.equal(rec.body.requests[0].path, '/v1/responses');
});

test('max_output_tokens cuts the answer: status incomplete', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  const r = await openai(s).responses.create({ model: 'm', input: [{ role: 'user', content: 'x' }], max_output_tokens: 4 });
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.output_tokens, 4);
  assert.equal(r.output_text.split(' ').length, 4); // lorem: one word per token
});

test('streamed: the typed event sequence, one delta per token, numbered from 0', async (t) => {
  const s = await sim(t, ['--decode-tps', '500', '--reply', 'echo']);
  const stream = await openai(s).responses.create({ model: 'm', input: 'abcdefghij', stream: true });
  const events = [];
  for await (const e of stream) events.push(e);
  assertEvents(events);
  assert.deepEqual(events.map((e) => e.type), [
    'response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
    'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed',
  ]);
  assert.equal(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''), 'abcdefghij');
  const done = events.at(-1).response;
  assert.equal(done.status, 'completed');
  assert.equal(done.output[0].content[0].text, 'abcdefghij');
  assert.equal(done.usage.output_tokens, 3);
  assert.equal(done.usage.input_tokens, 3 + 4);
});

test('streamed with the SDK helper: finalResponse', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--reply', 'echo']);
  const stream = openai(s).responses.stream({ model: 'm', input: 'stream me' });
  const r = await stream.finalResponse();
  assert.equal(r.output_text, 'stream me');
});

test('a forced function tool: a function_call item, whole and streamed', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--reply', 'echo']);
  const c = openai(s);
  const body = {
    model: 'm', input: '{"city":"Oslo"}',
    tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' }, strict: false }],
    tool_choice: { type: 'function', name: 'get_weather' },
  };
  const r = await c.responses.create(body);
  assertResponse(r);
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'function_call');
  assert.equal(r.output[0].name, 'get_weather');
  assert.deepEqual(JSON.parse(r.output[0].arguments), { city: 'Oslo' });
  const events = [];
  for await (const e of await c.responses.create({ ...body, stream: true })) events.push(e);
  assertEvents(events);
  const args = events.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join('');
  assert.equal(args, '{"city":"Oslo"}');
  assert.equal(events.find((e) => e.type === 'response.function_call_arguments.done').arguments, args);
  // the tool's output goes back as a function_call_output item
  const next = await c.responses.create({
    model: 'm', tools: body.tools,
    input: [{ role: 'user', content: 'weather?' }, { type: 'function_call', call_id: r.output[0].call_id, name: 'get_weather', arguments: r.output[0].arguments },
      { type: 'function_call_output', call_id: r.output[0].call_id, output: '12C' }, { role: 'user', content: 'thanks' }],
  });
  assert.equal(next.output_text, 'thanks');
});

test('faults: an error status in the OpenAI shape, a mid-stream response.failed, malformed answers', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  const c = openai(s);
  await postFaults(s, { error_rate: 1, error_status: 503 });
  await assert.rejects(c.responses.create({ model: 'm', input: 'x' }), (e) => e.status === 503);
  await postFaults(s, { stream_error_after: 2 });
  const res = await fetch(`${s.url}/v1/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', input: 'x', max_output_tokens: 6, stream: true }),
  });
  const raw = (await readSSE(res)).map((e) => ({ name: e.event, ...JSON.parse(e.data) }));
  for (const e of raw) assert.equal(e.name, e.type);
  assertEvents(raw);
  assert.equal(raw.filter((e) => e.type === 'response.output_text.delta').length, 2);
  assert.equal(raw.at(-1).type, 'response.failed');
  assert.equal(raw.at(-1).response.status, 'failed');
  assert.equal(raw.at(-1).response.error.code, 'server_error');
  assert.equal((await stats(s)).errored_by_fault, 1);
  await postFaults(s, { malformed: 'json' });
  await assert.rejects(c.responses.create({ model: 'm', input: 'x' }), SyntaxError);
  await postFaults(s, { malformed: 'sse' });
  await assert.rejects(async () => {
    for await (const e of await c.responses.create({ model: 'm', input: 'x', max_output_tokens: 4, stream: true })) void e;
  }, SyntaxError);
});

test('invalid requests: 400 in the OpenAI error shape; /v1/responses only in the openai dialect', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  const r = await getJSON(`${s.url}/v1/responses`, { method: 'POST', body: JSON.stringify({ model: 'm' }) });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /input/);
  const a = await sim(t, ['--decode-tps', '0', '--dialect', 'anthropic']);
  const n = await getJSON(`${a.url}/v1/responses`, { method: 'POST', body: JSON.stringify({ model: 'm', input: 'x' }) });
  assert.equal(n.status, 404);
});
