// Shared by the Responses API client tests (clients_responses, clients_codex):
// the gateway they run through, and a record of every answer the clients got,
// each validated against the official spec's schemas (../responses_lib.mjs).
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway } from './harness.mjs';
import { ADMIN, gatewayYaml } from './gateway.mjs';
import { assertEvents, assertResponse, assertSchema, rawEvents } from '../responses_lib.mjs';

export { ADMIN };

// Three llmsim processes in echo mode (and their scripted tool calls, see
// docs/llmsim.md) behind one gateway:
//   edge    local, chat completions (llama.cpp-like), one slot: model local-chat
//   edge-r  local, the Responses API natively (vLLM-like):      model local-responses
//   cloud   cloud, the Responses API natively (OpenAI-like)
// and the model "overflow" over edge and cloud: while edge's slot is held
// (lib/hold.mjs) a request that may leave goes to the cloud.
export async function responsesGateway(track, { routing = '' } = {}) {
  const sim = (model) => track(startLlmsim(['--model', model, '--reply', 'echo', '--decode-tps', '0']));
  const edge = await sim('edge-model');
  const edgeR = await sim('edge-r-model');
  const cloud = await sim('cloud-model');
  const gw = await track(startSpillway(gatewayYaml({
    backends: [
      { name: 'edge', tier: 'local', url: edge.url, model: 'edge-model', slots: { raw: 1 } },
      { name: 'edge-r', tier: 'local', url: edgeR.url, model: 'edge-r-model', dialect: 'responses' },
      { name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model', dialect: 'responses' },
    ],
    models: [
      { name: 'local-chat', backends: ['edge'] },
      { name: 'local-responses', backends: ['edge-r'] },
      { name: 'overflow', backends: ['edge', 'cloud'] },
    ],
    routing: `  ttft_budget_ms: 300\n${routing}`,
  })));
  return { edge, edgeR, cloud, gw };
}

// Checks one answer of POST /responses as the client got it: a stream's
// events, a whole Response, or an error in OpenAI's shape. Resolves to what
// it read.
export async function checkAnswer(status, contentType, text) {
  if (status !== 200) {
    const body = JSON.parse(text);
    assertSchema('Error', body.error);
    return { kind: 'error', body };
  }
  if (/text\/event-stream/.test(contentType || '')) {
    const events = await rawEvents(new Response(text));
    assertEvents(events);
    return { kind: 'stream', events };
  }
  const body = JSON.parse(text);
  assertResponse(body);
  return { kind: 'response', body };
}

// A fetch for the SDKs (openai, @openai/agents through its client,
// @ai-sdk/openai): every answer of a POST .../responses is read from a clone
// and validated; answers[] keeps { backend, reason, status, kind, ... } in
// order. settle() waits for the clones and throws the first invalid one.
export function teeFetch() {
  const answers = [];
  const pending = [];
  const tee = async (input, init) => {
    const res = await fetch(input, init);
    const url = typeof input === 'string' ? input : input.url ?? String(input);
    const method = init?.method ?? input.method ?? 'GET';
    if (method === 'POST' && /\/responses$/.test(new URL(url).pathname)) {
      const rec = {
        status: res.status, backend: res.headers.get('x-spillway-backend'),
        reason: res.headers.get('x-spillway-reason'), requestId: res.headers.get('x-request-id'),
        request: typeof init?.body === 'string' ? JSON.parse(init.body) : null,
      };
      answers.push(rec);
      const copy = res.clone();
      pending.push(copy.text().then(async (text) => Object.assign(rec, await checkAnswer(res.status, res.headers.get('content-type'), text))));
    }
    return res;
  };
  return {
    fetch: tee,
    answers,
    async settle() {
      const n = pending.length;
      await Promise.all(pending);
      assert.equal(pending.length, n, 'no request started while settling');
      return answers;
    },
  };
}
