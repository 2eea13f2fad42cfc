// What the per-request fast paths must keep true: model names are written
// into the upstream request and the answer as exact JSON strings whatever
// characters they hold, request bodies of any size on one keep-alive
// connection arrive whole (buffers are reused between requests), and each
// answer carries its own request id and route headers.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startLlmsim, startSpillway, getJSON } from './lib/harness.mjs';

// Quote, backslash, slash and a non-ASCII letter: each needs care in JSON
// (control characters are refused in names by the config check).
const PUBLIC = 'chat "quoted" \\ back\\slash/ü';
const PUBLIC_ASCII = 'plain "q" \\ /';
const UPSTREAM = 'edge "model" \\ /x';

describe('per-request fast paths', () => {
  let edge, gw;
  before(async () => {
    edge = await startLlmsim(['--reply', 'echo', '--decode-tps', '20000']);
    gw = await startSpillway(`
listen: "127.0.0.1:0"
backends:
  - name: edge
    tier: local
    url: "${edge.url}"
    model: ${JSON.stringify(UPSTREAM)}
    slots: 4
models:
  - name: ${JSON.stringify(PUBLIC)}
    backends: [edge]
  - name: ${JSON.stringify(PUBLIC_ASCII)}
    backends: [edge]
limits:
  max_body_bytes: 65536
`);
  });
  after(async () => { await gw?.stop(); await edge?.stop(); });

  const client = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });

  test('model names with JSON escapes reach the upstream and come back byte for byte', async () => {
    for (const model of [PUBLIC, PUBLIC_ASCII]) {
      const data = await client().chat.completions.create({
        model, messages: [{ role: 'user', content: 'names' }], max_tokens: 16,
      });
      assert.equal(data.model, model);
      assert.equal(data.choices[0].message.content, 'names');
      const last = (await getJSON(`${edge.url}/admin/received`)).body.requests.at(-1);
      assert.equal(last.body.model, UPSTREAM);
    }
  });

  test('bodies of growing and shrinking sizes on one connection each arrive whole', async () => {
    const c = client();
    // Under, at and over the 4 KB reused body buffer, then small again.
    const sizes = [3000, 40, 4090, 9000, 100, 12000, 5];
    const ids = new Set();
    for (const [i, n] of sizes.entries()) {
      const text = `${i}:` + 'abcdefghij'.repeat(Math.ceil(n / 10)).slice(0, n);
      const { data, response } = await c.chat.completions
        .create({
          model: PUBLIC_ASCII, messages: [{ role: 'user', content: text }],
          max_tokens: Math.ceil(text.length / 4) + 4,
        })
        .withResponse();
      assert.equal(data.choices[0].message.content, text, `request ${i} (${n} bytes)`);
      const id = response.headers.get('x-request-id');
      assert.match(id, /^sw-[0-9a-f]{8}-[0-9a-f]{6}$/);
      ids.add(id);
      assert.equal(response.headers.get('x-spillway-backend'), 'edge');
      assert.equal(response.headers.get('x-spillway-tier'), 'local');
    }
    assert.equal(ids.size, sizes.length, 'every answer has its own request id');
  });
});
