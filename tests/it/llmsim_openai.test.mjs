// llmsim, OpenAI dialect, through the official `openai` SDK: non-streaming and
// streaming answers field by field, models list, llama.cpp extras, echo,
// request validation, the received-requests evidence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { getJSON, openai, readSSE, sim, stats, user } from './llmsim_lib.mjs';

test('non-streaming chat completion with usage', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  const c = openai(s);
  const r = await c.chat.completions.create({ model: 'gpt-test', messages: user('hello there'), max_tokens: 5 });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(typeof r.created, 'number');
  assert.equal(r.model, 'gpt-test');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.choices[0].message.content.split(' ').length, 5); // lorem: one word per token
  assert.equal(r.choices[0].finish_reason, 'length');
  // ceil(11 bytes / 4) + 4 per message
  assert.deepEqual(
    { p: r.usage.prompt_tokens, c: r.usage.completion_tokens, t: r.usage.total_tokens },
    { p: 7, c: 5, t: 12 },
  );
  const st = await stats(s);
  assert.equal(st.served, 1);
  assert.equal(st.status['200'], 1);
});

test('the same seed gives the same answer; the model defaults to --model', async (t) => {
  const a = await sim(t, ['--decode-tps', '0', '--seed', '9']);
  const b = await sim(t, ['--decode-tps', '0', '--seed', '9']);
  const body = { messages: user('x') };
  const ra = await getJSON(`${a.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body) });
  const rb = await getJSON(`${b.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body) });
  assert.equal(ra.body.model, 'sim-model');
  assert.equal(ra.body.choices[0].finish_reason, 'stop'); // no max_tokens: drawn length
  assert.ok(ra.body.usage.completion_tokens >= 1 && ra.body.usage.completion_tokens <= 128);
  assert.equal(ra.body.choices[0].message.content, rb.body.choices[0].message.content);
});

test('streaming: role chunk, one chunk per token, finish_reason, usage chunk', async (t) => {
  const s = await sim(t, ['--decode-tps', '200']);
  const c = openai(s);
  const stream = await c.chat.completions.create({
    model: 'gpt-test', messages: user('count please'), max_tokens: 6, stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  assert.equal(chunks.length, 1 + 6 + 1 + 1);
  for (const ch of chunks) {
    assert.equal(ch.object, 'chat.completion.chunk');
    assert.equal(ch.id, chunks[0].id);
    assert.equal(ch.model, 'gpt-test');
  }
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const tokens = chunks.slice(1, 7).map((ch) => ch.choices[0].delta.content);
  assert.ok(tokens.every((x) => typeof x === 'string' && x.length > 0));
  for (const ch of chunks.slice(0, 7)) assert.equal(ch.choices[0].finish_reason, null);
  assert.equal(chunks[7].choices[0].finish_reason, 'length');
  assert.deepEqual(chunks[8].choices, []);
  assert.equal(chunks[8].usage.completion_tokens, 6);
  assert.equal(chunks[8].usage.prompt_tokens, 3 + 4);
  assert.equal(chunks[8].usage.total_tokens, 13);
});

test('streaming on the wire: text/event-stream, [DONE] last, no usage unless asked', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: user('hi'), max_tokens: 3, stream: true }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const evs = await readSSE(res);
  assert.equal(evs.length, 1 + 3 + 1 + 1);
  assert.equal(evs.at(-1).data, '[DONE]');
  for (const e of evs.slice(0, -1)) assert.ok(!('usage' in JSON.parse(e.data)) || JSON.parse(e.data).usage == null);
});

test('echo reply: the last user message cut to max_tokens at 4 bytes a token, UTF-8 intact', async (t) => {
  const s = await sim(t, ['--reply', 'echo', '--decode-tps', '0']);
  const c = openai(s);
  const text = 'héllo wörld, this is an echo';
  let r = await c.chat.completions.create({
    model: 'm', messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: text }],
  });
  assert.equal(r.choices[0].message.content, text);
  assert.equal(r.choices[0].finish_reason, 'stop');
  r = await c.chat.completions.create({ model: 'm', messages: user(text), max_tokens: 2 });
  assert.equal(r.choices[0].message.content, 'héllo w'); // 'hél' (4 bytes) + 'lo w'
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 2);
  // streamed, the pieces join to the same text
  const stream = await c.chat.completions.create({ model: 'm', messages: user(text), stream: true });
  let joined = '';
  for await (const ch of stream) joined += ch.choices[0]?.delta?.content ?? '';
  assert.equal(joined, text);
});

test('models list, /health, /props, /metrics', async (t) => {
  const s = await sim(t, ['--model', 'llama-3-8b', '--slots', '3']);
  const c = openai(s);
  const ids = [];
  for await (const m of c.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['llama-3-8b']);
  const h = await getJSON(`${s.url}/health`);
  assert.equal(h.status, 200);
  assert.deepEqual(h.body, { status: 'ok' });
  const p = await getJSON(`${s.url}/props`);
  assert.equal(p.body.total_slots, 3);
  const m = await fetch(`${s.url}/metrics`);
  const txt = await m.text();
  assert.match(txt, /^# TYPE llamacpp:requests_processing gauge$/m);
  assert.match(txt, /^llamacpp:requests_processing 0$/m);
  assert.match(txt, /^llamacpp:requests_deferred 0$/m);
});

test('invalid requests: 400 in the OpenAI error shape', async (t) => {
  const s = await sim(t);
  const c = openai(s);
  await assert.rejects(c.chat.completions.create({ model: 'm', messages: [] }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.status, 400);
    assert.equal(e.type, 'invalid_request_error');
    return true;
  });
  const r = await getJSON(`${s.url}/v1/chat/completions`, { method: 'POST', body: '{not json' });
  assert.equal(r.status, 400);
  assert.equal(typeof r.body.error.message, 'string');
  assert.equal(r.body.error.param, null);
  const nf = await getJSON(`${s.url}/v1/messages`, { method: 'POST', body: '{}' });
  assert.equal(nf.status, 404);
});

test('/admin/received: last N requests in order with lowercased headers and parsed bodies', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--keep-received', '3']);
  const c = openai(s, { defaultHeaders: { 'X-Trace-Id': 'abc' } });
  for (const w of ['one', 'two', 'three', 'four']) await c.chat.completions.create({ model: 'm', messages: user(w), max_tokens: 1 });
  await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', body: 'raw, not json' });
  let r = await getJSON(`${s.url}/admin/received`);
  assert.equal(r.body.requests.length, 3); // bounded by --keep-received
  r = await getJSON(`${s.url}/admin/received?n=2`);
  const [a, b] = r.body.requests;
  assert.equal(a.method, 'POST');
  assert.equal(a.path, '/v1/chat/completions');
  assert.equal(a.headers['x-trace-id'], 'abc');
  assert.equal(a.headers.authorization, 'Bearer sk-test');
  assert.deepEqual(a.body.messages, user('four'));
  assert.equal(b.body, 'raw, not json');
  // health checks and admin calls are not recorded
  await fetch(`${s.url}/health`);
  r = await getJSON(`${s.url}/admin/received?n=1`);
  assert.equal(r.body.requests[0].body, 'raw, not json');
  assert.equal((await fetch(`${s.url}/admin/received`, { method: 'DELETE' })).status, 200);
  r = await getJSON(`${s.url}/admin/received`);
  assert.deepEqual(r.body.requests, []);
});

test('command line: --help, --version, bad flags exit 2', async () => {
  const { spawnSync } = await import('node:child_process');
  const { BUILD } = await import('./lib/harness.mjs');
  const bin = `${BUILD}/llmsim`;
  const h = spawnSync(bin, ['--help']);
  assert.equal(h.status, 0);
  for (const f of ['--slots', '--decode-tps', '--error-rate', '--close-after-chunks', '--exit-after', '--rpm', '--tpm']) {
    assert.ok(h.stdout.toString().includes(f), f);
  }
  assert.match(spawnSync(bin, ['--version']).stdout.toString(), /^llmsim \d/);
  for (const args of [['--nope'], ['--slots', '0'], ['--dialect', 'x'], ['--port']]) {
    const r = spawnSync(bin, args);
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr.toString(), /llmsim: /);
  }
});
