// llmsim, Anthropic dialect, through the official `@anthropic-ai/sdk`: the
// message object, the SSE event sequence, models, errors in Anthropic's shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { anthropic, getJSON, postFaults, readSSE, sim, user } from './llmsim_lib.mjs';

const A = ['--dialect', 'anthropic'];

test('non-streaming message', async (t) => {
  const s = await sim(t, [...A, '--decode-tps', '0']);
  const c = anthropic(s);
  const m = await c.messages.create({ model: 'claude-test', max_tokens: 4, system: 'be brief', messages: user('hello') });
  assert.match(m.id, /^msg_/);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, 'claude-test');
  assert.equal(m.content.length, 1);
  assert.equal(m.content[0].type, 'text');
  assert.equal(m.content[0].text.split(' ').length, 4);
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.stop_sequence, null);
  // system (8 bytes) + message (5 bytes): ceil(13/4) + 2*4
  assert.equal(m.usage.input_tokens, 12);
  assert.equal(m.usage.output_tokens, 4);
});

test('echo ends with end_turn when the text is shorter than max_tokens', async (t) => {
  const s = await sim(t, [...A, '--decode-tps', '0', '--reply', 'echo']);
  const m = await anthropic(s).messages.create({ model: 'c', max_tokens: 100, messages: user('short') });
  assert.equal(m.content[0].text, 'short');
  assert.equal(m.stop_reason, 'end_turn');
  assert.equal(m.usage.output_tokens, 2);
});

test('streaming: the SDK sees the full event sequence, one delta per token', async (t) => {
  const s = await sim(t, [...A, '--decode-tps', '200']);
  const c = anthropic(s);
  const stream = await c.messages.create({ model: 'claude-test', max_tokens: 5, messages: user('hi'), stream: true });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta') {
      assert.equal(ev.delta.type, 'text_delta');
      text += ev.delta.text;
    }
    if (ev.type === 'message_start') {
      assert.equal(ev.message.role, 'assistant');
      assert.equal(ev.message.model, 'claude-test');
      assert.equal(ev.message.usage.input_tokens, 5);
    }
    if (ev.type === 'message_delta') {
      assert.equal(ev.delta.stop_reason, 'max_tokens');
      assert.equal(ev.usage.output_tokens, 5);
    }
  }
  assert.deepEqual(types, [
    'message_start', 'content_block_start',
    'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_delta',
    'content_block_stop', 'message_delta', 'message_stop',
  ]);
  assert.equal(text.split(' ').length, 5);
});

test('streaming helper: finalMessage accumulates the same message', async (t) => {
  const s = await sim(t, [...A, '--decode-tps', '0', '--reply', 'echo']);
  const stream = anthropic(s).messages.stream({ model: 'c', max_tokens: 3, messages: user('abcdefghijklmnop') });
  const deltas = [];
  stream.on('text', (d) => deltas.push(d));
  const m = await stream.finalMessage();
  assert.deepEqual(deltas, ['abcd', 'efgh', 'ijkl']);
  assert.equal(m.content[0].text, 'abcdefghijkl');
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.usage.output_tokens, 3);
});

test('on the wire: event names, ping after message_start, text/event-stream', async (t) => {
  const s = await sim(t, [...A, '--decode-tps', '0']);
  const res = await fetch(`${s.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'c', max_tokens: 1, messages: user('x'), stream: true }),
  });
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const evs = await readSSE(res);
  assert.deepEqual(evs.map((e) => e.event), [
    'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
  ]);
  for (const e of evs) assert.equal(JSON.parse(e.data).type, e.event);
});

test('models list and 400 invalid_request_error (max_tokens required)', async (t) => {
  const s = await sim(t, [...A, '--model', 'claude-sim']);
  const c = anthropic(s);
  const ids = [];
  for await (const m of c.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['claude-sim']);
  const r = await getJSON(`${s.url}/v1/messages`, { method: 'POST', body: JSON.stringify({ messages: user('x') }) });
  assert.equal(r.status, 400);
  assert.equal(r.body.type, 'error');
  assert.equal(r.body.error.type, 'invalid_request_error');
  const oa = await getJSON(`${s.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(oa.status, 404);
  assert.equal(oa.body.error.type, 'not_found_error');
});

test('429 rate_limit_error with Retry-After, 529 overloaded_error, through the SDK', async (t) => {
  const s = await sim(t, [...A, '--error-rate', '1', '--error-status', '429', '--retry-after-s', '7']);
  const c = anthropic(s);
  await assert.rejects(c.messages.create({ model: 'c', max_tokens: 1, messages: user('x') }), (e) => {
    assert.ok(e instanceof Anthropic.RateLimitError);
    assert.equal(e.status, 429);
    assert.equal(e.headers.get('retry-after'), '7');
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'rate_limit_error');
    return true;
  });
  await postFaults(s, { error_rate: 1, error_status: 529 });
  await assert.rejects(c.messages.create({ model: 'c', max_tokens: 1, messages: user('x') }), (e) => {
    assert.ok(e instanceof Anthropic.InternalServerError);
    assert.equal(e.status, 529);
    assert.equal(e.error.error.type, 'overloaded_error');
    return true;
  });
  // a stream that fails before its first byte fails the same way
  await assert.rejects(
    (async () => { for await (const _ of await c.messages.create({ model: 'c', max_tokens: 1, messages: user('x'), stream: true })); })(),
    (e) => e.status === 529,
  );
});
