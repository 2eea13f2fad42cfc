// Where answers stop, end to end: a local box whose answers mostly stop far
// below their max_tokens. Once the gateway has learned that, a request
// arriving at a full box waits for the slot the running request will likely
// free in time instead of spilling at once (the average service time says
// it would miss the budget); when the slot does not come, it leaves for the
// cloud. Real spillway in front of real llmsim processes, the official openai
// client; every wait is a bounded wait on a condition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { waitFor, getJSON } from './lib/harness.mjs';
import { ADMIN, withProcs, edgeAndCloud } from './lib/gateway.mjs';

const auth = { authorization: `Bearer ${ADMIN}` };

// A streamed request; resolves to what served it and the text.
async function stream(client, content, maxTokens) {
  const { data, response } = await client.chat.completions
    .create({ model: 'chat', stream: true, max_tokens: maxTokens, messages: [{ role: 'user', content }] })
    .withResponse();
  let text = '';
  for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
  return {
    text,
    backend: response.headers.get('x-spillway-backend'),
    reason: response.headers.get('x-spillway-reason'),
    requestId: response.headers.get('x-request-id'),
  };
}

test('a full box whose answers mostly stop early is waited for instead of spilling at once, and left for the cloud when its slot does not come', () => withProcs(async (track) => {
  // Echo answers: as long as the prompt, below max_tokens 4000. 100 tokens/s:
  // the first 5 % of 4000 tokens take 2 s.
  const { edge, gw } = await edgeAndCloud(track, {
    edgeArgs: ['--slots', '1', '--decode-tps', '100', '--reply', 'echo'],
    edge: { slots: 1 },
    routing: '  ttft_budget_ms: 2500\n  request_timeout_ms: 60000',
  });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const words = (n, tag) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

  // 32 answers (the learner's minimum) for max_tokens 4000: 28 short ones,
  // then 4 of 300 words (several hundred tokens), which lift the average
  // output: an average service time over the budget.
  for (let i = 0; i < 32; i++) {
    const r = await stream(client, i < 28 ? 'ok fine' : words(300, `l${i}-`), 4000);
    assert.equal(r.backend, 'edge');
  }
  // One more of 400 words holding the only slot for several seconds.
  const long = stream(client, words(400, 'x'), 4000);
  long.catch(() => {}); // awaited below; a failure before that stops the processes
  const edgeState = async () => (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body
    .backends.find((b) => b.name === 'edge');
  await waitFor(async () => (await edgeState()).in_flight === 1, { what: 'the long answer holding the slot' });

  // Most answers stopped within 5 % of their limit: the running one likely
  // ends within 2 s of its start, so the request waits for the box ...
  const r = await stream(client, 'the waiting one', 50);
  // ... which does not free its slot in time: it leaves for the cloud.
  const log = (await getJSON(`${gw.url}/admin/decisions?n=1000`, { headers: auth })).body.decisions;
  const d = log.find((x) => x.request_id === r.requestId);
  assert.ok(d, 'the decision is logged');
  assert.deepEqual(d.attempts.map((a) => a.backend), ['edge', 'cloud'], JSON.stringify(d.attempts));
  assert.equal(r.backend, 'cloud');
  assert.equal(r.reason, 'overflow');
  const received = (await getJSON(`${edge.url}/admin/received`)).body.requests
    .map((q) => q.body.messages[0].content);
  assert.ok(!received.includes('the waiting one'), 'it never started on the box');
  assert.equal((await long).backend, 'edge');
}));
