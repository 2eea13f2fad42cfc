// Backend URLs with a path of their own, and the azure dialect (OpenAI on
// Azure), through llmsim mounted under a prefix and llmsim's Azure
// emulation (--azure-key). The official openai SDK's AzureOpenAI client
// talks to the emulation directly, so its shape is the one that SDK expects.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { AzureOpenAI } from 'openai';
import { startLlmsim, startSpillway, getJSON } from './lib/harness.mjs';
import { ADMIN, gatewayYaml as yaml, withProcs } from './lib/gateway.mjs';

const KEY = 'azure-key-1';
const VERSION = '2024-10-21';
const DEP = 'gpt4o-eu';

const azureSim = (extra = []) => startLlmsim(['--model', 'cloud-model', '--azure-key', KEY,
  '--azure-deployment', DEP, ...extra]);

const azureBackend = (sim, extra = {}) => ({
  name: 'az', tier: 'cloud', url: sim.url, model: 'cloud-model', dialect: { raw: 'azure' },
  api_key: KEY, region: 'eu-west',
  azure: { raw: `{ deployment: ${DEP}, api_version: "${VERSION}" }` }, ...extra,
});

async function chat(gw, body, headers = {}) {
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'cloudy', max_tokens: 8, ...body }),
  });
  return { status: r.status, text: await r.text(), headers: r.headers };
}

const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests
  ?? (await getJSON(`${sim.url}/admin/received`)).body;

describe('backend urls keep their path', () => {
  for (const [prefix, url] of [['/v1beta/openai', '/v1beta/openai'], ['/openai/v1', '/openai/v1'],
    ['/v1', '/v1'], ['/api/v1', '/api/v1/']]) {
    test(`url ending in ${url}: requests go to ${prefix}/chat/completions`, () => withProcs(async (track) => {
      const sim = await track(startLlmsim(['--model', 'cloud-model', ...(prefix === '/v1' ? [] : ['--prefix', prefix])]));
      const gw = await track(startSpillway(yaml({
        backends: [{ name: 'c', tier: 'cloud', url: `${sim.url}${url}`, model: 'cloud-model' }],
        models: [{ name: 'cloudy', backends: ['c'] }],
      })));
      const r = await chat(gw, { messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(r.status, 200, r.text);
      const stream = await chat(gw, { stream: true, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(stream.status, 200);
      assert.match(stream.text, /data: \[DONE\]/);
      const reqs = await received(sim);
      const paths = reqs.map((q) => q.wire_path ?? q.path);
      assert.ok(paths.every((p) => p === `${prefix}/chat/completions`), `${paths}`);
    }));
  }

  test('a url without a path still gets /v1 (today\'s configs unchanged)', () => withProcs(async (track) => {
    const sim = await track(startLlmsim(['--model', 'cloud-model', '--prefix', '/v1beta/openai']));
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'c', tier: 'cloud', url: sim.url, model: 'cloud-model' }],
      models: [{ name: 'cloudy', backends: ['c'] }],
    })));
    // llmsim under a prefix does not serve /v1/...: the request fails, which
    // shows the join added /v1 to a url without a path
    const r = await chat(gw, { messages: [{ role: 'user', content: 'hi' }] });
    assert.notEqual(r.status, 200);
    const paths = (await received(sim)).map((q) => q.wire_path ?? q.path);
    assert.deepEqual(paths, []);
  }));
});

describe('dialect: azure', () => {
  test('chat, not streamed and streamed: api-key, deployment path, api-version', () => withProcs(async (track) => {
    const sim = await track(azureSim());
    const gw = await track(startSpillway(yaml({
      backends: [azureBackend(sim)], models: [{ name: 'cloudy', backends: ['az'] }],
    })));
    const r = await chat(gw, { messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(r.status, 200, r.text);
    const a = JSON.parse(r.text);
    assert.equal(a.object, 'chat.completion');
    assert.equal(a.model, 'cloudy');
    assert.ok(a.choices[0].message.content.length > 0);
    const s = await chat(gw, { stream: true, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(s.status, 200);
    assert.match(s.text, /"delta"/);
    assert.match(s.text, /data: \[DONE\]\n\n$/);
    const reqs = await received(sim);
    assert.equal(reqs.length, 2);
    for (const q of reqs) {
      assert.equal(q.wire_path, `/openai/deployments/${DEP}/chat/completions?api-version=${VERSION}`);
      assert.equal(q.headers['api-key'], KEY);
      assert.equal(q.headers.authorization, undefined);
    }
  }));

  test('the v1 API without api_version, and an Entra ID token as the bearer', () => withProcs(async (track) => {
    const sim = await track(azureSim());
    const gw = await track(startSpillway(yaml({
      backends: [{ name: 'az', tier: 'cloud', url: sim.url, model: 'cloud-model', dialect: { raw: 'azure' },
        azure: { raw: `{ entra_token: "${KEY}" }` } }],
      models: [{ name: 'cloudy', backends: ['az'] }],
    })));
    const r = await chat(gw, { messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(r.status, 200, r.text);
    const [q] = await received(sim);
    assert.equal(q.wire_path, '/openai/v1/chat/completions');
    assert.equal(q.headers.authorization, `Bearer ${KEY}`);
    assert.equal(q.headers['api-key'], undefined);
  }));

  test('tools: a forced tool call comes back as OpenAI\'s', () => withProcs(async (track) => {
    const sim = await track(azureSim(['--reply', 'echo']));
    const gw = await track(startSpillway(yaml({
      backends: [azureBackend(sim)], models: [{ name: 'cloudy', backends: ['az'] }],
    })));
    const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
    const r = await chat(gw, { messages: [{ role: 'user', content: '{"q":"x"}' }], tools,
      tool_choice: { type: 'function', function: { name: 'lookup' } } });
    assert.equal(r.status, 200, r.text);
    const a = JSON.parse(r.text);
    assert.equal(a.choices[0].message.tool_calls[0].function.name, 'lookup');
    assert.equal((await received(sim))[0].body.tools[0].function.name, 'lookup');
  }));

  for (const status of [429, 503]) {
    test(`failover: Azure ${status} goes to the next backend`, () => withProcs(async (track) => {
      const sim = await track(azureSim(['--error-rate', '1', '--error-status', String(status)]));
      const other = await track(startLlmsim(['--model', 'other-model']));
      const gw = await track(startSpillway(yaml({
        backends: [azureBackend(sim), { name: 'other', tier: 'cloud', url: other.url, model: 'other-model' }],
        models: [{ name: 'cloudy', backends: ['az', 'other'] }],
      })));
      const r = await chat(gw, { messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(r.status, 200, r.text);
      assert.equal((await received(sim)).length, 1);
      assert.equal((await received(other)).length, 1);
    }));
  }

  test('content filter: Azure\'s refusal is a 400 content_filter in OpenAI\'s shape', () => withProcs(async (track) => {
    const sim = await track(azureSim());
    const other = await track(startLlmsim(['--model', 'other-model']));
    const gw = await track(startSpillway(yaml({
      backends: [azureBackend(sim), { name: 'other', tier: 'cloud', url: other.url, model: 'other-model' }],
      models: [{ name: 'cloudy', backends: ['az', 'other'] }],
    })));
    const r = await chat(gw, { messages: [{ role: 'user', content: 'AZURE_CONTENT_FILTER please' }] });
    // the client's own error: not failed over
    assert.equal((await received(other)).length, 0);
    assert.equal(r.status, 400, r.text);
    const e = JSON.parse(r.text).error;
    assert.equal(e.code, 'content_filter');
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.innererror, undefined);
    assert.match(e.message, /content management policy/);
  }));

  test('masking: an e-mail goes to Azure as a placeholder and comes back restored', () => withProcs(async (track) => {
    const sim = await track(azureSim(['--reply', 'echo']));
    const gw = await track(startSpillway(yaml({
      backends: [azureBackend(sim)], models: [{ name: 'cloudy', backends: ['az'] }],
    }) + 'pii: { policy: mask }\n'));
    const mail = 'alice.ops@example.org';
    const r = await chat(gw, { max_tokens: 64, messages: [{ role: 'user', content: `mail ${mail} please` }] });
    assert.equal(r.status, 200, r.text);
    assert.ok(JSON.parse(r.text).choices[0].message.content.includes(mail), r.text);
    const sent = JSON.stringify((await received(sim))[0].body);
    assert.ok(!sent.includes(mail), sent);
  }));

  test('spend: settled on Azure\'s usage', () => withProcs(async (track) => {
    const sim = await track(azureSim());
    const gw = await track(startSpillway(yaml({
      backends: [azureBackend(sim, { price: { raw: '{ input_usd_per_mtok: 100, output_usd_per_mtok: 100 }' } })],
      models: [{ name: 'cloudy', backends: ['az'] }],
      routing: '  spend: { cap_usd: 10, on_cap: shed }',
    })));
    for (const stream of [false, true])
      assert.equal((await chat(gw, { stream, stream_options: stream ? { include_usage: true } : undefined,
        messages: [{ role: 'user', content: 'hello there' }] })).status, 200);
    const st = (await getJSON(`${sim.url}/admin/stats`)).body;
    const bill = ((st.prompt_tokens + st.tokens_generated) * 100) / 1e6;
    const m = await (await fetch(`${gw.url}/metrics`)).text();
    const cost = m.split('\n').filter((l) => l.startsWith('spillway_cloud_cost_usd_total{'))
      .reduce((a, l) => a + Number(l.split(' ').pop()), 0);
    assert.ok(bill > 0);
    assert.ok(Math.abs(cost - bill) < 1e-9, `the gateway settled ${cost} USD, Azure billed ${bill}`);
    const state = (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).body;
    assert.ok(Math.abs(state.spend_usd - bill) < 1e-9, `spend_usd ${state.spend_usd}`);
  }));
});

describe('llmsim\'s Azure emulation, read by the openai SDK\'s AzureOpenAI', () => {
  test('chat, streamed and not; a wrong key is a 401, a filtered prompt a content_filter 400', () => withProcs(async (track) => {
    const sim = await track(azureSim());
    const client = new AzureOpenAI({ endpoint: sim.url, apiKey: KEY, apiVersion: VERSION, deployment: DEP, maxRetries: 0 });
    const a = await client.chat.completions.create({ model: DEP, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(a.object, 'chat.completion');
    assert.ok(a.usage.prompt_tokens > 0);
    let text = '';
    for await (const c of await client.chat.completions.create({ model: DEP, max_tokens: 8, stream: true,
      messages: [{ role: 'user', content: 'hi' }] })) text += c.choices[0]?.delta?.content ?? '';
    assert.ok(text.length > 0);
    const [q] = await received(sim);
    assert.equal(q.wire_path, `/openai/deployments/${DEP}/chat/completions?api-version=${VERSION}`);

    const bad = new AzureOpenAI({ endpoint: sim.url, apiKey: 'wrong', apiVersion: VERSION, deployment: DEP, maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: DEP, messages: [{ role: 'user', content: 'hi' }] }),
      (e) => e.status === 401 && e.code === '401' && /Access denied/.test(e.message));
    const other = new AzureOpenAI({ endpoint: sim.url, apiKey: KEY, apiVersion: VERSION, deployment: 'nope', maxRetries: 0 });
    await assert.rejects(other.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
      (e) => e.status === 404 && e.code === 'DeploymentNotFound');
    await assert.rejects(client.chat.completions.create({ model: DEP, messages: [{ role: 'user', content: 'AZURE_CONTENT_FILTER' }] }),
      (e) => e.status === 400 && e.code === 'content_filter' && e.param === 'prompt'
        && e.error?.innererror?.code === 'ResponsibleAIPolicyViolation');
  }));
});
