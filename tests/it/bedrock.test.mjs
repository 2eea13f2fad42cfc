// dialect: bedrock (AWS Bedrock's Converse API) through llmsim's Bedrock
// emulation (--bedrock-key), which checks every request's SigV4 signature.
// The official @aws-sdk/client-bedrock-runtime talks to the emulation
// directly first, so its wire format (JSON, event-stream frames, errors) is
// the one AWS's own client reads; then the gateway with bedrock backends:
// chat whole and streamed, tools, Anthropic and Responses clients, failover
// on throttling and unavailability, an exception mid-stream, masking, spend,
// and credentials from the environment and the shared files. The processes
// start once for the file.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startLlmsim, startSpillway, getJSON, tempDir, removeTempDir } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml } from './lib/gateway.mjs';

const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const KEY_ID = 'AKIASIMEXAMPLE';
const SECRET = 'sim/Secret+Key';
const REGION = 'eu-central-1';

const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
const clearReceived = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });
const faults = (sim, f) => fetch(`${sim.url}/admin/faults`, { method: 'POST', body: JSON.stringify(f) });

// No AWS settings of the machine reach the processes: HOME is a scratch
// directory, the AWS variables are set per process.
const home = tempDir('spillway-aws-home-');
const cleanEnv = { HOME: home, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: '',
  AWS_REGION: '', AWS_DEFAULT_REGION: '', AWS_PROFILE: '', AWS_SHARED_CREDENTIALS_FILE: '', AWS_CONFIG_FILE: '' };

const bedrockSim = (extra = []) => startLlmsim(['--model', MODEL, '--bedrock-key', `${KEY_ID}:${SECRET}`,
  '--bedrock-region', REGION, ...extra]);

const sdk = (sim, creds = { accessKeyId: KEY_ID, secretAccessKey: SECRET }) => new BedrockRuntimeClient({
  region: REGION, endpoint: sim.url, credentials: creds, maxAttempts: 1,
  requestHandler: new NodeHttpHandler(), // the client's default is HTTP/2, which llmsim does not speak
});

async function chat(gw, body) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'cloudy', max_tokens: 64, ...body }),
  });
  return { status: r.status, text: await r.text(), headers: r.headers };
}

const procs = [];
const track = async (p) => { const x = await p; procs.push(x); return x; };
let sim, simF, simM, other, gw;

before(async () => {
  sim = await track(bedrockSim());
  simF = await track(bedrockSim());
  simM = await track(bedrockSim());
  other = await track(startLlmsim(['--model', 'other-model', '--reply', 'echo']));
  const aws = `{ region: ${REGION}, access_key_id: "\${BR_KEY_ID}", secret_access_key: "\${BR_SECRET}" }`;
  gw = await track(startSpillway(yaml({
    backends: [
      { name: 'br', tier: 'cloud', url: sim.url, model: MODEL, dialect: { raw: 'bedrock' }, aws: { raw: aws },
        price: { raw: '{ input_usd_per_mtok: 100, output_usd_per_mtok: 300 }' } },
      { name: 'brf', tier: 'cloud', url: simF.url, model: MODEL, dialect: { raw: 'bedrock' }, aws: { raw: aws } },
      { name: 'brm', tier: 'cloud', url: simM.url, model: MODEL, dialect: { raw: 'bedrock' }, aws: { raw: aws } },
      { name: 'other', tier: 'cloud', url: other.url, model: 'other-model' },
    ],
    models: [{ name: 'cloudy', backends: ['br'] }, { name: 'fo', backends: ['brf', 'other'] },
      { name: 'mid', backends: ['brm', 'other'] }],
    routing: '  spend: { cap_usd: 10, on_cap: shed }\n  breaker: { failures: 1000 }',
  }) + 'pii: { policy: mask, binary_parts: allow }\n', { env: { ...cleanEnv, BR_KEY_ID: KEY_ID, BR_SECRET: SECRET } }));
});

after(async () => {
  for (const p of procs.reverse()) await p.stop();
  removeTempDir(home);
});

describe('llmsim\'s Bedrock emulation, read by @aws-sdk/client-bedrock-runtime', () => {
  test('Converse and ConverseStream: text, usage, stop reasons', async () => {
    const c = sdk(sim);
    const a = await c.send(new ConverseCommand({ modelId: MODEL, system: [{ text: 'be brief' }],
      messages: [{ role: 'user', content: [{ text: 'hello there world' }] }], inferenceConfig: { maxTokens: 50 } }));
    assert.equal(a.output.message.content[0].text, 'hello there world');
    assert.equal(a.stopReason, 'end_turn');
    assert.ok(a.usage.inputTokens > 0 && a.usage.outputTokens > 0);
    const cut = await c.send(new ConverseCommand({ modelId: MODEL,
      messages: [{ role: 'user', content: [{ text: 'hello there world' }] }], inferenceConfig: { maxTokens: 2 } }));
    assert.equal(cut.stopReason, 'max_tokens');
    assert.equal(cut.usage.outputTokens, 2);
    const s = await c.send(new ConverseStreamCommand({ modelId: MODEL,
      messages: [{ role: 'user', content: [{ text: 'streamed words here' }] }] }));
    let text = '';
    const kinds = [];
    for await (const e of s.stream) {
      kinds.push(Object.keys(e)[0]);
      text += e.contentBlockDelta?.delta?.text ?? '';
    }
    assert.equal(text, 'streamed words here');
    assert.deepEqual([kinds[0], ...kinds.slice(-3)], ['messageStart', 'contentBlockStop', 'messageStop', 'metadata']);
    const q = (await received(sim)).at(-1);
    assert.equal(q.path, '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream');
  });

  test('tools: a forced tool is called, streamed as toolUse deltas', async () => {
    const c = sdk(sim);
    const toolConfig = { tools: [{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object' } } } }],
      toolChoice: { tool: { name: 'lookup' } } };
    const a = await c.send(new ConverseCommand({ modelId: MODEL, toolConfig,
      messages: [{ role: 'user', content: [{ text: 'find x' }] }] }));
    assert.equal(a.stopReason, 'tool_use');
    assert.deepEqual(a.output.message.content[0].toolUse.input, { text: 'find x' });
    const s = await c.send(new ConverseStreamCommand({ modelId: MODEL, toolConfig,
      messages: [{ role: 'user', content: [{ text: 'find x' }] }] }));
    let input = '', name;
    for await (const e of s.stream) {
      name ??= e.contentBlockStart?.start?.toolUse?.name;
      input += e.contentBlockDelta?.delta?.toolUse?.input ?? '';
    }
    assert.equal(name, 'lookup');
    assert.deepEqual(JSON.parse(input), { text: 'find x' });
  });

  test('a wrong secret or key id is refused as AWS refuses it; faults are Bedrock\'s exceptions', async () => {
    const msgs = [{ role: 'user', content: [{ text: 'hi' }] }];
    await assert.rejects(sdk(sim, { accessKeyId: KEY_ID, secretAccessKey: 'wrong' }).send(new ConverseCommand({ modelId: MODEL, messages: msgs })),
      (e) => e.name === 'InvalidSignatureException' && e.$metadata.httpStatusCode === 403);
    await assert.rejects(sdk(sim, { accessKeyId: 'AKIAOTHER', secretAccessKey: SECRET }).send(new ConverseCommand({ modelId: MODEL, messages: msgs })),
      (e) => e.name === 'UnrecognizedClientException' && e.$metadata.httpStatusCode === 403);
    await assert.rejects(sdk(sim).send(new ConverseCommand({ modelId: 'amazon.other-v1:0', messages: msgs })),
      (e) => e.name === 'ValidationException' && e.$metadata.httpStatusCode === 400);
    try {
      await faults(simF, { error_rate: 1, error_status: 429 });
      await assert.rejects(sdk(simF).send(new ConverseCommand({ modelId: MODEL, messages: msgs })),
        (e) => e.name === 'ThrottlingException' && e.$metadata.httpStatusCode === 429);
      await faults(simF, { error_rate: 1, error_status: 503 });
      await assert.rejects(sdk(simF).send(new ConverseCommand({ modelId: MODEL, messages: msgs })),
        (e) => e.name === 'ServiceUnavailableException' && e.$metadata.httpStatusCode === 503);
      await faults(simF, { stream_error_after: 2, error_status: 429 });
      const s = await sdk(simF).send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'a longer sentence here' }] }] }));
      let deltas = 0;
      await assert.rejects((async () => { for await (const e of s.stream) if (e.contentBlockDelta) deltas++; })(),
        (e) => e.name === 'ThrottlingException');
      assert.equal(deltas, 2);
    } finally {
      await faults(simF, {});
      await clearReceived(simF);
    }
  });
});

describe('dialect: bedrock through the gateway', () => {
  test('chat: whole and streamed, signed for the region, the model in the path', async () => {
    await clearReceived(sim);
    const r = await chat(gw, { messages: [{ role: 'system', content: 'short' }, { role: 'user', content: 'hello bedrock' }] });
    assert.equal(r.status, 200, r.text);
    const a = JSON.parse(r.text);
    assert.equal(a.object, 'chat.completion');
    assert.equal(a.model, 'cloudy');
    assert.equal(a.choices[0].message.content, 'hello bedrock');
    assert.equal(a.choices[0].finish_reason, 'stop');
    assert.ok(a.usage.prompt_tokens > 0);
    const s = await chat(gw, { stream: true, messages: [{ role: 'user', content: 'hello stream' }] });
    assert.equal(s.status, 200);
    const chunks = s.text.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'hello stream');
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
    assert.match(s.text, /data: \[DONE\]\n\n$/);
    const reqs = await received(sim);
    assert.deepEqual(reqs.map((q) => q.path), [`/model/${encodeURIComponent(MODEL)}/converse`,
      `/model/${encodeURIComponent(MODEL)}/converse-stream`]);
    for (const q of reqs) {
      assert.match(q.headers.authorization, new RegExp(`^AWS4-HMAC-SHA256 Credential=${KEY_ID}/\\d{8}/${REGION}/bedrock/aws4_request, `));
      assert.ok(!JSON.stringify(q.headers).includes(SECRET));
    }
    assert.deepEqual(reqs[0].body.system, [{ text: 'short' }]);
    assert.equal(reqs[0].body.inferenceConfig.maxTokens, 64);
    assert.equal(reqs[0].body.model, undefined);
  });

  test('tools: tool_choice required as toolChoice any; tool calls whole and streamed; a tool result goes back', async () => {
    const tools = [{ type: 'function', function: { name: 'lookup', description: 'look up', parameters: { type: 'object', properties: { text: { type: 'string' } } } } }];
    const r = await chat(gw, { messages: [{ role: 'user', content: 'find x' }], tools, tool_choice: 'required' });
    assert.equal(r.status, 200, r.text);
    const m = JSON.parse(r.text).choices[0];
    assert.equal(m.finish_reason, 'tool_calls');
    assert.equal(m.message.tool_calls[0].function.name, 'lookup');
    assert.deepEqual(JSON.parse(m.message.tool_calls[0].function.arguments), { text: 'find x' });
    const s = await chat(gw, { stream: true, messages: [{ role: 'user', content: 'find y' }], tools,
      tool_choice: { type: 'function', function: { name: 'lookup' } } });
    const chunks = s.text.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
    const calls = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.equal(calls[0].function.name, 'lookup');
    assert.deepEqual(JSON.parse(calls.map((c) => c.function.arguments).join('')), { text: 'find y' });
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');
    // the call and its result back: toolUse and toolResult blocks, roles alternating
    const id = m.message.tool_calls[0].id;
    const back = await chat(gw, { tools, messages: [{ role: 'user', content: 'find x' }, m.message,
      { role: 'tool', tool_call_id: id, content: 'x is 42' }] });
    assert.equal(back.status, 200, back.text);
    assert.equal(JSON.parse(back.text).choices[0].message.content, 'x is 42');
    const q = (await received(sim)).at(-1).body;
    assert.deepEqual(q.messages.map((x) => x.role), ['user', 'assistant', 'user']);
    assert.equal(q.messages[1].content[0].toolUse.toolUseId, id);
    assert.deepEqual(q.messages[2].content[0].toolResult, { toolUseId: id, content: [{ text: 'x is 42' }] });
    assert.equal(q.toolConfig.tools[0].toolSpec.name, 'lookup');
  });

  test('images as bytes; what Converse cannot carry is a 400 naming the field', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const r = await chat(gw, { messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }] });
    assert.equal(r.status, 200, r.text);
    const q = (await received(sim)).at(-1).body;
    assert.deepEqual(q.messages[0].content[1], { image: { format: 'png', source: { bytes: png } } });
    const url = await chat(gw, { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.org/a.png' } }] }] });
    assert.equal(url.status, 400, url.text);
    assert.equal(JSON.parse(url.text).error.param, 'messages[0].content[0].image_url');
    const bad = await chat(gw, { messages: [{ role: 'user', content: 'hi' }], logprobs: true });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(JSON.parse(bad.text).error.param, 'logprobs');
  });

  test('Anthropic Messages and Responses clients reach Bedrock through translation', async () => {
    const anth = new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 });
    const a = await anth.messages.create({ model: 'cloudy', max_tokens: 32, messages: [{ role: 'user', content: 'from anthropic' }] });
    assert.equal(a.content[0].text, 'from anthropic');
    assert.equal(a.stop_reason, 'end_turn');
    let streamed = '';
    const st = anth.messages.stream({ model: 'cloudy', max_tokens: 32, messages: [{ role: 'user', content: 'anthropic stream' }] });
    for await (const e of st) if (e.type === 'content_block_delta') streamed += e.delta.text;
    assert.equal(streamed, 'anthropic stream');
    assert.ok((await st.finalMessage()).usage.output_tokens > 0);
    const oai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const resp = await oai.responses.create({ model: 'cloudy', input: 'from responses', max_output_tokens: 32 });
    assert.equal(resp.output_text, 'from responses');
    let rtext = '';
    for await (const e of await oai.responses.create({ model: 'cloudy', input: 'responses stream', stream: true, max_output_tokens: 32 }))
      if (e.type === 'response.output_text.delta') rtext += e.delta;
    assert.equal(rtext, 'responses stream');
  });

  for (const [status, name] of [[429, 'throttling'], [503, 'unavailability']]) {
    test(`failover: Bedrock's ${name} (${status}) goes to the next backend`, async () => {
      try {
        await faults(simF, { error_rate: 1, error_status: status });
        for (const stream of [false, true]) {
          await clearReceived(other);
          const r = await chat(gw, { model: 'fo', stream, messages: [{ role: 'user', content: 'over there' }] });
          assert.equal(r.status, 200, r.text);
          assert.match(r.text, /over there|over|there/);
          assert.equal((await received(other)).length, 1);
        }
      } finally {
        await faults(simF, {});
      }
    });
  }

  test('an exception before the first token fails over; after it, the client\'s stream ends with an error', async () => {
    try {
      await faults(simF, { stream_error_after: 0, error_status: 429 });
      await clearReceived(other);
      const r = await chat(gw, { model: 'fo', stream: true, messages: [{ role: 'user', content: 'early fault' }] });
      assert.equal(r.status, 200);
      assert.match(r.text, /data: \[DONE\]/);
      assert.equal((await received(other)).length, 1);
      await faults(simM, { stream_error_after: 2, error_status: 429 });
      await clearReceived(other);
      const s = await chat(gw, { model: 'mid', stream: true, messages: [{ role: 'user', content: 'a fault after two tokens' }] });
      assert.equal(s.status, 200);
      assert.match(s.text, /"delta":\{"content":"a fa"/);
      assert.match(s.text, /"error":\{"message":"exception in the ConverseStream"/);
      assert.doesNotMatch(s.text, /"finish_reason":"stop"/);
      assert.equal((await received(other)).length, 0);
      // an Anthropic client gets its own error event, typed by the exception's status
      const anth = await fetch(`${gw.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'mid', max_tokens: 32, stream: true, messages: [{ role: 'user', content: 'a fault after two tokens' }] }) });
      const t = await anth.text();
      assert.match(t, /event: error\ndata: \{"type":"error","error":\{"type":"rate_limit_error"/);
    } finally {
      await faults(simF, {});
      await faults(simM, {});
    }
  });

  test('masking: an e-mail goes to Bedrock as a placeholder and comes back restored, streamed too', async () => {
    const mail = 'alice.ops@example.org';
    await clearReceived(sim);
    for (const stream of [false, true]) {
      const r = await chat(gw, { stream, messages: [{ role: 'user', content: `mail ${mail} please` }] });
      assert.equal(r.status, 200, r.text);
      const text = stream
        ? r.text.split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? '').join('')
        : JSON.parse(r.text).choices[0].message.content;
      assert.equal(text, `mail ${mail} please`);
    }
    const sent = JSON.stringify(await received(sim));
    assert.equal((await received(sim)).length, 2);
    assert.ok(!sent.includes(mail) && !sent.includes('alice.ops'), sent);
  });

  test('spend: settled on Bedrock\'s usage, whole and streamed', async () => {
    const before = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body.spend_usd;
    const st0 = (await getJSON(`${sim.url}/admin/stats`)).body;
    for (const stream of [false, true])
      assert.equal((await chat(gw, { stream, messages: [{ role: 'user', content: 'count these tokens please' }] })).status, 200);
    const st = (await getJSON(`${sim.url}/admin/stats`)).body;
    const bill = ((st.prompt_tokens - st0.prompt_tokens) * 100 + (st.tokens_generated - st0.tokens_generated) * 300) / 1e6;
    const after = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body.spend_usd;
    assert.ok(bill > 0);
    assert.ok(Math.abs((after - before) - bill) < 1e-9, `the gateway settled ${after - before} USD, Bedrock billed ${bill}`);
  });
});

describe('AWS credentials', () => {
  const cfg = (s, aws) => yaml({
    backends: [{ name: 'br', tier: 'cloud', url: s.url, model: MODEL, dialect: { raw: 'bedrock' }, ...(aws ? { aws: { raw: aws } } : {}) }],
    models: [{ name: 'cloudy', backends: ['br'] }],
  });

  test('from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION; a session token is sent', async () => {
    const g = await startSpillway(cfg(sim), { env: { ...cleanEnv, AWS_ACCESS_KEY_ID: KEY_ID, AWS_SECRET_ACCESS_KEY: SECRET,
      AWS_SESSION_TOKEN: 'tok/en+1', AWS_REGION: REGION } });
    try {
      const r = await chat(g, { messages: [{ role: 'user', content: 'env keys' }] });
      assert.equal(r.status, 200, r.text);
      const q = (await received(sim)).at(-1);
      assert.equal(q.headers['x-amz-security-token'], 'tok/en+1');
      assert.match(q.headers.authorization, /SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/);
      assert.ok(!g.output().includes(SECRET) && !g.output().includes('tok/en+1'));
    } finally { await g.stop(); }
  });

  test('from the shared files: the profile\'s keys in credentials, its region in config', async () => {
    const dir = join(home, 'shared');
    mkdirSync(join(dir, '.aws'), { recursive: true });
    writeFileSync(join(dir, '.aws', 'credentials'), `[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n[sim]\naws_access_key_id = ${KEY_ID}\naws_secret_access_key = ${SECRET}\n`);
    writeFileSync(join(dir, '.aws', 'config'), `[default]\nregion = us-west-2\n[profile sim]\n# the profile's own\nregion = ${REGION}\n`);
    const g = await startSpillway(cfg(sim), { env: { ...cleanEnv, HOME: dir, AWS_PROFILE: 'sim' } });
    try {
      const r = await chat(g, { messages: [{ role: 'user', content: 'file keys' }] });
      assert.equal(r.status, 200, r.text);
    } finally { await g.stop(); }
  });

  test('without credentials the config is refused, naming where they were looked for', async () => {
    await assert.rejects(startSpillway(cfg(sim, `{ region: ${REGION} }`), { env: cleanEnv }),
      (e) => /needs AWS credentials/.test(String(e.message ?? e)));
  });
});
