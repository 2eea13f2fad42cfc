// llmsim fault injection seen through the official SDKs: error statuses,
// Retry-After, latency, hang, close after k chunks, malformed JSON / SSE,
// exit, rpm / tpm limits; the /admin/faults API itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { getJSON, openai, postFaults, sim, stats, user, waitStats } from './llmsim_lib.mjs';

const chat = (c, extra = {}) => c.chat.completions.create({ model: 'm', messages: user('hi'), max_tokens: 3, ...extra });
const drain = async (stream) => { const out = []; for await (const ch of stream) out.push(ch); return out; };

test('429 with Retry-After through the SDK error', async (t) => {
  const s = await sim(t, ['--error-rate', '1', '--error-status', '429', '--retry-after-s', '3']);
  await assert.rejects(chat(openai(s)), (e) => {
    assert.ok(e instanceof OpenAI.RateLimitError);
    assert.equal(e.status, 429);
    assert.equal(e.headers.get('retry-after'), '3');
    assert.equal(e.code, 'rate_limit_exceeded');
    return true;
  });
  const st = await stats(s);
  assert.equal(st.status['429'], 1);
  assert.equal(st.served, 0);
});

test('each 5xx status, set at run time, in the OpenAI error shape', async (t) => {
  const s = await sim(t);
  const c = openai(s);
  for (const status of [500, 502, 503, 504, 529]) {
    const r = await postFaults(s, { error_rate: 1.0, error_status: status });
    assert.equal(r.status, 200);
    assert.equal(r.body.error_status, status);
    await assert.rejects(chat(c), (e) => {
      assert.equal(e.status, status);
      assert.ok(e instanceof OpenAI.InternalServerError);
      assert.equal(e.type, 'server_error');
      return true;
    });
  }
  // DELETE clears: served again
  assert.equal((await fetch(`${s.url}/admin/faults`, { method: 'DELETE' })).status, 200);
  const ok = await chat(c);
  assert.equal(ok.choices[0].finish_reason, 'length');
  const st = await stats(s);
  for (const status of ['500', '502', '503', '504', '529', '200']) assert.equal(st.status[status], 1, status);
});

test('faults apply to chat only: /health and /admin answer during an error storm', async (t) => {
  const s = await sim(t, ['--error-rate', '1', '--error-status', '503', '--hang']);
  assert.equal((await getJSON(`${s.url}/health`)).status, 200);
  assert.equal((await getJSON(`${s.url}/v1/models`)).status, 200);
  assert.equal((await getJSON(`${s.url}/admin/stats`)).status, 200);
});

test('/admin/faults: GET shows the set, POST replaces it whole, bad JSON is 400', async (t) => {
  const s = await sim(t, ['--latency-ms', '5', '--rpm', '9']);
  let r = await getJSON(`${s.url}/admin/faults`);
  assert.equal(r.body.latency_ms, 5);
  assert.equal(r.body.rpm, 9);
  r = await postFaults(s, { hang: true });
  assert.equal(r.body.hang, true);
  assert.equal(r.body.latency_ms, 0); // replaced, not merged
  assert.equal(r.body.rpm, 0);
  assert.equal(r.body.malformed, null);
  r = await postFaults(s, '{"error_rate": ');
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /invalid JSON/);
  r = await postFaults(s, { error_rate: 3 });
  assert.equal(r.status, 400);
  assert.match(r.body.error.message, /error_rate/);
  r = await getJSON(`${s.url}/admin/faults`);
  assert.equal(r.body.hang, true); // a refused POST changes nothing
});

test('latency before the first byte', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--latency-ms', '800']);
  const t0 = Date.now();
  const p = chat(openai(s));
  // while delayed, the request neither holds a slot nor has an answer
  const st = await waitStats(s, (x) => x.delayed === 1, 'the request to be delayed');
  assert.equal(st.in_flight, 0);
  await p;
  assert.ok(Date.now() - t0 >= 800, 'answered before the added latency');
});

test('hang: the client times out, llmsim notices it left', async (t) => {
  const s = await sim(t, ['--hang']);
  const c = openai(s, { timeout: 300 });
  await assert.rejects(chat(c), (e) => e instanceof OpenAI.APIConnectionTimeoutError);
  const st = await waitStats(s, (x) => x.aborted === 1 && x.hanging === 0, 'the hung request to be counted aborted');
  assert.equal(st.served, 0);
});

test('close after k chunks: the SDK stream errors after k tokens', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--close-after-chunks', '2']);
  const got = [];
  await assert.rejects(async () => {
    for await (const ch of await chat(openai(s), { max_tokens: 10, stream: true })) got.push(ch);
  });
  assert.equal(got.length, 1 + 2); // role chunk + 2 token chunks, then the connection closed
  const st = await waitStats(s, (x) => x.closed_by_fault === 1 && x.in_flight === 0, 'the close');
  assert.equal(st.served, 0);
  // a stream shorter than k completes normally
  const ok = await drain(await chat(openai(s), { max_tokens: 2, stream: true }));
  assert.equal(ok.at(-1).choices[0].finish_reason, 'length');
});

test('malformed json: non-streaming body and stream chunk make the SDK throw', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--malformed', 'json']);
  const c = openai(s);
  await assert.rejects(chat(c), SyntaxError);
  await assert.rejects(drain(await chat(c, { stream: true })), SyntaxError);
  const raw = await getJSON(`${s.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: user('x') }) });
  assert.equal(raw.status, 200);
  assert.equal(typeof raw.body, 'string'); // did not parse
});

test('malformed sse: an event broken over two lines makes the SDK stream throw', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  await postFaults(s, { malformed: 'sse' });
  const got = [];
  await assert.rejects(async () => {
    for await (const ch of await chat(openai(s), { max_tokens: 4, stream: true })) got.push(ch);
  }, SyntaxError);
  assert.equal(got.length, 2); // the role chunk and token 1 arrive intact; token 2 is broken
});

test('--exit-after N: the process exits on the N-th chat request', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--exit-after', '2']);
  const c = openai(s);
  await chat(c);
  await assert.rejects(chat(c), (e) => e instanceof OpenAI.APIConnectionError);
  await s.exited;
  assert.equal(s.proc.exitCode, 1);
});

test('POST /admin/faults {"exit": true}: answered, then the process exits', async (t) => {
  const s = await sim(t);
  const r = await postFaults(s, { exit: true });
  assert.equal(r.status, 200);
  await s.exited;
  assert.equal(s.proc.exitCode, 1);
});

test('rpm limit: 429 with Retry-After once the minute is used up', async (t) => {
  const s = await sim(t, ['--decode-tps', '0', '--rpm', '2']);
  const c = openai(s);
  await chat(c);
  await chat(c);
  await assert.rejects(chat(c), (e) => {
    assert.ok(e instanceof OpenAI.RateLimitError);
    assert.equal(e.type, 'requests');
    assert.ok(Number(e.headers.get('retry-after')) >= 1);
    return true;
  });
});

test('tpm limit: a request over the token budget is refused with type "tokens"', async (t) => {
  const s = await sim(t, ['--decode-tps', '0']);
  await postFaults(s, { tpm: 30 });
  const c = openai(s);
  await chat(c, { max_tokens: 20 }); // 5 prompt + 20 output
  await assert.rejects(chat(c, { max_tokens: 20 }), (e) => e.status === 429 && e.type === 'tokens');
});

test('error rate is seeded: the same seed fails the same requests', async (t) => {
  const run = async () => {
    const s = await sim(t, ['--decode-tps', '0', '--error-rate', '0.5', '--error-status', '503', '--seed', '4']);
    const out = [];
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`${s.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: user('x'), max_tokens: 1 }) });
      await r.arrayBuffer();
      out.push(r.status);
    }
    return out.join(',');
  };
  const a = await run();
  assert.equal(a, await run());
  assert.match(a, /200/);
  assert.match(a, /503/);
});
