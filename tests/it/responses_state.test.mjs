// The Responses API's conversation state through the official `openai` SDK:
// `store` (the default) keeps a response, `previous_response_id` continues
// it (the backend sees the earlier turns, without the earlier
// instructions), GET /v1/responses/{id} reads it back, its input items page
// (limit, order, after), DELETE drops it; another key's record and an
// unknown id are 404s; the TTL and the entry bound drop records (counted in
// /metrics); a sensitive conversation stays sensitive when continued, so its
// continuation never reaches the cloud under overflow. The retrieved
// objects carry what the official spec's schemas require
// (tests/spec/openai_responses.json at its pinned commit).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, getJSON, waitFor } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';
import {
  ADMIN, ALICE, BOB, SPEC, SPEC_COMMIT, assertResponse, assertSchema, clearReceived, client, config, metric, received,
} from './responses_state_lib.mjs';

const text = (r) => r.output.filter((i) => i.type === 'message')
  .flatMap((i) => i.content).filter((p) => p.type === 'output_text').map((p) => p.text).join('');

// What a chat backend was sent for the last request: its messages, role and text.
function lastMessages(reqs) {
  const body = reqs.at(-1).body;
  return body.messages.map((m) => ({
    role: m.role,
    text: typeof m.content === 'string' ? m.content : (m.content || []).map((p) => p.text).join(''),
  }));
}

describe('stored responses (memory)', () => {
  let edge, cloud, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '1000']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '1000']);
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url }));
  });
  after(async () => {
    await gw?.stop();
    await edge?.stop();
    await cloud?.stop();
  });

  test('the schema file is the pinned spec', () => {
    assert.equal(SPEC.commit, SPEC_COMMIT);
  });

  test('store, then previous_response_id: the backend sees the earlier turns, not the earlier instructions', async () => {
    const c = client(gw);
    const r1 = await c.responses.create({ model: 'chat', instructions: 'answer in one word', input: 'my name is Ann' });
    assert.equal(r1.status, 'completed');
    assert.equal(r1.store, true);
    assert.equal(text(r1), 'my name is Ann');
    await clearReceived(edge);
    const r2 = await c.responses.create({
      model: 'chat', previous_response_id: r1.id, instructions: 'be kind',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'what is my name?' }] }],
    });
    assert.equal(r2.status, 'completed');
    assert.equal(r2.previous_response_id, r1.id);
    assert.deepEqual(lastMessages(await received(edge)), [
      { role: 'system', text: 'be kind' },
      { role: 'user', text: 'my name is Ann' },
      { role: 'assistant', text: 'my name is Ann' },
      { role: 'user', text: 'what is my name?' },
    ]);
    // a third turn carries both earlier ones
    await clearReceived(edge);
    await c.responses.create({ model: 'chat', previous_response_id: r2.id, input: 'thanks' });
    assert.deepEqual(lastMessages(await received(edge)).map((m) => m.text),
      ['my name is Ann', 'my name is Ann', 'what is my name?', 'what is my name?', 'thanks']);
  });

  test('streamed answers are stored too, and continue the same way', async () => {
    const c = client(gw);
    const stream = c.responses.stream({ model: 'chat', input: 'streamed turn' });
    const r1 = await stream.finalResponse();
    const got = await c.responses.retrieve(r1.id);
    assert.equal(got.id, r1.id);
    assert.equal(text(got), 'streamed turn');
    await clearReceived(edge);
    const s2 = c.responses.stream({ model: 'chat', previous_response_id: r1.id, input: 'next' });
    await s2.finalResponse();
    assert.deepEqual(lastMessages(await received(edge)).map((m) => m.text), ['streamed turn', 'streamed turn', 'next']);
  });

  test('retrieve gives the stored Response object, valid against the spec', async () => {
    const c = client(gw);
    const r = await c.responses.create({ model: 'chat', input: 'keep me', metadata: { k: 'v' } });
    const got = await c.responses.retrieve(r.id);
    assertResponse(got);
    assert.equal(got.id, r.id);
    assert.equal(got.object, 'response');
    assert.equal(got.status, 'completed');
    assert.deepEqual(got.output, r.output);
    assert.deepEqual(got.usage, r.usage);
    assert.deepEqual(got.metadata, { k: 'v' });
    // the raw answer carries X-Request-Id like every other
    const raw = await fetch(`${gw.url}/v1/responses/${r.id}`, { headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get('x-request-id'), /^sw-/);
  });

  test('input items: newest first by default, limit, order and after page through them', async () => {
    const c = client(gw);
    const r1 = await c.responses.create({ model: 'chat', input: 'one' });
    const r2 = await c.responses.create({
      model: 'chat', previous_response_id: r1.id,
      input: [{ role: 'user', content: 'two' }, { role: 'user', content: 'three' }],
    });
    const page = await c.responses.inputItems.list(r2.id);
    const texts = (items) => items.map((i) => (i.content || []).map((p) => p.text).join(''));
    assert.deepEqual(texts(page.data), ['three', 'two', 'one', 'one']);
    assert.deepEqual(page.data.map((i) => i.role), ['user', 'user', 'assistant', 'user']);
    for (const i of page.data) {
      assert.equal(i.type, 'message');
      assert.match(i.id, /^msg_/);
      assertSchema('Item', i); // the spec's input item shapes
    }
    assert.equal(page.has_more, false);
    // pages of one, oldest first: the SDK follows `after` until has_more is false
    const seen = [];
    for await (const item of c.responses.inputItems.list(r2.id, { limit: 1, order: 'asc' })) seen.push(item);
    assert.deepEqual(texts(seen), ['one', 'one', 'two', 'three']);
    const first = await getJSON(`${gw.url}/v1/responses/${r2.id}/input_items?limit=2&order=asc`, { headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(first.body.object, 'list');
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.first_id, first.body.data[0].id);
    assert.equal(first.body.last_id, first.body.data[1].id);
    const rest = await getJSON(`${gw.url}/v1/responses/${r2.id}/input_items?order=asc&after=${first.body.last_id}`, { headers: { authorization: `Bearer ${ALICE}` } });
    assert.deepEqual(texts(rest.body.data), ['two', 'three']);
    assert.equal(rest.body.has_more, false);
    // an output item sent back as input while continuing (so its id is in the
    // record twice) gets an id of its own: the pages still end, every item once
    const r3 = await c.responses.create({
      model: 'chat', previous_response_id: r2.id, input: [...r2.output, { role: 'user', content: 'four' }],
    });
    const all = [];
    for await (const item of c.responses.inputItems.list(r3.id, { limit: 2 })) all.push(item);
    assert.equal(all.length, 4 + 1 + 2);
    assert.equal(new Set(all.map((i) => i.id)).size, all.length);
    // a cursor that names no item, a limit out of range: 400 naming the parameter
    const bad = await getJSON(`${gw.url}/v1/responses/${r2.id}/input_items?after=msg_nope`, { headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'after');
    const big = await getJSON(`${gw.url}/v1/responses/${r2.id}/input_items?limit=101`, { headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(big.status, 400);
    assert.equal(big.body.error.param, 'limit');
  });

  test('an input written as a client writes it (indented, escaped) is read back and continued as its items', async () => {
    const input = [
      { role: 'user', content: [{ type: 'input_text', text: 'caf\u00e9 "quoted"\n\tline two' }] },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'and then?' },
    ];
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      // indented, and the accented letter escaped as \u00e9 the way Python's json.dumps writes it
      body: JSON.stringify({ model: 'chat', input }, null, 2).replace(/\u00e9/g, '\\u00e9'),
    });
    assert.equal(res.status, 200);
    const r1 = await res.json();
    const c = client(gw);
    const page = await c.responses.inputItems.list(r1.id, { order: 'asc' });
    const texts = (items) => items.map((i) => (typeof i.content === 'string' ? i.content
      : (i.content || []).map((p) => p.text).join('')));
    assert.deepEqual(texts(page.data), ['caf\u00e9 "quoted"\n\tline two', 'ok', 'and then?']);
    await clearReceived(edge);
    await c.responses.create({ model: 'chat', previous_response_id: r1.id, input: 'last' });
    const sent = lastMessages(await received(edge)).map((m) => m.text);
    assert.deepEqual(sent.slice(0, 3), ['caf\u00e9 "quoted"\n\tline two', 'ok', 'and then?']);
    assert.equal(sent.at(-1), 'last');
    // the member's name written with an escape (a JSON writer may): the same continuation
    await clearReceived(edge);
    const esc = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', previous_response_id: r1.id, input: 'escaped name' })
        .replace('"previous_response_id"', '"previous\\u005fresponse_id"'),
    });
    assert.equal(esc.status, 200, await esc.text());
    const sentEsc = lastMessages(await received(edge)).map((m) => m.text);
    assert.deepEqual(sentEsc.slice(0, 3), ['caf\u00e9 "quoted"\n\tline two', 'ok', 'and then?']);
    assert.equal(sentEsc.at(-1), 'escaped name');
  });

  test('delete: the OpenAI answer, then 404 everywhere, and no continuation', async () => {
    const c = client(gw);
    const r = await c.responses.create({ model: 'chat', input: 'short-lived' });
    const del = await getJSON(`${gw.url}/v1/responses/${r.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, { id: r.id, object: 'response', deleted: true });
    await assert.rejects(c.responses.retrieve(r.id), (e) => e.status === 404 && e.error?.type === 'invalid_request_error');
    await assert.rejects(c.responses.delete(r.id), (e) => e.status === 404);
    await assert.rejects(c.responses.inputItems.list(r.id), (e) => e.status === 404);
    await assert.rejects(c.responses.create({ model: 'chat', previous_response_id: r.id, input: 'more' }),
      (e) => e.status === 404 && e.code === 'previous_response_not_found' && e.param === 'previous_response_id');
    // the SDK's own delete
    const r2 = await c.responses.create({ model: 'chat', input: 'sdk delete' });
    await c.responses.delete(r2.id);
    await assert.rejects(c.responses.retrieve(r2.id), (e) => e.status === 404);
    // a record holds the whole conversation: deleting an earlier turn does not break a later one
    const t1 = await c.responses.create({ model: 'chat', input: 'turn one' });
    const t2 = await c.responses.create({ model: 'chat', previous_response_id: t1.id, input: 'turn two' });
    await c.responses.delete(t1.id);
    await clearReceived(edge);
    await c.responses.create({ model: 'chat', previous_response_id: t2.id, input: 'turn three' });
    assert.deepEqual(lastMessages(await received(edge)).map((m) => m.text),
      ['turn one', 'turn one', 'turn two', 'turn two', 'turn three']);
  });

  test('a record belongs to its key: another key gets 404 for it, as for an unknown id', async () => {
    const r = await client(gw).responses.create({ model: 'chat', input: 'alice only' });
    const bob = client(gw, BOB);
    await assert.rejects(bob.responses.retrieve(r.id), (e) => e.status === 404);
    await assert.rejects(bob.responses.inputItems.list(r.id), (e) => e.status === 404);
    await assert.rejects(bob.responses.delete(r.id), (e) => e.status === 404);
    await assert.rejects(bob.responses.create({ model: 'chat', previous_response_id: r.id, input: 'x' }),
      (e) => e.status === 404 && e.code === 'previous_response_not_found');
    const unknown = await getJSON(`${gw.url}/v1/responses/resp_0000unknown`, { headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(unknown.status, 404);
    assert.deepEqual(Object.keys(unknown.body.error).sort(), ['code', 'message', 'param', 'type']);
    assert.match(unknown.headers.get('x-request-id'), /^sw-/);
    // still there for alice
    assert.equal((await client(gw).responses.retrieve(r.id)).id, r.id);
    // no key at all: 401 before anything
    const anon = await getJSON(`${gw.url}/v1/responses/${r.id}`);
    assert.equal(anon.status, 401);
  });

  test('store: false keeps nothing', async () => {
    const c = client(gw);
    const r = await c.responses.create({ model: 'chat', input: 'forget me', store: false });
    assert.equal(r.store, false);
    await assert.rejects(c.responses.retrieve(r.id), (e) => e.status === 404);
    await assert.rejects(c.responses.create({ model: 'chat', previous_response_id: r.id, input: 'x' }),
      (e) => e.status === 404 && e.code === 'previous_response_not_found');
  });

  test('a sensitive first turn keeps its continuations off the cloud under overflow', async () => {
    const c = client(gw);
    const edgeQueued = async () => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } }))
      .body.backends.find((b) => b.name === 'edge').queued;
    // A continuation of `prev`, sent while the only local slot is held: it
    // must wait for local (queued), the cloud receiving nothing; then served
    // by edge once the slot is free.
    const continuedLocally = async (prev) => {
      const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: { authorization: `Bearer ${ALICE}` } });
      let released = false;
      try {
        await clearReceived(cloud);
        const pending = c.responses.create({ model: 'chat', previous_response_id: prev, input: 'go on' }).withResponse();
        await waitFor(async () => (await edgeQueued()) === 1, { timeout: 10000, what: 'the continuation queued for local' });
        assert.equal((await received(cloud)).length, 0, 'the continuation of a sensitive conversation never reached the cloud');
        await hold.release();
        released = true;
        const served = await pending;
        assert.equal(served.response.headers.get('x-spillway-backend'), 'edge');
        assert.equal((await received(cloud)).length, 0);
        return served.data;
      } finally {
        if (!released) await hold.release();
      }
    };
    // both first turns are served locally (nothing is busy yet)
    const plain = await c.responses.create({ model: 'chat', input: 'nothing special' });
    const secret = await c.responses.create({ model: 'chat', input: 'nothing special either' },
      { headers: { 'x-spillway-sensitive': 'true' } });
    // control: a plain conversation's continuation overflows to the cloud
    const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: { authorization: `Bearer ${ALICE}` } });
    try {
      await clearReceived(cloud);
      const spilled = await c.responses.create({ model: 'chat', previous_response_id: plain.id, input: 'go on' })
        .withResponse();
      assert.equal(spilled.response.headers.get('x-spillway-backend'), 'cloud');
      assert.equal(spilled.response.headers.get('x-spillway-reason'), 'overflow');
      assert.equal((await received(cloud)).length, 1);
    } finally {
      await hold.release();
    }
    // the sensitive one's continuation, without PII or header, stays local;
    // what it made is sensitive in turn, and so on
    const second = await continuedLocally(secret.id);
    await continuedLocally(second.id);
  });

  test('the store counts in /metrics, never content', async () => {
    const before = await metric(gw, 'spillway_responses_stored{store="memory"}');
    const c = client(gw);
    await c.responses.create({ model: 'chat', input: 'zq-metric-marker-71' });
    assert.equal(await metric(gw, 'spillway_responses_stored{store="memory"}'), before + 1);
    assert.ok(await metric(gw, 'spillway_responses_stored_bytes{store="memory"}') > 0);
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    assert.ok(!text.includes('zq-metric-marker-71'));
    assert.ok(!gw.output().includes('zq-metric-marker-71'), 'no stored value in the log');
  });
});

describe('store bounds', () => {
  let edge, cloud;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']);
  });
  after(async () => {
    await edge?.stop();
    await cloud?.stop();
  });

  test('responses.store_ttl_s: a record is gone after its TTL (counted as expired)', async () => {
    const gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, responses: 'responses:\n  store_ttl_s: 1' }));
    try {
      const c = client(gw);
      const r = await c.responses.create({ model: 'chat', input: 'brief' });
      assert.equal((await c.responses.retrieve(r.id)).id, r.id);
      await waitFor(async () => (await getJSON(`${gw.url}/v1/responses/${r.id}`, { headers: { authorization: `Bearer ${ALICE}` } })).status === 404,
        { timeout: 5000, every: 100, what: 'the record to expire' });
      assert.equal(await metric(gw, 'spillway_responses_expired_total{store="memory"}'), 1);
      await assert.rejects(c.responses.create({ model: 'chat', previous_response_id: r.id, input: 'x' }),
        (e) => e.status === 404 && e.code === 'previous_response_not_found');
    } finally {
      await gw.stop();
    }
  });

  test('responses.store_max_entries: storing one more evicts the oldest; a reload applies a lower bound', async () => {
    const yaml = (n) => config({ edgeUrl: edge.url, cloudUrl: cloud.url, responses: `responses:\n  store_max_entries: ${n}` });
    const gw = await startSpillway(yaml(3));
    try {
      const c = client(gw);
      const ids = [];
      for (const input of ['a', 'b', 'c', 'd']) ids.push((await c.responses.create({ model: 'chat', input })).id);
      await assert.rejects(c.responses.retrieve(ids[0]), (e) => e.status === 404);
      for (const id of ids.slice(1)) assert.equal((await c.responses.retrieve(id)).id, id);
      assert.equal(await metric(gw, 'spillway_responses_evicted_total{store="memory"}'), 1);
      assert.equal(await metric(gw, 'spillway_responses_stored{store="memory"}'), 3);
      // a reload to 1 keeps only the newest
      const { writeFileSync } = await import('node:fs');
      writeFileSync(gw.configFile, yaml(1));
      const rel = await getJSON(`${gw.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(rel.status, 200);
      assert.equal(await metric(gw, 'spillway_responses_stored{store="memory"}'), 1);
      await assert.rejects(c.responses.retrieve(ids[2]), (e) => e.status === 404);
      assert.equal((await c.responses.retrieve(ids[3])).id, ids[3]);
    } finally {
      await gw.stop();
    }
  });
});

describe('continued conversations and the privacy floor', () => {
  let edge, cloud, gw;
  const EMAIL = 'ann.zq.rstate@example.org';
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '1000']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '1000']);
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, extra: 'pii:\n  policy: mask' }));
  });
  after(async () => {
    await gw?.stop();
    await edge?.stop();
    await cloud?.stop();
  });

  test('pii.policy mask: the earlier turns are masked like the input on their way to the cloud; stored as sent', async () => {
    const c = client(gw);
    const r1 = await c.responses.create({ model: 'chat', input: `write to ${EMAIL}` });
    assert.equal(text(r1), `write to ${EMAIL}`);
    const hold = await holdLocal(gw, edge, { admin: ADMIN, headers: { authorization: `Bearer ${ALICE}` } });
    try {
      await clearReceived(cloud);
      const r2 = await c.responses.create({ model: 'chat', previous_response_id: r1.id, input: 'go on' }).withResponse();
      assert.equal(r2.response.headers.get('x-spillway-backend'), 'cloud');
      const sent = JSON.stringify((await received(cloud)).at(-1).body);
      assert.ok(!sent.includes(EMAIL), 'no earlier turn reached the cloud unmasked');
      assert.match(sent, /write to /);
      // what is stored is what the client sent and got
      const items = await c.responses.inputItems.list(r2.data.id, { order: 'asc' });
      assert.ok(JSON.stringify(items.data).includes(EMAIL));
    } finally {
      await hold.release();
    }
  });
});

describe('a backend of the Responses API', () => {
  let edge, cloud, gw;
  before(async () => {
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '1000']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']);
    gw = await startSpillway(config({ edgeUrl: edge.url, cloudUrl: cloud.url, edge: ', dialect: responses' }));
  });
  after(async () => {
    await gw?.stop();
    await edge?.stop();
    await cloud?.stop();
  });

  test('gets the whole conversation as input items, never the gateway\'s previous_response_id', async () => {
    const c = client(gw);
    const r1 = await c.responses.create({ model: 'chat', input: 'first native turn' });
    await clearReceived(edge);
    const r2 = await c.responses.create({ model: 'chat', previous_response_id: r1.id, input: 'second' });
    const [sent] = await received(edge);
    assert.equal(sent.path, '/v1/responses');
    assert.ok(!('previous_response_id' in sent.body));
    const texts = sent.body.input.map((i) => (typeof i.content === 'string' ? i.content : i.content.map((p) => p.text).join('')));
    assert.deepEqual(texts, ['first native turn', 'first native turn', 'second']);
    const got = await c.responses.retrieve(r2.id);
    assertResponse(got);
    assert.deepEqual(got.output, r2.output);
  });
});
