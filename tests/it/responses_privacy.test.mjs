// The privacy floor for Responses clients: every field of a Responses body
// is scanned (input items' text, instructions, a function call's arguments,
// a function_call_output, a developer message, items chat cannot carry that
// go whole to a Responses backend), over each kind of cloud (chat, Anthropic
// Messages, the Responses API itself). Under pii.policy local_only such a
// request never reaches a cloud; under mask it reaches it with placeholders
// only, and the answer comes back restored: in the text and in function-call
// arguments, whole and streamed (output_text.delta/.done, function_call_
// arguments.delta/.done, the final response). Every answer and event is
// validated against the spec's schemas.
//
// Every place first proves that the same request without the value reaches
// the cloud, so "nothing reached the cloud" cannot pass only because nothing
// would have gone there anyway.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getJSON, startLlmsim, startSpillway } from './lib/harness.mjs';
import { assertNoLeak } from './lib/leak.mjs';
import { assertEvents, assertResponse, deltaText, rawEvents } from './responses_lib.mjs';

const ADMIN = 'sk-admin-resp-privacy';
const DOWN = 'http://127.0.0.1:9';
const ECHO = ['--reply', 'echo', '--decode-tps', '0'];

const config = ({ chat, native, claude, policy }) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${DOWN}", model: "edge-model", slots: 1, connect_timeout_ms: 200 }
  - { name: gpt, tier: cloud, url: "${chat}", model: "gpt-upstream" }
  - { name: native, tier: cloud, url: "${native}", model: "native-upstream", dialects: [openai, responses] }
  - { name: claude, tier: cloud, url: "${claude}", model: "claude-upstream", dialect: anthropic }
models:
  - { name: via-chat, backends: [edge, gpt] }
  - { name: via-native, backends: [edge, native] }
  - { name: via-anth, backends: [edge, claude] }
pii: { policy: ${policy} }
`;

const VALUES = {
  email: 'maria.jansen@ziggo.nl',
  iban: 'NL91 ABNA 0417 1643 00',
  secret: 'sk-proj-Qm8vT2xNc4LbW7eRz9KpYd3HfJ6aUs1G',
};

// Where a value can sit in a Responses body. f(v) returns the body's fields
// (model added per cloud). `native`: only a Responses backend carries it;
// `models`: the clouds that can carry it.
const PLACES = {
  'input item text': { make: (v) => ({ input: [{ role: 'user', content: [{ type: 'input_text', text: `Write to ${v} today.` }] }] }) },
  'input string': { make: (v) => ({ input: `Write to ${v} today.` }) },
  instructions: { make: (v) => ({ instructions: `Sign every answer as ${v}.`, input: 'Say hello.' }) },
  'developer message': { make: (v) => ({ input: [{ role: 'developer', content: `The user is ${v}.` }, { role: 'user', content: 'Hello.' }] }) },
  'function_call_output': { make: (v) => ({ input: [{ role: 'user', content: 'Look up the customer.' },
    { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":"customer"}' },
    { type: 'function_call_output', call_id: 'call_1', output: `found: ${v}` }, { role: 'user', content: 'Thanks.' }],
  tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }] }) },
  'function_call arguments': { make: (v) => ({ input: [{ role: 'user', content: 'Look up the customer.' },
    { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: JSON.stringify({ q: v }) },
    { type: 'function_call_output', call_id: 'call_1', output: 'none' }, { role: 'user', content: 'Thanks.' }] }) },
  'function_call_output parts': { make: (v) => ({ input: [{ role: 'user', content: 'Look up.' },
    { type: 'function_call', call_id: 'call_2', name: 'lookup', arguments: '{}' },
    { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: `row ${v}` }] }, { role: 'user', content: 'Ok.' }] }) },
  'reasoning item (Responses backend only)': { native: true, make: (v) => ({ input: [{ role: 'user', content: 'Hi.' },
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: `The user is ${v}.` }] }, { role: 'user', content: 'Go on.' }] }) },
  // (Anthropic's API has no metadata but user_id: a 400 names it there)
  'metadata value': { models: ['via-chat', 'via-native'], make: (v) => ({ input: 'Hello.', metadata: { owner: v } }) },
};

const post = (gw, body) => fetch(`${gw.url}/v1/responses`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100000`)).body.requests;
const clear = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });
const clean = (make) => make('nobody in particular');

for (const policy of ['local_only', 'mask']) {
  describe(`Responses requests, pii.policy ${policy}: every field is scanned`, () => {
    let sims, gw;
    before(async () => {
      sims = {
        'via-chat': await startLlmsim(['--model', 'gpt-upstream', ...ECHO]),
        'via-native': await startLlmsim(['--model', 'native-upstream', ...ECHO]),
        'via-anth': await startLlmsim(['--model', 'claude-upstream', ...ECHO, '--dialect', 'anthropic']),
      };
      gw = await startSpillway(config({ chat: sims['via-chat'].url, native: sims['via-native'].url, claude: sims['via-anth'].url, policy }));
    });
    after(async () => { await gw?.stop(); for (const s of Object.values(sims || {})) await s.stop(); });

    for (const [place, { make, native, models }] of Object.entries(PLACES)) {
      for (const model of models || (native ? ['via-native'] : ['via-chat', 'via-native', 'via-anth'])) {
        test(`${place} to ${model}: the clean request reaches the cloud, the value does not`, async () => {
          const sim = sims[model];
          await clear(sim);
          const ok = await post(gw, { model, ...clean(make) });
          const okText = await ok.text();
          assert.equal(ok.status, 200, `clean request: ${okText}`);
          assertResponse(JSON.parse(okText));
          const baseline = JSON.stringify((await received(sim)).map((q) => q.body));
          for (const [type, v] of Object.entries(VALUES)) {
            await clear(sim);
            const r = await post(gw, { model, ...make(v) });
            const text = await r.text();
            const got = await received(sim);
            if (policy === 'local_only') {
              assert.notEqual(r.status, 200, `${type} in ${place}: answered`);
              assert.ok(JSON.parse(text).error?.message, `an OpenAI-shaped error, got ${text}`);
              assert.equal(got.length, 0, `${type} in ${place}: the cloud received the request`);
            } else {
              assert.equal(r.status, 200, `${type} in ${place}: ${text}`);
              assertResponse(JSON.parse(text));
              assert.equal(got.length, 1);
              assertNoLeak(JSON.stringify(got[0].body), [v], { baseline, where: `${model} (${type} in ${place})` });
            }
          }
        });
      }
    }

    if (policy === 'mask') {
      for (const model of ['via-chat', 'via-native', 'via-anth']) {
        test(`masked to ${model}: the text restored, whole and streamed (a placeholder split across deltas too)`, async () => {
          const sim = sims[model];
          const input = `Write to ${VALUES.email} and ${VALUES.iban} today.`;
          await clear(sim);
          const r = await post(gw, { model, input });
          const body = await r.json();
          assertResponse(body);
          assert.equal(body.output[0].content[0].text, input);
          const sent = JSON.stringify((await received(sim))[0].body);
          assert.match(sent, /\[EMAIL_1\]/);
          assert.ok(!sent.includes('ziggo'));
          const events = await rawEvents(await post(gw, { model, input, stream: true }));
          assertEvents(events);
          assert.equal(deltaText(events), input);
          assert.equal(events.find((e) => e.type === 'response.output_text.done').text, input);
          assert.equal(events.at(-1).response.output[0].content[0].text, input);
        });

        test(`masked to ${model}: function-call arguments restored, whole${model === 'via-chat' ? '' : ' and streamed'}`, async () => {
          const sim = sims[model];
          const tools = [{ type: 'function', name: 'send_mail', parameters: { type: 'object', properties: { to: { type: 'string' } } } }];
          const args = JSON.stringify({ to: VALUES.email });
          const req = { model, input: args, tools, tool_choice: { type: 'function', name: 'send_mail' } };
          await clear(sim);
          const r = await post(gw, req);
          const body = await r.json();
          assertResponse(body);
          const call = body.output.find((o) => o.type === 'function_call');
          assert.deepEqual(JSON.parse(call.arguments), { to: VALUES.email });
          assert.ok(!JSON.stringify((await received(sim))[0].body).includes('ziggo'));
          // (llmsim streams a forced call in Anthropic's and the Responses API only)
          if (model === 'via-chat') return;
          const events = await rawEvents(await post(gw, { ...req, stream: true }));
          assertEvents(events);
          assert.deepEqual(JSON.parse(deltaText(events, 'response.function_call_arguments.delta')), { to: VALUES.email });
          assert.deepEqual(JSON.parse(events.find((e) => e.type === 'response.function_call_arguments.done').arguments), { to: VALUES.email });
          const final = events.at(-1).response.output.find((o) => o.type === 'function_call');
          assert.deepEqual(JSON.parse(final.arguments), { to: VALUES.email });
          assert.ok(!JSON.stringify((await received(sim)).map((q) => q.body)).includes('ziggo'));
        });
      }

      test('masked to a Responses backend: the body keeps its own fields (not rebuilt through the translation)', async () => {
        const sim = sims['via-native'];
        await clear(sim);
        const r = await post(gw, { model: 'via-native', input: `Mail ${VALUES.email}.`, truncation: 'auto', include: ['reasoning.encrypted_content'] });
        assert.equal(r.status, 200);
        const [q] = await received(sim);
        assert.equal(q.path, '/v1/responses');
        assert.equal(q.body.truncation, 'auto');
        assert.deepEqual(q.body.include, ['reasoning.encrypted_content']);
        assert.equal(q.body.input, 'Mail [EMAIL_1].');
      });
    }
  });
}
