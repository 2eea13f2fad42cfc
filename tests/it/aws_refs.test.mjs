// The gateway's AWS modules against AWS's own JavaScript implementations:
// the SigV4 signer (src/common/sigv4.c) against @smithy/signature-v4 for
// the same inputs and a fixed clock, and the event-stream decoder
// (src/common/evstream.c) on messages @smithy/eventstream-codec encoded,
// fed whole, split in two at every byte and a byte at a time. The expected
// values are the references' own, computed here at run time. The C side
// runs in build/tests/aws_drive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { SignatureV4 } from '@smithy/signature-v4';
import { Hash } from '@smithy/hash-node';
import { EventStreamCodec, Int64 } from '@smithy/eventstream-codec';
import { toUtf8, fromUtf8 } from '@smithy/util-utf8';
import { BUILD } from './lib/harness.mjs';

const drive = (mode, input) => {
  const r = spawnSync(resolve(BUILD, 'tests/aws_drive'), [mode], { input: JSON.stringify(input), maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr.toString());
  return JSON.parse(r.stdout.toString());
};

// Inputs that exercise each part of the canonical request: model ids with
// ':' and '/' (percent-encoded once in the path, again by the signer),
// dot segments, a session token, extra headers with odd white space, empty
// and non-ASCII bodies, dates across years and leap days.
function signCases() {
  const paths = ['/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse',
    '/model/us.amazon.nova-pro-v1%3A0/converse-stream',
    '/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.x-v1%3A0/converse',
    '/model/m/./converse', '/model/x/../y/converse', '/a//b/', '/', '/model/sp%20ace~_-./converse'];
  const hosts = ['bedrock-runtime.us-east-1.amazonaws.com', '127.0.0.1:45678', '[::1]:8080'];
  const bodies = ['', '{"messages":[{"role":"user","content":[{"text":"hi"}]}]}', 'ünïcødé ✓ 日本'];
  const times = [0, 1700000000, 951782400 /* 2000-02-29 */, 1735689599, 4102444800];
  const out = [];
  let i = 0;
  for (const path of paths) {
    for (const host of hosts) {
      const body = bodies[i % bodies.length];
      const now_s = times[i % times.length];
      const c = {
        method: 'POST', host, path, region: ['us-east-1', 'eu-central-1', 'ap-southeast-2'][i % 3],
        service: i % 4 === 3 ? 'bedrock-runtime' : 'bedrock', body, now_s,
        access_key_id: `AKIA${i}EXAMPLE`, secret_access_key: `wJalrXUtnFEMI/K7MDENG+bPxRfiCY${i}`,
      };
      if (i % 2) c.session_token = `FwoGZXIvYXdzE${i}//token+with/slashes=`;
      if (i % 3 === 1) c.headers = { 'content-type': 'application/json', accept: 'application/vnd.amazon.eventstream' };
      if (i % 5 === 2) c.headers = { 'X-Custom-Thing': '  a   b\tc  ' };
      out.push(c);
      i++;
    }
  }
  return out;
}

async function smithySign(c) {
  const signer = new SignatureV4({
    credentials: { accessKeyId: c.access_key_id, secretAccessKey: c.secret_access_key, sessionToken: c.session_token },
    region: c.region, service: c.service, sha256: Hash.bind(null, 'sha256'),
  });
  const headers = { host: c.host, ...(c.headers ?? {}) };
  const signed = await signer.sign({ method: c.method, protocol: 'https:', hostname: c.host, path: c.path, query: {}, headers, body: c.body },
    { signingDate: new Date(c.now_s * 1000) });
  return signed.headers;
}

test('SigV4: the same Authorization as @smithy/signature-v4 for every input', async () => {
  const cases = signCases();
  const ours = drive('sign', cases);
  assert.equal(ours.length, cases.length);
  for (let i = 0; i < cases.length; i++) {
    const ref = await smithySign(cases[i]);
    assert.equal(ours[i].error, undefined, JSON.stringify(cases[i]));
    assert.equal(ours[i].authorization, ref.authorization, `case ${i}: ${JSON.stringify(cases[i])}`);
    assert.equal(ours[i].amz_date, ref['x-amz-date']);
    assert.equal(ours[i].payload_hash, ref['x-amz-content-sha256']);
  }
});

test('SigV4: a header value that cannot be sent is refused, not signed', () => {
  const base = signCases()[0];
  const bad = [{ ...base, headers: { 'x-a': 'line\r\nInjected: 1' } }, { ...base, host: 'h\nx' },
    { ...base, headers: { 'bad name': 'v' } }];
  for (const r of drive('sign', bad)) assert.equal(r.error, 'invalid');
});

// Messages with every header type, as Bedrock's ConverseStream sends them
// and beyond.
function evsMessages() {
  const s = (value) => ({ type: 'string', value });
  const event = (type, payload) => ({
    headers: { ':message-type': s('event'), ':event-type': s(type), ':content-type': s('application/json') },
    body: fromUtf8(JSON.stringify(payload)),
  });
  return [
    event('messageStart', { role: 'assistant' }),
    event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello, wörld ✓' } }),
    event('metadata', { usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15 }, metrics: { latencyMs: 100 } }),
    { headers: { ':message-type': s('exception'), ':exception-type': s('throttlingException'), ':content-type': s('application/json') },
      body: fromUtf8('{"message":"Too many requests"}') },
    { headers: { ':message-type': s('error'), ':error-code': s('InternalFailure'), ':error-message': s('boom') }, body: new Uint8Array(0) },
    { headers: {
      t: { type: 'boolean', value: true }, f: { type: 'boolean', value: false },
      b: { type: 'byte', value: -7 }, sh: { type: 'short', value: -30000 }, i: { type: 'integer', value: 2147483647 },
      l: { type: 'long', value: Int64.fromNumber(-1234567890123) }, bin: { type: 'binary', value: new Uint8Array([0, 1, 255]) },
      ts: { type: 'timestamp', value: new Date(1700000000123) }, u: { type: 'uuid', value: 'a0b1c2d3-e4f5-4a6b-8c9d-0e1f2a3b4c5d' },
      e: s(''),
    }, body: new Uint8Array([0, 0xff, 0x10]) },
    { headers: {}, body: new Uint8Array(0) },
    event('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' + '"x'.repeat(600) + '"}' } } }),
  ];
}

const hex = (u8) => Buffer.from(u8).toString('hex');

function expected(m) {
  const headers = Object.entries(m.headers).map(([name, h]) => {
    let value = h.value;
    if (h.type === 'long') value = h.value.toString();
    else if (h.type === 'timestamp') value = String(h.value.getTime());
    else if (h.type === 'binary') value = hex(h.value);
    else if (h.type === 'uuid') value = h.value.replace(/-/g, '');
    else if (h.type !== 'boolean' && h.type !== 'string') value = String(h.value);
    return { name, type: h.type, value };
  });
  return { headers, payload: hex(m.body) };
}

test('event stream: @smithy/eventstream-codec messages decoded the same in every split', () => {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  const msgs = evsMessages();
  const frames = msgs.map((m) => codec.encode(m));
  // every message alone, and the whole sequence as one stream
  const streams = [...frames.map(hex), frames.map(hex).join('')];
  const out = drive('evs', streams);
  for (let i = 0; i < frames.length; i++) {
    assert.equal(out[i].error, undefined);
    assert.equal(out[i].splits_agree, true, `message ${i}`);
    // the reference's own decoding of its frame agrees with ours
    const back = codec.decode(frames[i]);
    assert.deepEqual(out[i].messages, [expected(back)]);
    assert.deepEqual(out[i].messages, [expected(msgs[i])]);
  }
  const all = out[frames.length];
  assert.equal(all.splits_agree, true);
  assert.deepEqual(all.messages, msgs.map(expected));
});

test('event stream: a flipped byte anywhere fails the CRC or the lengths, in every split', () => {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  const frame = codec.encode(evsMessages()[1]);
  const streams = [];
  for (let i = 0; i < frame.length; i += 3) {
    const f = Uint8Array.from(frame);
    f[i] ^= 0x5a;
    streams.push(hex(f));
  }
  streams.push(hex(frame.subarray(0, frame.length - 1)));     // cut short
  const out = drive('evs', streams);
  for (const r of out) {
    assert.ok(r.error, JSON.stringify(r));
    assert.deepEqual(r.messages, []);
    assert.equal(r.splits_agree, true);
  }
});
