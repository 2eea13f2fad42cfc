// The real clients people run against the OpenAI Responses API, through the
// gateway's POST /v1/responses: the official `openai` SDK (responses.create,
// the .stream helper, previous_response_id, a function tool round trip,
// text.format), the OpenAI Agents SDK with its default API, and the Vercel AI
// SDK's default openai() provider (generateText, streamText, generateObject,
// tools). Each runs through a local chat-completions backend (the gateway
// translates), a local backend that speaks the Responses API natively, and
// the cloud under overflow (the local box held busy). Every answer and every
// streamed event the clients got validates against the official spec's
// schemas (tests/spec/openai_responses.json at SPEC_COMMIT). The same
// scenarios first run against llmsim directly: the clients' side alone.
// The Codex CLI has its own file (clients_codex.test.mjs).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { generateObject, generateText, stepCountIs, streamText, tool as aiTool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { getJSON, startLlmsim } from './lib/harness.mjs';
import { withProcs } from './lib/gateway.mjs';
import { holdLocal } from './lib/hold.mjs';
import { SPEC } from './responses_lib.mjs';
import { ADMIN, responsesGateway, teeFetch } from './lib/responses_clients.mjs';

const SPEC_COMMIT = 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3';

// The Agents SDK sends traces to OpenAI unless told not to.
setTracingDisabled(true);

// The openai SDK the Agents SDK depends on (the current major, 7.x; the
// top-level `openai` of the other tests is 6.x): the Agents scenario builds
// its client with it, as the SDK does by itself, and the openai scenario runs
// with both.
const agentsOpenAI = createRequire(import.meta.resolve('@openai/agents-openai'))('openai');
const OpenAI7 = agentsOpenAI.OpenAI ?? agentsOpenAI.default;

test('the openai SDKs are the majors named here', () => {
  assert.match(new OpenAI({ apiKey: 'x' }).getUserAgent(), /^OpenAI\/JS 6\./);
  assert.match(new OpenAI7({ apiKey: 'x' }).getUserAgent(), /^OpenAI\/JS 7\./);
});

const received = async (sim, n = 1) => (await getJSON(`${sim.url}/admin/received?n=${n}`)).body.requests;
const weather = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
const CALL = 'llmsim:call get_weather {"city":"Oslo"}'; // llmsim's scripted call (docs/llmsim.md)

// Every answer went where the target says, and the server that should have
// served it got the request on /v1/responses or /v1/chat/completions.
function assertServed(answers, target) {
  assert.ok(answers.length > 0, 'the client sent requests');
  for (const a of answers) {
    assert.equal(a.status, 200, `answer ${JSON.stringify(a.body ?? a.events?.at(-1))?.slice(0, 300)}`);
    if (target.backend) assert.equal(a.backend, target.backend, `served by ${target.backend}`);
    if (target.reason) assert.equal(a.reason, target.reason);
  }
}

async function openaiScenario(target, Client = OpenAI) {
  const tee = teeFetch();
  const client = new Client({ baseURL: target.base, apiKey: 'sk-client', maxRetries: 0, timeout: 20000, fetch: tee.fetch });
  const model = target.model;

  const r = await client.responses.create({ model, instructions: 'be brief', input: 'hello there', metadata: { k: 'v' } });
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, 'hello there');
  assert.equal(r.model, model);
  assert.deepEqual(r.metadata, { k: 'v' });
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);

  // The .stream helper: its typed events and the final response.
  const s = client.responses.stream({ model, input: 'streamed words' });
  const types = [];
  for await (const e of s) types.push(e.type);
  const fin = await s.finalResponse();
  assert.equal(fin.output_text, 'streamed words');
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.ok(types.includes('response.output_text.delta'));

  // create({stream: true}): the raw event iterator.
  const raw = await client.responses.create({ model, input: 'raw stream', stream: true });
  let text = '';
  for await (const e of raw) if (e.type === 'response.output_text.delta') text += e.delta;
  assert.equal(text, 'raw stream');

  // A function tool round trip: the model calls it, the client sends the output back.
  const tools = [{ type: 'function', name: 'get_weather', description: 'weather', parameters: weather, strict: true }];
  const call = await client.responses.create({ model, input: CALL, tools });
  const fc = call.output.find((o) => o.type === 'function_call');
  assert.ok(fc, `a function_call item: ${JSON.stringify(call.output)}`);
  assert.equal(fc.name, 'get_weather');
  assert.deepEqual(JSON.parse(fc.arguments), { city: 'Oslo' });
  const after = await client.responses.create({
    model, tools,
    input: [{ role: 'user', content: CALL }, { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
      { type: 'function_call_output', call_id: fc.call_id, output: 'sunny in Oslo' }],
  });
  assert.equal(after.output_text, 'sunny in Oslo');
  // The same call streamed: function_call_arguments events.
  const cs = await client.responses.create({ model, input: CALL, tools, stream: true });
  const argEvents = [];
  for await (const e of cs) if (e.type.startsWith('response.function_call_arguments.')) argEvents.push(e);
  assert.deepEqual(JSON.parse(argEvents.at(-1).arguments), { city: 'Oslo' });

  // text.format json_schema: the answer is the JSON.
  const fmt = await client.responses.create({
    model, input: '{"a":"x"}',
    text: { format: { type: 'json_schema', name: 'thing', strict: true, schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false } } },
  });
  assert.deepEqual(JSON.parse(fmt.output_text), { a: 'x' });

  assertServed(await tee.settle(), target);
}

// previous_response_id: the second turn carries the first (the gateway
// stores it and resolves the id; the backend never sees the id alone).
async function previousScenario(target) {
  const tee = teeFetch();
  const client = new OpenAI({ baseURL: target.base, apiKey: 'sk-client', maxRetries: 0, timeout: 20000, fetch: tee.fetch });
  const first = await client.responses.create({ model: target.model, input: 'first turn words' });
  const second = await client.responses.create({ model: target.model, input: 'second turn', previous_response_id: first.id });
  assert.equal(second.output_text, 'second turn');
  assert.equal(second.previous_response_id, first.id);
  const [req] = await received(target.sim);
  const body = JSON.stringify(req.body);
  assert.match(body, /first turn words/, 'the stored turn went upstream with the new one');
  assertServed(await tee.settle(), target);
}

async function agentsScenario(target) {
  const tee = teeFetch();
  const client = new OpenAI7({ baseURL: target.base, apiKey: 'sk-client', maxRetries: 0, timeout: 20000, fetch: tee.fetch });
  // The default API of the provider is Responses: nothing set for it here.
  const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client }), tracingDisabled: true });
  const getWeather = agentTool({
    name: 'get_weather', description: 'weather', parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  });
  const agent = new Agent({ name: 'helper', instructions: 'be brief', model: target.model, tools: [getWeather] });

  const plain = await runner.run(agent, 'hello agent');
  assert.equal(plain.finalOutput, 'hello agent');

  // The agent calls the tool, runs it, and answers with its output.
  const withTool = await runner.run(agent, CALL, { maxTurns: 3 });
  assert.equal(withTool.finalOutput, 'sunny in Oslo');
  const calls = withTool.newItems.filter((i) => i.type === 'tool_call_item');
  assert.equal(calls.length, 1);

  // Streamed.
  const streamed = await runner.run(agent, CALL, { stream: true, maxTurns: 3 });
  let deltas = 0;
  for await (const e of streamed) if (e.type === 'raw_model_stream_event' && e.data.type === 'output_text_delta') deltas++;
  await streamed.completed;
  assert.equal(streamed.finalOutput, 'sunny in Oslo');
  assert.ok(deltas > 0);

  const answers = await tee.settle();
  assert.equal(answers.length, 5, 'one request for the plain run, two for each run with the tool');
  assert.equal(answers[1].request.tool_choice, undefined, 'the SDK lets the model choose');
  assertServed(answers, target);
}

async function vercelScenario(target) {
  const tee = teeFetch();
  const openai = createOpenAI({ baseURL: target.base, apiKey: 'sk-client', fetch: tee.fetch });
  const model = openai(target.model); // the default: the Responses API

  const g = await generateText({ model, prompt: 'hello vercel', maxRetries: 0 });
  assert.equal(g.text, 'hello vercel');
  assert.ok(g.usage.inputTokens > 0 && g.usage.outputTokens > 0);

  const st = streamText({ model, prompt: 'stream vercel', maxRetries: 0 });
  let t = '';
  for await (const d of st.textStream) t += d;
  assert.equal(t, 'stream vercel');
  assert.equal(await st.finishReason, 'stop');

  const o = await generateObject({ model, schema: z.object({ a: z.string() }), prompt: '{"a":"x"}', maxRetries: 0 });
  assert.deepEqual(o.object, { a: 'x' });

  const tools = {
    get_weather: aiTool({ description: 'weather', inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `sunny in ${city}` }),
  };
  const tt = await generateText({ model, prompt: CALL, tools, stopWhen: stepCountIs(3), maxRetries: 0 });
  assert.equal(tt.steps.length, 2);
  assert.deepEqual(tt.steps[0].toolCalls.map((c) => [c.toolName, c.input]), [['get_weather', { city: 'Oslo' }]]);
  assert.equal(tt.text, 'sunny in Oslo');

  const ts = streamText({ model, prompt: CALL, tools, stopWhen: stepCountIs(3), maxRetries: 0 });
  let ttext = '';
  for await (const d of ts.textStream) ttext += d;
  assert.equal(ttext, 'sunny in Oslo');
  assert.equal((await ts.steps).length, 2);

  assertServed(await tee.settle(), target);
}

const SCENARIOS = [
  ['openai SDK: responses.create, .stream, a function tool round trip, text.format', openaiScenario],
  ['openai SDK 7.x: the same', (target) => openaiScenario(target, OpenAI7)],
  ['Agents SDK (default API): a run, a tool round trip, a streamed run', agentsScenario],
  ['Vercel AI SDK openai(): generateText, streamText, generateObject, tools', vercelScenario],
];

test('the schema file is the pinned spec', () => {
  assert.equal(SPEC.commit, SPEC_COMMIT);
});

describe('clients against llmsim directly (the clients\' side alone)', () => {
  for (const [name, fn] of SCENARIOS) {
    test(name, async (t) => {
      const s = await startLlmsim(['--model', 'sim-model', '--reply', 'echo', '--decode-tps', '0']);
      t.after(() => s.stop());
      await fn({ base: `${s.url}/v1`, model: 'sim-model', sim: s });
    });
  }
});

describe('clients through the gateway: a local chat-completions backend (translated)', () => {
  for (const [name, fn] of [...SCENARIOS, ['openai SDK: previous_response_id', previousScenario]]) {
    test(name, () => withProcs(async (track) => {
      const { gw, edge } = await responsesGateway(track);
      await fn({ base: `${gw.url}/v1`, model: 'local-chat', sim: edge, backend: 'edge' });
      const req = await received(edge);
      assert.equal(req[0].path, '/v1/chat/completions', 'the backend got chat completions');
    }));
  }
});

describe('clients through the gateway: a local backend speaking the Responses API', () => {
  for (const [name, fn] of [...SCENARIOS, ['openai SDK: previous_response_id', previousScenario]]) {
    test(name, () => withProcs(async (track) => {
      const { gw, edgeR } = await responsesGateway(track);
      await fn({ base: `${gw.url}/v1`, model: 'local-responses', sim: edgeR, backend: 'edge-r' });
      const req = await received(edgeR);
      assert.equal(req[0].path, '/v1/responses', 'the backend got the Responses API');
    }));
  }
});

describe('clients through the gateway: the cloud under overflow', () => {
  for (const [name, fn] of SCENARIOS) {
    test(name, () => withProcs(async (track) => {
      const { gw, edge, cloud } = await responsesGateway(track);
      const hold = await holdLocal(gw, edge, { admin: ADMIN, model: 'overflow' });
      try {
        await fn({ base: `${gw.url}/v1`, model: 'overflow', sim: cloud, backend: 'cloud', reason: 'overflow' });
      } finally {
        await hold.release();
      }
      assert.equal((await received(cloud))[0].path, '/v1/responses');
    }));
  }
});
