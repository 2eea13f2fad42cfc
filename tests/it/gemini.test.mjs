// Google's generateContent API (dialect gemini, and vertex with a service
// account's OAuth2 tokens) and Azure's Entra ID client credentials, through
// llmsim's emulation of the Gemini API, Vertex AI and both token endpoints.
// The official @google/genai SDK talks to llmsim directly first, so the
// wire format the gateway is tested against is the one that SDK reads.
// One llmsim and one gateway serve the whole file.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GoogleGenAI } from '@google/genai';
import { spawnSync } from 'node:child_process';
import { startLlmsim, startSpillway, getJSON, tempDir, removeTempDir, BUILD } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml } from './lib/gateway.mjs';

const GKEY = 'gemini-key-1';
const MODEL = 'gemini-2.0-flash';
const TTL_S = 2;
const ENTRA = { tenant: 'contoso.onmicrosoft.com', id: 'app-1', secret: 'entra-secret-1' };
const AZKEY = 'azure-key-unused';
const DEP = 'gpt4o';

let dir, sim, bad, gw;
const procs = [];

function serviceAccount(file, tokenUri, privateKey) {
  writeFileSync(file, JSON.stringify({
    type: 'service_account', project_id: 'p1', private_key_id: 'kid-1',
    private_key: privateKey, client_email: 'sw@p1.iam.gserviceaccount.com', token_uri: tokenUri,
  }));
}

before(async () => {
  dir = tempDir('spillway-gemini-');
  const sa = generateKeyPairSync('rsa', { modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  writeFileSync(join(dir, 'sa.pub'), sa.publicKey);
  sim = await startLlmsim(['--model', MODEL, '--reply', 'echo', '--decode-tps', '0', '--gemini-key', GKEY,
    '--google-sa-pubkey', join(dir, 'sa.pub'), '--token-ttl-s', String(TTL_S),
    '--entra-client-id', ENTRA.id, '--entra-secret', ENTRA.secret, '--azure-key', AZKEY,
    '--azure-deployment', DEP, '--keep-received', '1000']);
  procs.push(sim);
  bad = await startLlmsim(['--model', MODEL, '--gemini-key', GKEY, '--error-rate', '1', '--error-status', '429']);
  procs.push(bad);
  serviceAccount(join(dir, 'sa.json'), `${sim.url}/token`, sa.privateKey);
  serviceAccount(join(dir, 'wrong.json'), `${sim.url}/token`, other.privateKey);
  const vertex = (file) => ({ raw: `{ project: p1, location: us-central1, credentials_file: "${join(dir, file)}" }` });
  gw = await startSpillway(yaml({
    backends: [
      { name: 'gem', tier: 'cloud', url: sim.url, model: MODEL, dialect: { raw: 'gemini' }, api_key: GKEY,
        price: { raw: '{ input_usd_per_mtok: 100, output_usd_per_mtok: 100 }' },
        gemini: { raw: '{ safety_threshold: BLOCK_ONLY_HIGH }' } },
      { name: 'gem_bad', tier: 'cloud', url: bad.url, model: MODEL, dialect: { raw: 'gemini' }, api_key: GKEY },
      { name: 'vx', tier: 'cloud', url: sim.url, model: MODEL, dialect: { raw: 'vertex' }, vertex: vertex('sa.json') },
      { name: 'vxa', tier: 'cloud', url: sim.url, model: 'claude-sonnet-4', dialect: { raw: 'vertex_anthropic' },
        vertex: vertex('sa.json') },
      { name: 'vx_wrong', tier: 'cloud', url: sim.url, model: MODEL, dialect: { raw: 'gemini' }, vertex: vertex('wrong.json') },
      { name: 'az', tier: 'cloud', url: sim.url, model: DEP, dialect: { raw: 'azure' },
        azure: { raw: `{ tenant_id: "${ENTRA.tenant}", client_id: ${ENTRA.id}, client_secret: ${ENTRA.secret}, `
          + `token_url: "${sim.url}/${ENTRA.tenant}/oauth2/v2.0/token" }` } },
    ],
    models: [{ name: 'g', backends: ['gem'] }, { name: 'fo', backends: ['gem_bad', 'gem'] },
      { name: 'v', backends: ['vx'] }, { name: 'c', backends: ['vxa'] }, { name: 'vw', backends: ['vx_wrong'] }, { name: 'a', backends: ['az'] }],
    routing: '  spend: { cap_usd: 10, on_cap: shed }',
  }) + 'pii: { policy: mask }\n');
  procs.push(gw);
});

after(async () => {
  for (const p of procs.reverse()) await p.stop();
  removeTempDir(dir);
});

const received = async (s = sim) => (await getJSON(`${s.url}/admin/received`)).body.requests;
const clearReceived = async (s = sim) => fetch(`${s.url}/admin/received`, { method: 'DELETE' });
const stats = async () => (await getJSON(`${sim.url}/admin/stats`)).body;

async function post(path, body, headers = {}) {
  const r = await fetch(`${gw.url}${path}`, { method: 'POST',
    headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: r.status, text: await r.text() };
}
const chat = (body) => post('/v1/chat/completions', { model: 'g', max_tokens: 64, ...body });

// The OpenAI chunks of a streamed answer, and the text they carry.
function chunks(text) {
  const out = text.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));
  return { out, content: out.map((c) => c.choices?.[0]?.delta?.content ?? '').join('') };
}

describe('llmsim\'s Gemini API, read by the official @google/genai SDK', () => {
  test('generateContent, streamed and not, usage; a wrong key is refused', async () => {
    const ai = new GoogleGenAI({ apiKey: GKEY, httpOptions: { baseUrl: sim.url } });
    const r = await ai.models.generateContent({ model: MODEL, contents: 'hello from the sdk',
      config: { systemInstruction: 'be brief', maxOutputTokens: 32 } });
    assert.equal(r.text, 'hello from the sdk');
    assert.equal(r.candidates[0].finishReason, 'STOP');
    assert.ok(r.usageMetadata.promptTokenCount > 0 && r.usageMetadata.candidatesTokenCount > 0);
    let text = '', last;
    for await (const c of await ai.models.generateContentStream({ model: MODEL, contents: 'streamed words here' })) {
      text += c.text ?? '';
      last = c;
    }
    assert.equal(text, 'streamed words here');
    assert.equal(last.candidates[0].finishReason, 'STOP');
    assert.ok(last.usageMetadata.candidatesTokenCount > 0);
    const tools = [{ functionDeclarations: [{ name: 'lookup', parameters: { type: 'OBJECT', properties: { q: { type: 'STRING' } } } }] }];
    const call = await ai.models.generateContent({ model: MODEL, contents: 'llmsim:call lookup {"q":"x"}', config: { tools } });
    assert.deepEqual(call.functionCalls[0], { name: 'lookup', args: { q: 'x' } });
    const blocked = await ai.models.generateContent({ model: MODEL, contents: 'GEMINI_SAFETY_BLOCK' });
    assert.equal(blocked.candidates[0].finishReason, 'SAFETY');
    const wrong = new GoogleGenAI({ apiKey: 'wrong', httpOptions: { baseUrl: sim.url } });
    await assert.rejects(wrong.models.generateContent({ model: MODEL, contents: 'hi' }),
      (e) => e.status === 400 && /API key not valid/.test(e.message));
    const limited = new GoogleGenAI({ apiKey: GKEY, httpOptions: { baseUrl: bad.url } });
    await assert.rejects(limited.models.generateContent({ model: MODEL, contents: 'hi' }),
      (e) => e.status === 429 && /RESOURCE_EXHAUSTED/.test(e.message));
  });
});

describe('dialect: gemini', () => {
  test('chat, whole and streamed: the key, the paths, the body', async () => {
    await clearReceived();
    const r = await chat({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello gemini' }] });
    assert.equal(r.status, 200, r.text);
    const a = JSON.parse(r.text);
    assert.equal(a.object, 'chat.completion');
    assert.equal(a.model, 'g');
    assert.equal(a.choices[0].message.content, 'hello gemini');
    assert.equal(a.choices[0].finish_reason, 'stop');
    assert.ok(a.usage.prompt_tokens > 0 && a.usage.completion_tokens > 0);
    const s = await chat({ stream: true, messages: [{ role: 'user', content: 'streamed hello' }] });
    assert.equal(s.status, 200);
    assert.equal(chunks(s.text).content, 'streamed hello');
    assert.match(s.text, /"finish_reason":"stop"/);
    assert.match(s.text, /data: \[DONE\]\n\n$/);
    const [q1, q2] = await received();
    assert.equal(q1.path, `/v1beta/models/${MODEL}:generateContent`);
    assert.equal(q2.wire_path, `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
    assert.equal(q1.headers['x-goog-api-key'], GKEY);
    assert.deepEqual(q1.body.systemInstruction, { parts: [{ text: 'be brief' }] });
    assert.deepEqual(q1.body.contents, [{ role: 'user', parts: [{ text: 'hello gemini' }] }]);
    assert.equal(q1.body.generationConfig.maxOutputTokens, 64);
    assert.equal(q1.body.safetySettings.length, 4);
    assert.ok(q1.body.safetySettings.every((x) => x.threshold === 'BLOCK_ONLY_HIGH'));
  });

  test('Anthropic Messages and Responses clients over a gemini backend', async () => {
    const m = await post('/v1/messages', { model: 'g', max_tokens: 32, messages: [{ role: 'user', content: 'from claude' }] },
      { 'anthropic-version': '2023-06-01' });
    assert.equal(m.status, 200, m.text);
    assert.equal(JSON.parse(m.text).content[0].text, 'from claude');
    const ms = await post('/v1/messages', { model: 'g', max_tokens: 32, stream: true,
      messages: [{ role: 'user', content: 'claude streamed' }] });
    assert.equal(ms.status, 200);
    assert.match(ms.text, /event: message_stop/);
    assert.match(ms.text, /"stop_reason":"end_turn"/);
    const r = await post('/v1/responses', { model: 'g', input: 'from responses', max_output_tokens: 32 });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).output_text ?? JSON.parse(r.text).output[0].content[0].text, 'from responses');
  });

  test('tools: functionDeclarations out, a functionCall back as tool_calls, the result as functionResponse', async () => {
    await clearReceived();
    const tools = [{ type: 'function', function: { name: 'lookup', description: 'find',
      parameters: { type: 'object', properties: { q: { type: ['string', 'null'] } }, required: ['q'], additionalProperties: false } } }];
    const ask = { role: 'user', content: 'llmsim:call lookup {"q":"x"}' };
    const r = await chat({ messages: [ask], tools });
    assert.equal(r.status, 200, r.text);
    const a = JSON.parse(r.text);
    assert.equal(a.choices[0].finish_reason, 'tool_calls');
    const call = a.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'lookup');
    assert.deepEqual(JSON.parse(call.function.arguments), { q: 'x' });
    const s = await chat({ stream: true, messages: [ask], tools });
    const calls = chunks(s.text).out.flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
    assert.equal(calls[0].function.name, 'lookup');
    assert.match(s.text, /"finish_reason":"tool_calls"/);
    const r2 = await chat({ messages: [ask, { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: '{"found":"the answer"}' }], tools });
    assert.equal(r2.status, 200, r2.text);
    assert.match(JSON.parse(r2.text).choices[0].message.content, /the answer/);
    const q = (await received()).at(-1).body;
    const decl = q.tools[0].functionDeclarations[0];
    assert.equal(decl.name, 'lookup');
    assert.deepEqual(decl.parameters, { type: 'OBJECT', properties: { q: { type: 'STRING', nullable: true } }, required: ['q'] });
    assert.equal(q.contents[1].role, 'model');
    assert.equal(q.contents[1].parts[0].functionCall.name, 'lookup');
    assert.deepEqual(q.contents[2].parts[0].functionResponse, { name: 'lookup', id: call.id, response: { found: 'the answer' } });
  });

  test('the output contract: response_format as responseMimeType and responseSchema', async () => {
    await clearReceived();
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    const r = await chat({ messages: [{ role: 'user', content: '{"a": 1}' }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(JSON.parse(JSON.parse(r.text).choices[0].message.content), { a: 1 });
    const gc = (await received())[0].body.generationConfig;
    assert.equal(gc.responseMimeType, 'application/json');
    assert.deepEqual(gc.responseSchema, { type: 'OBJECT', properties: { a: { type: 'INTEGER' } }, required: ['a'] });
  });

  test('failover: Google\'s 429 RESOURCE_EXHAUSTED goes to the next backend', async () => {
    await clearReceived(bad);
    const r = await chat({ model: 'fo', messages: [{ role: 'user', content: 'fail me over' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).choices[0].message.content, 'fail me over');
    assert.equal((await received(bad)).length, 1);
  });

  test('masking: an e-mail goes to Gemini as a placeholder and comes back restored', async () => {
    await clearReceived();
    const mail = 'alice.ops@example.org';
    for (const stream of [false, true]) {
      const r = await chat({ stream, messages: [{ role: 'user', content: `mail ${mail} please` }] });
      assert.equal(r.status, 200, r.text);
      const text = stream ? chunks(r.text).content : JSON.parse(r.text).choices[0].message.content;
      assert.ok(text.includes(mail), text);
    }
    for (const q of await received()) assert.ok(!JSON.stringify(q.body).includes(mail), JSON.stringify(q.body));
  });

  test('a safety block: finish_reason content_filter (OpenAI), stop_reason refusal (Anthropic)', async () => {
    const r = await chat({ messages: [{ role: 'user', content: 'GEMINI_SAFETY_BLOCK' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).choices[0].finish_reason, 'content_filter');
    const s = await chat({ stream: true, messages: [{ role: 'user', content: 'GEMINI_SAFETY_BLOCK' }] });
    assert.match(s.text, /"finish_reason":"content_filter"/);
    const p = await chat({ messages: [{ role: 'user', content: 'GEMINI_PROMPT_BLOCK' }] });
    assert.equal(JSON.parse(p.text).choices[0].finish_reason, 'content_filter');
    const m = await post('/v1/messages', { model: 'g', max_tokens: 32, messages: [{ role: 'user', content: 'GEMINI_SAFETY_BLOCK' }] });
    assert.equal(JSON.parse(m.text).stop_reason, 'refusal');
  });

  test('spend: settled on Gemini\'s usageMetadata', async () => {
    const m0 = await (await fetch(`${gw.url}/metrics`)).text();
    const cost = (m) => m.split('\n').filter((l) => l.startsWith('spillway_cloud_cost_usd_total{backend="gem"'))
      .reduce((a, l) => a + Number(l.split(' ').pop()), 0);
    const before = cost(m0);
    await clearReceived();
    let tokens = 0;
    for (const stream of [false, true]) {
      const r = await chat({ stream, stream_options: stream ? { include_usage: true } : undefined,
        messages: [{ role: 'user', content: 'count these words' }] });
      const u = stream ? chunks(r.text).out.at(-1).usage : JSON.parse(r.text).usage;
      tokens += u.prompt_tokens + u.completion_tokens;
    }
    const spent = cost(await (await fetch(`${gw.url}/metrics`)).text()) - before;
    assert.ok(tokens > 0);
    assert.ok(Math.abs(spent - tokens * 100 / 1e6) < 1e-9, `settled ${spent}, Gemini counted ${tokens} tokens`);
  });
});

describe('dialect: vertex (service-account tokens)', () => {
  test('a token fetched with a signed JWT, cached, and refreshed once it expires', async () => {
    await clearReceived();
    const t0 = (await stats()).token_requests.google;
    for (const stream of [false, true]) {
      const r = await chat({ model: 'v', stream, messages: [{ role: 'user', content: 'hello vertex' }] });
      assert.equal(r.status, 200, r.text);
    }
    assert.equal((await stats()).token_requests.google - t0, 1, 'one exchange for two requests');
    const qs = (await received()).filter((q) => q.path.includes('/projects/'));
    assert.equal(qs[0].path, `/v1/projects/p1/locations/us-central1/publishers/google/models/${MODEL}:generateContent`);
    assert.match(qs[0].headers.authorization, /^Bearer ya29\.c-sim/);
    assert.equal(qs[0].headers['x-goog-api-key'], undefined);
    const token = qs[0].headers.authorization;
    // past the token's life: the next request waits for a fresh one
    await new Promise((res) => setTimeout(res, TTL_S * 1000 + 200));
    const r = await chat({ model: 'v', messages: [{ role: 'user', content: 'again' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal((await stats()).token_requests.google - t0, 2);
    assert.notEqual((await received()).at(-1).headers.authorization, token);
  });

  test('a key the token endpoint does not know: a 503 naming the token, nothing sent to the model', async () => {
    await clearReceived();
    const refused0 = (await stats()).token_requests.refused;
    const r = await chat({ model: 'vw', messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(r.status, 503, r.text);
    assert.match(JSON.parse(r.text).error.message, /access token/);
    assert.equal((await stats()).token_requests.refused - refused0, 1);
    assert.equal((await received()).filter((q) => q.path.includes('generateContent')).length, 0);
  });
});

describe('dialect: vertex_anthropic (Claude on Vertex AI)', () => {
  test('rawPredict and streamRawPredict: the token, no model, Vertex\'s anthropic_version', async () => {
    await clearReceived();
    const r = await chat({ model: 'c', messages: [{ role: 'user', content: 'hello claude' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).choices[0].message.content, 'hello claude');
    const s = await chat({ model: 'c', stream: true, messages: [{ role: 'user', content: 'claude streamed' }] });
    assert.equal(chunks(s.text).content, 'claude streamed');
    const m = await post('/v1/messages', { model: 'c', max_tokens: 32, messages: [{ role: 'user', content: 'from claude code' }] });
    assert.equal(JSON.parse(m.text).content[0].text, 'from claude code');
    const qs = (await received()).filter((q) => q.path.includes('/publishers/anthropic/'));
    assert.equal(qs.length, 3);
    const base = '/v1/projects/p1/locations/us-central1/publishers/anthropic/models/claude-sonnet-4';
    assert.equal(qs[0].path, `${base}:rawPredict`);
    assert.equal(qs[1].path, `${base}:streamRawPredict`);
    for (const q of qs) {
      assert.equal(q.body.anthropic_version, 'vertex-2023-10-16');
      assert.equal(q.body.model, undefined);
      assert.match(q.headers.authorization, /^Bearer ya29\.c-sim/);
      assert.equal(q.headers['anthropic-version'], undefined);
    }
  });
});

describe('dialect: azure with Entra ID client credentials', () => {
  test('a token from the Entra endpoint is the bearer; cached', async () => {
    await clearReceived();
    const e0 = (await stats()).token_requests.entra;
    for (let i = 0; i < 2; i++) {
      const r = await chat({ model: 'a', messages: [{ role: 'user', content: 'hello azure' }] });
      assert.equal(r.status, 200, r.text);
    }
    assert.equal((await stats()).token_requests.entra - e0, 1);
    const q = (await received()).filter((x) => (x.wire_path ?? x.path).startsWith('/openai/'));
    assert.match(q[0].headers.authorization, /^Bearer eyJ0eXAiOiJKV1Qi\.entra-sim/);
    assert.equal(q[0].headers['api-key'], undefined);
    const form = (await received()).find((x) => x.path.endsWith('/oauth2/v2.0/token'));
    if (form) assert.match(form.body, /grant_type=client_credentials/);
  });

  test('an error event mid-stream ends the client\'s stream with its own API\'s error', async () => {
    // tokens paced, so the first ones reach the client before the error event
    const slow = await startLlmsim(['--model', DEP, '--decode-tps', '50', '--stream-error-after', '3',
      '--entra-client-id', ENTRA.id, '--entra-secret', ENTRA.secret, '--azure-key', AZKEY, '--azure-deployment', DEP]);
    const g2 = await startSpillway(yaml({
      backends: [{ name: 'az', tier: 'cloud', url: slow.url, model: DEP, dialect: { raw: 'azure' },
        azure: { raw: `{ tenant_id: "${ENTRA.tenant}", client_id: ${ENTRA.id}, client_secret: ${ENTRA.secret}, `
          + `token_url: "${slow.url}/${ENTRA.tenant}/oauth2/v2.0/token" }` } }],
      models: [{ name: 'a', backends: ['az'] }],
    }));
    const post2 = async (path, body) => {
      const r = await fetch(`${g2.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body) });
      return { status: r.status, text: await r.text() };
    };
    try {
      const s = await post2('/v1/chat/completions', { model: 'a', max_tokens: 32, stream: true,
        messages: [{ role: 'user', content: 'a long enough answer to cut' }] });
      assert.equal(s.status, 200);
      assert.match(s.text, /"code":"upstream_stream_failed"/);
      assert.match(s.text, /data: \[DONE\]\n\n$/);
      assert.ok(!/"code":"overloaded"/.test(s.text), 'the provider\'s own error object is not passed through');
      const m = await post2('/v1/messages', { model: 'a', max_tokens: 64, stream: true,
        messages: [{ role: 'user', content: 'a long enough answer to cut' }] });
      assert.match(m.text, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
      assert.ok(!/event: message_stop/.test(m.text));
    } finally {
      await g2.stop();
      await slow.stop();
    }
  });
});

// The gateway's own view: the failed token attempt counts against the
// backend (its breaker and last_error), as a 503 from it would.
test('a token failure is the backend\'s failure in /admin/state', async () => {
  const st = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
  const b = JSON.stringify(st.backends.find((x) => x.name === 'vx_wrong'));
  assert.match(b, /503/, b);
  const m = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(m, /spillway_errors_total\{class="token_refresh_failed"\} [1-9]/);
});

test('--check-config: examples/gemini.yaml and examples/vertex.yaml are valid', () => {
  const env = { ...process.env, APP_KEY: 'sk-app-1', ADMIN_KEY: 'sk-admin-1', GEMINI_API_KEY: 'g-k' };
  for (const f of ['examples/gemini.yaml', 'examples/vertex.yaml']) {
    const r = spawnSync(join(BUILD, 'spillway'), ['--check-config', f], { encoding: 'utf8', env, timeout: 10000 });
    assert.equal(r.status, 0, `${f}: ${r.stderr}`);
  }
});
