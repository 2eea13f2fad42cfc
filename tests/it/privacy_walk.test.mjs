// The request walker through the real gateway, on the chat and Messages
// surfaces: binary content in every shape stays off the cloud under
// binary_parts: local, a structural field with free text in it is a 400
// naming the field, a card or BSN written as a JSON number and a value split
// across two text parts of one message are found. The local box is down, so
// the cloud IS chosen for a clean request (each test proves it first), and
// nothing of a value may reach the cloud simulator's /admin/received.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { assertNoLeak } from './lib/leak.mjs';

const DOWN = 'http://127.0.0.1:9';

// ---- Values as people type them ----
const digits = (n) => Array.from({ length: n }, () => randomInt(10)).join('');
function luhn(body) {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}
const cardDigits = () => luhn('5' + String(1 + randomInt(5)) + digits(13));
const grouped = (c) => c.match(/.{4}/g).join(' ');
function bsn() {
  for (;;) {
    const d = digits(8);
    let s = 0;
    for (let i = 0; i < 8; i++) s += Number(d[i]) * (9 - i);
    if (s % 11 < 10 && d[0] !== '0') return d + (s % 11);
  }
}
const email = () => `${['jan', 'els', 'piet'][randomInt(3)]}.${digits(3)}.vd@ziggo.nl`;
// A payload marker no detector knows, inside a base64 body: if it shows up
// in the cloud, the binary part went there.
const b64marker = () => Buffer.from(`%PDF-1.4 private scan ${digits(12)} `).toString('base64');

function config({ cloudUrl, dialect = 'openai' }) {
  return `
listen: "127.0.0.1:0"
backends:
  - { name: edge, tier: local, url: "${DOWN}", model: edge-model, slots: 1 }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model, dialect: ${dialect} }
models:
  - { name: chat, backends: [edge, cloud] }
routing:
  health_interval_ms: 100
pii:
  policy: local_only
  binary_parts: local
`;
}

async function post(gw, path, body) {
  const r = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, text, json };
}
const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
const receivedText = async (sim) => JSON.stringify(await received(sim));

// One gateway per surface, a clean request proven to reach the cloud first.
function surface(dialect, path, clean) {
  const s = {};
  before(async () => {
    s.cloud = await startLlmsim(dialect === 'anthropic'
      ? ['--dialect', 'anthropic', '--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']
      : ['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']);
    s.gw = await startSpillway(config({ cloudUrl: s.cloud.url, dialect }));
    await waitFor(async () => (await post(s.gw, path, clean)).status === 200, { timeout: 10000, what: 'a clean request answered by the cloud' });
    s.baseline = await receivedText(s.cloud);
    assert.ok((await received(s.cloud)).length >= 1, 'the cloud is chosen for a clean request');
  });
  after(async () => { await s.gw?.stop(); await s.cloud?.stop(); });
  // Sends body; it must not reach the cloud (it is refused, or stays local:
  // the local box is down, so it fails), and no value may show there.
  s.kept = async (body, values, what) => {
    const n = (await received(s.cloud)).length;
    const r = await post(s.gw, path, body);
    assert.notEqual(r.status, 200, `${what}: answered ${r.text}`);
    assert.equal((await received(s.cloud)).length, n, `${what}: reached the cloud`);
    assertNoLeak(await receivedText(s.cloud), values, { baseline: s.baseline, where: `the cloud (${what})` });
    return r;
  };
  // Sends body; it must be a 400 invalid_value naming param.
  s.refused = async (body, param, values, what) => {
    const r = await s.kept(body, values, what);
    assert.equal(r.status, 400, `${what}: ${r.text}`);
    if (dialect === 'anthropic') {
      assert.equal(r.json.type, 'error', r.text);
      assert.equal(r.json.error.type, 'invalid_request_error', r.text);
      assert.ok(r.json.error.message.includes(param), r.text);
    } else {
      assert.equal(r.json.error.code, 'invalid_value', r.text);
      assert.equal(r.json.error.param, param, r.text);
    }
    for (const v of values) assert.ok(!r.text.includes(v), `${what}: the error quotes the value`);
  };
  return s;
}

const chat = (extra = {}, messages = [{ role: 'user', content: 'hello there' }]) => ({ model: 'chat', max_tokens: 20, messages, ...extra });
const msgs = (extra = {}, messages = [{ role: 'user', content: 'hello there' }]) => ({ model: 'chat', max_tokens: 20, messages, ...extra });

describe('chat completions', () => {
  const s = surface('openai', '/v1/chat/completions', chat());

  test('binary: image data: URLs after a space, a newline, a BOM, in any case, stay off the cloud', async () => {
    for (const lead of [' ', '\n', '\r\n\t', '\ufeff', '\u00a0']) {
      for (const scheme of ['data:', 'DATA:', 'Data:']) {
        const m = b64marker();
        await s.kept(chat({}, [{ role: 'user', content: [{ type: 'text', text: 'what is this' },
          { type: 'image_url', image_url: { url: `${lead}${scheme}image/png;base64,${m}` } }] }]), [m], `image ${JSON.stringify(lead)}${scheme}`);
      }
    }
    const m = b64marker();
    await s.kept(chat({ metadata: { attachment: `  data:application/pdf;base64,${m}` } }), [m], 'a data: URL in metadata');
  });

  test('structural fields with free text are a 400 naming the field', async () => {
    const v = email();
    const rows = [
      [{ reasoning_effort: `high, mail ${v}` }, 'reasoning_effort'],
      [{ service_tier: v }, 'service_tier'],
      [{ tool_choice: `auto ${v}` }, 'tool_choice'],
      [{ function_call: v }, 'function_call'],
      [{ modalities: ['text', v] }, 'modalities[1]'],
      [{ audio: { voice: v, format: 'mp3' } }, 'audio.voice'],
      [{ response_format: { type: v } }, 'response_format.type'],
    ];
    for (const [extra, param] of rows) await s.refused(chat(extra), param, [v], param);
    await s.refused(chat({}, [{ role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [{ id: `call ${v}`, type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'ok' }]), 'messages[1].tool_calls[0].id', [v], 'tool-call id');
    await s.refused(chat({}, [{ role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: `send to ${v}`, arguments: '{}' } }] }]),
    'messages[1].tool_calls[0].function.name', [v], 'function name');
    await s.refused(chat({}, [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.org/a.png', detail: v } }] }]),
      'messages[0].content[0].image_url.detail', [v], 'image detail');
    await s.refused(chat({}, [{ role: 'user', content: [{ type: 'file', file: { file_id: v } }] }]),
      'messages[0].content[0].file.file_id', [v], 'file id');
  });

  test('a card and a BSN written as JSON numbers stay off the cloud', async () => {
    const c = cardDigits();
    await s.kept(`{"model":"chat","max_tokens":20,"messages":[{"role":"user","content":"charge it"}],"metadata":{"card":${c}}}`, [c], 'card number in metadata');
    const c2 = cardDigits();
    await s.kept(chat({ tools: [{ type: 'function', function: { name: 'pay', parameters: { type: 'object', properties: { card: { type: 'integer', default: Number(c2) } } } } }] }),
      [c2], 'card number as a schema default');
    const b = bsn();
    await s.kept(`{"model":"chat","max_tokens":20,"messages":[{"role":"user","content":"look up"}],"metadata":{"bsn":${b}}}`, [b], 'BSN as a number');
  });

  test('a value split across two text parts of one message stays off the cloud', async () => {
    const c = grouped(cardDigits());
    await s.kept(chat({}, [{ role: 'user', content: [{ type: 'text', text: `my card is ${c.slice(0, 9)}` }, { type: 'text', text: `${c.slice(9)} thanks` }] }]),
      [c.replace(/ /g, '')], 'card split across parts');
    const e = email();
    const at = e.indexOf('@');
    await s.kept(chat({}, [{ role: 'user', content: [{ type: 'text', text: `write to ${e.slice(0, at - 2)}` }, { type: 'text', text: `${e.slice(at - 2)} today` }] }]),
      [e], 'address split across parts');
  });
});

describe('Anthropic Messages', () => {
  const s = surface('anthropic', '/v1/messages', msgs());

  test('binary: base64 documents and images, inside tool_result too, stay off the cloud', async () => {
    const m1 = b64marker();
    await s.kept(msgs({}, [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: m1 } },
      { type: 'text', text: 'summarise this' }] }]), [m1], 'PDF document block');
    const m2 = b64marker();
    await s.kept(msgs({}, [{ role: 'user', content: 'look' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: [{ type: 'text', text: 'here' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: m2 } }] }] }]), [m2], 'image inside tool_result');
  });

  test('structural fields with free text are a 400 in Anthropic shape naming the field', async () => {
    const v = email();
    await s.refused(msgs({}, [{ role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'tool_use', id: `toolu ${v}`, name: 'send', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] }]), 'messages[1].content[0].id', [v], 'tool_use id');
    await s.refused(msgs({}, [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: v, content: 'ok' }] }]),
      'messages[0].content[0].tool_use_id', [v], 'tool_use_id');
    await s.refused(msgs({}, [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: v } }] }]),
      'messages[0].content[0].cache_control.type', [v], 'cache_control.type');
    await s.refused(msgs({ thinking: { type: v, budget_tokens: 1024 } }), 'thinking.type', [v], 'thinking.type');
    await s.refused(msgs({ tool_choice: { type: 'tool', name: v } }), 'tool_choice.name', [v], 'tool_choice.name');
  });

  test('a card written as a JSON number in a tool schema stays off the cloud', async () => {
    const c = cardDigits();
    await s.kept(`{"model":"chat","max_tokens":20,"messages":[{"role":"user","content":"pay"}],"tools":[{"name":"pay","input_schema":{"type":"object","properties":{"card":{"type":"integer","default":${c}}}}}]}`,
      [c], 'card number in input_schema');
  });

  test('a value split across two text blocks of one message, or of system, stays off the cloud', async () => {
    const c = grouped(cardDigits());
    await s.kept(msgs({}, [{ role: 'user', content: [{ type: 'text', text: `my card is ${c.slice(0, 9)}` }, { type: 'text', text: `${c.slice(9)} thanks` }] }]),
      [c.replace(/ /g, '')], 'card split across blocks');
    const e = email();
    const at = e.indexOf('@');
    await s.kept(msgs({ system: [{ type: 'text', text: `The user is ${e.slice(0, at + 3)}` }, { type: 'text', text: `${e.slice(at + 3)}.` }] }),
      [e], 'address split across system blocks');
  });
});
