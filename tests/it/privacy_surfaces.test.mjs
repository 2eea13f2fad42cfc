// What leaves is what was scanned: an Anthropic Messages request that goes to
// an Anthropic cloud goes in its own form (native), so every field of it is
// what Spillway must have scanned, including those the OpenAI translation
// drops (unknown block, message and tool keys, citations, cache_control,
// documents, non-string descriptions). Under local_only such a request stays
// off the cloud; under mask it reaches the cloud masked, rebuilt in
// Anthropic's own form (never through the OpenAI translation, which would
// refuse or drop fields), and the answer comes back restored.
//
// Every test first proves that the same request without the value reaches
// the cloud, so "nothing reached the cloud" cannot pass only because nothing
// would have gone there anyway.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, getJSON } from './lib/harness.mjs';
import { assertNoLeak } from './lib/leak.mjs';

const CLIENT_KEY = 'sk-client-surfaces';
const DOWN = 'http://127.0.0.1:9';

function config({ cloudUrl, policy, openaiUrl }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "sk-admin-surfaces" }
keys:
  - { name: agent, key: "${CLIENT_KEY}", allow_cloud: true }
backends:
  - { name: edge, tier: local, url: "${DOWN}", model: "edge-model", slots: 1, connect_timeout_ms: 200 }
  - { name: claude, tier: cloud, url: "${cloudUrl}", dialect: anthropic, model: "claude-upstream", api_key: "sk-ant-cloud", anthropic_version: "2023-06-01" }
  - { name: gpt, tier: cloud, url: "${openaiUrl}", model: "gpt-upstream", api_key: "sk-oai-cloud" }
models:
  - { name: coder, backends: [edge, claude] }
  - { name: coder-oai, backends: [edge, gpt] }
pii: { policy: ${policy} }
`;
}

// Values written as people write them, one per variant so a leak names it.
const VALUES = {
  email: 'maria.jansen@ziggo.nl',
  phone: '+31 6 4127 9035',
  iban: 'NL91 ABNA 0417 1643 00',
  secret: 'sk-proj-Qm8vT2xNc4LbW7eRz9KpYd3HfJ6aUs1G',
};

// Where a value can sit in an Anthropic body beyond what the OpenAI
// translation carries. f(v) returns a request body with v planted in it.
const base = () => ({ model: 'coder', max_tokens: 64 });
const user = (content) => ({ role: 'user', content });
const PLACES = {
  'unknown block key': (v) => ({ ...base(), messages: [user([{ type: 'text', text: 'Summarise my note.', note: `from ${v}` }])] }),
  'unknown message key': (v) => ({ ...base(), messages: [{ ...user('Summarise my note.'), annotation: `sent by ${v}` }] }),
  'unknown top-level key': (v) => ({ ...base(), messages: [user('Summarise my note.')], container: `notes of ${v}` }),
  'unknown tool key': (v) => ({ ...base(), messages: [user('Look it up.')],
    tools: [{ name: 'lookup', description: 'Finds a customer.', input_schema: { type: 'object', properties: {} }, examples: [`lookup ${v}`] }] }),
  'non-string tool description': (v) => ({ ...base(), messages: [user('Look it up.')],
    tools: [{ name: 'lookup', description: { text: `ask ${v}` }, input_schema: { type: 'object', properties: {} } }] }),
  'citations': (v) => ({ ...base(), messages: [user('What did the contract say?'),
    { role: 'assistant', content: [{ type: 'text', text: 'It names a contact.', citations: [{ type: 'char_location', cited_text: `contact ${v}`, document_index: 0, start_char_index: 0, end_char_index: 10 }] }] },
    user('Tell me more.')] }),
  'cache_control extra key': (v) => ({ ...base(), messages: [user([{ type: 'text', text: 'Summarise my note.', cache_control: { type: 'ephemeral', owner: v } }])] }),
  'document text source': (v) => ({ ...base(), messages: [user([
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: `Invoice for ${v}` }, title: 'invoice.txt' },
    { type: 'text', text: 'Summarise the document.' }])] }),
  'document title and context': (v) => ({ ...base(), messages: [user([
    { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Quarterly figures.' }, title: `notes ${v}`, context: `written by ${v}` },
    { type: 'text', text: 'Summarise the document.' }])] }),
  'system block extra key': (v) => ({ ...base(), system: [{ type: 'text', text: 'You are terse.', author: v }], messages: [user('Hello.')] }),
  'tool_result nested block key': (v) => ({ ...base(), messages: [user('Look it up.'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01A', name: 'lookup', input: { q: 'customer' } }] },
    user([{ type: 'tool_result', tool_use_id: 'toolu_01A', content: [{ type: 'text', text: 'found one', extra: v }] }])] }),
};

const clean = (make) => JSON.parse(JSON.stringify(make('nobody in particular')));

async function post(gw, body) {
  const r = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': CLIENT_KEY, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text, backend: r.headers.get('x-spillway-backend') };
}
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100000`)).body.requests;
const clear = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });

for (const policy of ['local_only', 'mask']) {
  describe(`Anthropic request to an Anthropic cloud, pii.policy ${policy}: every field is scanned`, () => {
    let cloud, openai, gw;
    before(async () => {
      cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-upstream', '--reply', 'echo', '--decode-tps', '0']);
      openai = await startLlmsim(['--model', 'gpt-upstream', '--reply', 'echo', '--decode-tps', '0']);
      gw = await startSpillway(config({ cloudUrl: cloud.url, openaiUrl: openai.url, policy }));
    });
    after(async () => { await gw?.stop(); await cloud?.stop(); await openai?.stop(); });

    for (const [place, make] of Object.entries(PLACES)) {
      test(`${place}: the clean request reaches the cloud, the value does not`, async () => {
        await clear(cloud);
        const ok = await post(gw, clean(make));
        assert.equal(ok.status, 200, `clean request: ${ok.text}`);
        assert.equal(ok.backend, 'claude');
        const baseline = JSON.stringify((await received(cloud)).map((q) => q.body));
        assert.ok(baseline.length > 0);
        for (const [type, v] of Object.entries(VALUES)) {
          await clear(cloud);
          const r = await post(gw, make(v));
          const got = await received(cloud);
          if (policy === 'local_only') {
            assert.notEqual(r.status, 200, `${type} in ${place}: answered by ${r.backend}`);
            assert.ok(r.json?.type === 'error' && r.json.error?.type, `${type}: a structured Anthropic error, got ${r.text}`);
            assert.equal(got.length, 0, `${type} in ${place}: the cloud received the request`);
          } else {
            assert.equal(r.status, 200, `${type} in ${place}: ${r.text}`);
            assert.equal(r.backend, 'claude');
            assert.equal(got.length, 1);
            assertNoLeak(JSON.stringify(got[0].body), [v], { baseline, where: `the cloud (${type} in ${place})` });
            // Rebuilt in Anthropic's own form: the planted field is still there.
            assert.equal(JSON.stringify(got[0].body).length > 0, true);
          }
        }
      });
    }

    if (policy === 'mask') {
      test('masked: the native body keeps its own fields (not rebuilt through the translation) and the answer is restored', async () => {
        await clear(cloud);
        const body = { ...base(), system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
          messages: [user([{ type: 'text', text: `Write to ${VALUES.email} today.` }])], thinking: { type: 'enabled', budget_tokens: 1024 } };
        const r = await post(gw, body);
        assert.equal(r.status, 200, r.text);
        const [q] = await received(cloud);
        assert.deepEqual(q.body.thinking, { type: 'enabled', budget_tokens: 1024 });
        assert.deepEqual(q.body.system[0].cache_control, { type: 'ephemeral' });
        assert.ok(!JSON.stringify(q.body).includes('ziggo'), JSON.stringify(q.body));
        assert.match(JSON.stringify(q.body.messages), /\[EMAIL_1\]/);
        assert.ok(r.json.content.map((c) => c.text || '').join('').includes(VALUES.email), `answer restored: ${r.text}`);
      });

      test('masked and streamed: the native body goes masked, the event stream comes back restored', async () => {
        await clear(cloud);
        const body = { ...base(), stream: true, system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
          messages: [user([{ type: 'text', text: `Call ${VALUES.phone} or write to ${VALUES.email}.` }])] };
        const r = await post(gw, body);
        assert.equal(r.status, 200, r.text);
        const [q] = await received(cloud);
        assert.equal(q.body.stream, true);
        assert.deepEqual(q.body.system[0].cache_control, { type: 'ephemeral' });
        assertNoLeak(JSON.stringify(q.body), [VALUES.phone, VALUES.email], { baseline: 'Call or write to' });
        const text = r.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
          .filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text || '').join('');
        assert.ok(text.includes(VALUES.phone) && text.includes(VALUES.email), `restored stream: ${text}`);
        assert.match(r.text, /event: message_stop/);
      });

      test('Anthropic client -> OpenAI cloud, masked: what the translation sends carries no value', async () => {
        await clear(openai);
        const body = { ...base(), model: 'coder-oai', system: [{ type: 'text', text: `Support for ${VALUES.phone}.` }],
          messages: [user([{ type: 'text', text: `Mail ${VALUES.email}` }, { type: 'text', text: `IBAN ${VALUES.iban}` }])] };
        const r = await post(gw, body);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.backend, 'gpt');
        const got = await received(openai);
        assert.equal(got.length, 1);
        assertNoLeak(JSON.stringify(got[0].body), Object.values(VALUES).slice(0, 3), { baseline: 'Support for Mail IBAN model messages content role' });
      });
    }
  });
}
