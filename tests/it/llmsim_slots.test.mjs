// llmsim's performance model seen from outside: slots and the FIFO queue,
// queue bound, client aborts (mid-stream, queued, during prefill) freeing the
// slot at once, cold start and unload, /metrics gauges.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { getJSON, openai, sim, stats, user, waitStats } from './llmsim_lib.mjs';

test('--slots 1: a second request is queued until the first finishes', async (t) => {
  const s = await sim(t, ['--slots', '1', '--decode-tps', '20']);
  const c = openai(s);
  const first = c.chat.completions.create({ model: 'm', messages: user('a'), max_tokens: 40 }); // 2 s
  await waitStats(s, (x) => x.in_flight === 1, 'the first request to hold the slot');
  const second = c.chat.completions.create({ model: 'm', messages: user('b'), max_tokens: 2 });
  const st = await waitStats(s, (x) => x.queued === 1, 'the second request to queue');
  assert.equal(st.in_flight, 1);
  assert.equal(st.served, 0);
  const m = await (await fetch(`${s.url}/metrics`)).text();
  assert.match(m, /^llamacpp:requests_processing 1$/m);
  assert.match(m, /^llamacpp:requests_deferred 1$/m);
  await first;
  // the queued one can only have started after the first was served
  const after = await stats(s);
  assert.equal(after.served >= 1, true);
  assert.equal(after.queued, 0);
  await second;
  assert.equal((await stats(s)).served, 2);
});

test('FIFO: queued requests start in arrival order', async (t) => {
  const s = await sim(t, ['--slots', '1', '--decode-tps', '50']);
  const c = openai(s);
  const done = [];
  const go = (name, n) => c.chat.completions.create({ model: 'm', messages: user(name), max_tokens: n }).then(() => done.push(name));
  const ps = [go('a', 100)]; // 2 s: time enough to queue the others behind it
  await waitStats(s, (x) => x.in_flight === 1, 'a to start');
  ps.push(go('b', 1));
  await waitStats(s, (x) => x.queued === 1, 'b to queue');
  ps.push(go('c', 1));
  await waitStats(s, (x) => x.queued === 2, 'c to queue');
  ps.push(go('d', 1));
  await waitStats(s, (x) => x.queued === 3, 'd to queue');
  await Promise.all(ps);
  assert.deepEqual(done, ['a', 'b', 'c', 'd']);
});

test('--queue-max: beyond it, 503', async (t) => {
  const s = await sim(t, ['--slots', '1', '--queue-max', '1', '--decode-tps', '10']);
  const c = openai(s);
  const ctl = new AbortController();
  const a = c.chat.completions.create({ model: 'm', messages: user('a'), max_tokens: 100 }, { signal: ctl.signal }).catch(() => {});
  await waitStats(s, (x) => x.in_flight === 1, 'a to start');
  const b = c.chat.completions.create({ model: 'm', messages: user('b'), max_tokens: 1 }, { signal: ctl.signal }).catch(() => {});
  await waitStats(s, (x) => x.queued === 1, 'b to queue');
  await assert.rejects(c.chat.completions.create({ model: 'm', messages: user('c'), max_tokens: 1 }), (e) => e.status === 503);
  ctl.abort();
  await Promise.all([a, b]);
  await waitStats(s, (x) => x.in_flight === 0 && x.queued === 0, 'both to be dropped');
});

test('client abort mid-stream frees the slot at once: the queued request starts', async (t) => {
  // 10 tokens/s and 1000 tokens: left alone, the first stream would hold the slot 100 s
  const s = await sim(t, ['--slots', '1', '--decode-tps', '10']);
  const c = openai(s);
  const ctl = new AbortController();
  const stream = await c.chat.completions.create(
    { model: 'm', messages: user('long'), max_tokens: 1000, stream: true }, { signal: ctl.signal });
  const it = stream[Symbol.asyncIterator]();
  assert.equal((await it.next()).value.choices[0].delta.role, 'assistant');
  assert.equal(typeof (await it.next()).value.choices[0].delta.content, 'string'); // mid-stream now
  const queued = c.chat.completions.create({ model: 'm', messages: user('next'), max_tokens: 2 });
  await waitStats(s, (x) => x.queued === 1 && x.in_flight === 1, 'the second request to queue');
  ctl.abort();
  const st = await waitStats(s, (x) => x.aborted === 1 && x.queued === 0 && x.in_flight === 1,
    'the abort to be seen and the queued request to start', 2000);
  assert.equal(st.served, 0);
  const r = await queued; // 2 tokens at 10/s: well within the bound below
  assert.equal(r.usage.completion_tokens, 2);
  await waitStats(s, (x) => x.served === 1 && x.in_flight === 0, 'the second request to be served', 2000);
});

test('client abort while queued, and during a long prefill (idle connection), is seen at once', async (t) => {
  const s = await sim(t, ['--slots', '1', '--decode-tps', '10', '--prefill-ms-per-token', '1000']);
  const c = openai(s);
  const a = new AbortController();
  const b = new AbortController();
  // "x": 5 prompt tokens → 5 s of prefill, nothing written to the connection meanwhile
  const pa = c.chat.completions.create({ model: 'm', messages: user('x'), max_tokens: 1 }, { signal: a.signal }).catch((e) => e);
  await waitStats(s, (x) => x.in_flight === 1, 'a to start');
  const pb = c.chat.completions.create({ model: 'm', messages: user('y'), max_tokens: 1, stream: true }, { signal: b.signal }).catch((e) => e);
  await waitStats(s, (x) => x.queued === 1, 'b to queue');
  b.abort();
  await waitStats(s, (x) => x.aborted === 1 && x.queued === 0 && x.in_flight === 1, 'the queued abort', 2000);
  a.abort();
  await waitStats(s, (x) => x.aborted === 2 && x.in_flight === 0, 'the abort during prefill', 2000);
  assert.ok((await pa) instanceof OpenAI.APIUserAbortError);
  assert.ok((await pb) instanceof OpenAI.APIUserAbortError);
});

test('prefill and decode timing: a stream takes prefill + n / tps', async (t) => {
  // 7 prompt tokens at 20 ms each, then 5 tokens at 25 tokens/s (40 ms apart)
  const s = await sim(t, ['--prefill-ms-per-token', '20', '--decode-tps', '25']);
  const c = openai(s);
  const t0 = Date.now();
  const stream = await c.chat.completions.create({ model: 'm', messages: user('hello world!'), max_tokens: 5, stream: true });
  const times = [];
  for await (const ch of stream) if (ch.choices[0]?.delta?.content) times.push(Date.now() - t0);
  const prefill = (3 + 4) * 20; // ceil(12/4) + 4 = 7 prompt tokens
  assert.equal(times.length, 5);
  // lower bounds only: a token never comes before its due time
  for (let k = 1; k <= 5; k++) assert.ok(times[k - 1] >= prefill + k * 40 - 5, `token ${k} at ${times[k - 1]} ms`);
});

test('cold start: /health 503 while unloaded and loading, the first request waits, unload makes it cold again', async (t) => {
  const s = await sim(t, ['--cold-start-ms', '1000', '--decode-tps', '0']);
  let h = await getJSON(`${s.url}/health`);
  assert.equal(h.status, 503);
  assert.equal(h.body.error.code, 503);
  assert.equal(h.body.error.message, 'Loading model');
  assert.equal((await stats(s)).loaded, false);
  const c = openai(s);
  const t0 = Date.now();
  const p = c.chat.completions.create({ model: 'm', messages: user('x'), max_tokens: 1 });
  await waitStats(s, (x) => x.loading === true, 'the load to start');
  assert.equal((await getJSON(`${s.url}/health`)).status, 503);
  await p;
  assert.ok(Date.now() - t0 >= 1000, 'answered before the model loaded');
  h = await getJSON(`${s.url}/health`);
  assert.equal(h.status, 200);
  assert.equal((await stats(s)).loaded, true);
  // loaded: no wait
  await c.chat.completions.create({ model: 'm', messages: user('x'), max_tokens: 1 });
  const u = await getJSON(`${s.url}/admin/unload`, { method: 'POST' });
  assert.equal(u.status, 200);
  assert.equal((await getJSON(`${s.url}/health`)).status, 503);
  assert.equal((await stats(s)).loaded, false);
  const t1 = Date.now();
  await c.chat.completions.create({ model: 'm', messages: user('x'), max_tokens: 1 });
  assert.ok(Date.now() - t1 >= 1000, 'the reload was skipped');
});

test('/admin/unload without --cold-start-ms is a 200 no-op', async (t) => {
  const s = await sim(t);
  assert.equal((await getJSON(`${s.url}/admin/unload`, { method: 'POST' })).status, 200);
  assert.equal((await getJSON(`${s.url}/health`)).status, 200);
});
