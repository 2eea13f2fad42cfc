// Under pii.policy: mask, an Anthropic client's request to an Anthropic
// backend goes masked in its own API and the answer comes back in that API
// with every block the backend sent: the thinking block (its text restored
// like the answer's, its signature as sent) and the text, whole and
// streamed (the thinking text arrives in 7-byte pieces, so each placeholder
// is split across events and the unmasker must hold and flush it).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { getJSON, startLlmsim, startSpillway, waitFor } from './lib/harness.mjs';

const ADMIN = 'sk-anth-mask-admin';
const EMAIL = 'jan.devries@example-clinic.nl';
const IBAN = 'NL91ABNA0417164300';
const SIGNATURE = 'c2ltLXNpZ25hdHVyZQ==';   // llmsim's fixed signature

const config = (cloudUrl) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: claude, tier: cloud, url: "${cloudUrl}", dialect: anthropic, model: claude-model, api_key: "sk-ant-up" }
models:
  - { name: cloud-only, backends: [claude] }
routing:
  health_interval_ms: 100
pii:
  policy: mask
`;

describe('thinking blocks under pii.policy: mask', () => {
  let cloud, gw, anth;
  before(async () => {
    cloud = await startLlmsim(['--dialect', 'anthropic', '--model', 'claude-model', '--reply', 'echo',
      '--decode-tps', '0', '--keep-received', '20']);
    gw = await startSpillway(config(cloud.url));
    anth = new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => { await gw?.stop(); await cloud?.stop(); });

  const prompt = `write to ${EMAIL} about account ${IBAN} please`;
  const ask = (stream) => ({
    model: 'cloud-only', max_tokens: 64, stream,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: prompt }],
  });
  const lastReceived = async () => (await getJSON(`${cloud.url}/admin/received?n=1`)).body.requests.at(-1);
  const decision = async (id) => {
    let d;
    await waitFor(async () => (d = (await getJSON(`${gw.url}/admin/decisions?n=50`, { headers: { authorization: `Bearer ${ADMIN}` } }))
      .body.decisions.find((x) => x.request_id === id)), { timeout: 10000, what: `the decision of ${id}` });
    return d;
  };

  test('whole: the thinking block and the text come back restored, the cloud saw placeholders only', async () => {
    const { data, response } = await anth.messages.create(ask(false)).withResponse();
    const sent = JSON.stringify((await lastReceived()).body);
    assert.ok(!sent.includes(EMAIL) && !sent.includes(IBAN), 'a value reached the cloud unmasked');
    assert.ok(sent.includes('thinking'), 'thinking went to the backend');
    assert.deepEqual(data.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(data.content[0].thinking, prompt);
    assert.equal(data.content[0].signature, SIGNATURE);
    assert.equal(data.content[1].text, prompt);
    const d = await decision(response.headers.get('x-request-id'));
    assert.equal(d.pii_outcome, 'masked_cloud');
  });

  test('streamed: thinking deltas split mid-placeholder are restored, the block order and signature kept', async () => {
    const stream = anth.messages.stream(ask(true));
    const kinds = [];
    let thinking = '';
    let thinkingDeltas = 0;
    stream.on('streamEvent', (ev) => {
      kinds.push(ev.type === 'content_block_delta' ? `${ev.index}:${ev.delta.type}` : ev.type);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'thinking_delta') {
        thinking += ev.delta.thinking;
        thinkingDeltas++;
      }
    });
    const msg = await stream.finalMessage();
    assert.equal(thinking, prompt);
    assert.ok(thinkingDeltas > 3, 'the thinking came in pieces');
    assert.deepEqual(msg.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(msg.content[0].thinking, prompt);
    assert.equal(msg.content[0].signature, SIGNATURE);
    assert.equal(msg.content[1].text, prompt);
    // every thinking delta precedes the signature and the block's stop
    const sig = kinds.indexOf('0:signature_delta');
    assert.ok(sig > 0 && kinds.lastIndexOf('0:thinking_delta') < sig, kinds.join(' '));
    const sent = JSON.stringify((await lastReceived()).body);
    assert.ok(!sent.includes(EMAIL) && !sent.includes(IBAN));
  });
});
