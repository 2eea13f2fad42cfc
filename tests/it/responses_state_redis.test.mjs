// The Responses API's conversation state on Redis (state.redis): two real
// gateway replicas share one real redis-server (started here), so a response
// stored through one is read, continued and deleted through the other; with
// Redis killed, reads and continuations are a 503 that says so, answers are
// still served (their record refused and counted) and the process stays up;
// once Redis is back the replicas store again. Official `openai` SDK.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmsim, startSpillway, getJSON, waitFor } from './lib/harness.mjs';
import { startRedis } from './lib/redis.mjs';
import { ALICE, BOB, assertResponse, client, config, metric, received, clearReceived } from './responses_state_lib.mjs';

describe('stored responses shared through Redis', () => {
  let redis, edge, cloud, a, b;
  before(async () => {
    redis = await startRedis();
    edge = await startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '1000']);
    cloud = await startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0']);
    const yaml = config({
      edgeUrl: edge.url, cloudUrl: cloud.url,
      responses: `state:\n  redis: "${redis.url}"\n  key_prefix: "it-rstate:"\n  timeout_ms: 3000\n  replicas: 2`,
    });
    a = await startSpillway(yaml);
    b = await startSpillway(yaml);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await edge?.stop();
    await cloud?.stop();
    await redis?.stop();
  });

  test('stored on one replica, continued, read and deleted on the other', async () => {
    const r1 = await client(a).responses.create({ model: 'chat', input: 'remember the colour teal' });
    await clearReceived(edge);
    const r2 = await client(b).responses.create({ model: 'chat', previous_response_id: r1.id, input: 'which colour?' });
    assert.equal(r2.previous_response_id, r1.id);
    const msgs = (await received(edge)).at(-1).body.messages
      .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join('')));
    assert.deepEqual(msgs, ['remember the colour teal', 'remember the colour teal', 'which colour?']);
    const got = await client(a).responses.retrieve(r2.id);
    assertResponse(got);
    assert.deepEqual(got.output, r2.output);
    const items = await client(a).responses.inputItems.list(r2.id, { order: 'asc' });
    assert.equal(items.data.length, 3);
    // scoped across replicas too
    await assert.rejects(client(b, BOB).responses.retrieve(r1.id), (e) => e.status === 404);
    await client(b).responses.delete(r1.id);
    await assert.rejects(client(a).responses.retrieve(r1.id), (e) => e.status === 404);
    await assert.rejects(client(a).responses.create({ model: 'chat', previous_response_id: r1.id, input: 'x' }),
      (e) => e.status === 404 && e.code === 'previous_response_not_found');
    assert.ok(await metric(a, 'spillway_responses_stored{store="redis"}') === 0, 'Redis holds the records, not the replica');
  });

  test('a client that leaves while its previous response is being fetched: dropped, nothing relayed', async () => {
    const kept = await client(a).responses.create({ model: 'chat', input: 'wait for me' });
    await clearReceived(edge);
    const inFlight = async () => (await getJSON(`${a.url}/healthz`)).body.in_flight;
    // Redis holds every other client's commands for 1.5 s (the replica waits
    // up to timeout_ms, 3 s): the pause is in force once this answers
    assert.match(await redis.command('CLIENT', 'PAUSE', '1500', 'ALL'), /OK/);
    const ac = new AbortController();
    let answered = null;
    const sent = fetch(`${a.url}/v1/responses`, {
      method: 'POST', signal: ac.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ALICE}` },
      body: JSON.stringify({ model: 'chat', previous_response_id: kept.id, input: 'never mind' }),
    }).then(async (r) => { answered = `${r.status} ${await r.text()}`; }).catch(() => null);
    await waitFor(async () => { if (answered) throw new Error(`answered: ${answered}`); return (await inFlight()) === 1; }, { timeout: 5000, what: 'the fetch of the previous response pending' });
    ac.abort();
    await sent;
    await waitFor(async () => (await inFlight()) === 0, { timeout: 5000, what: 'the request no longer in flight' });
    // Redis answered the fetch by now (replies come in order): a later read is served
    const got = await waitFor(async () => {
      const g = await getJSON(`${a.url}/v1/responses/${kept.id}`, { headers: { authorization: `Bearer ${ALICE}` } });
      return g.status === 200 ? g : null;
    }, { timeout: 10000, what: 'the store answering again' });
    assert.equal(got.body.id, kept.id);
    assert.deepEqual((await received(edge)).map((r) => JSON.stringify(r).slice(0, 300)), [], 'the request of a client gone never reached a backend');
    assert.equal(await inFlight(), 0);
  });

  test('a drain waits for a request whose previous response is being fetched, then serves it', async () => {
    const yaml = config({
      edgeUrl: edge.url, cloudUrl: cloud.url,
      responses: `state:\n  redis: "${redis.url}"\n  key_prefix: "it-rstate:"\n  timeout_ms: 3000\n  replicas: 2`,
    });
    const c = await startSpillway(yaml);
    try {
      const kept = await client(c).responses.create({ model: 'chat', input: 'drain me' });
      assert.match(await redis.command('CLIENT', 'PAUSE', '500', 'ALL'), /OK/);
      const pending = client(c).responses.create({ model: 'chat', previous_response_id: kept.id, input: 'still here' });
      await waitFor(async () => (await getJSON(`${c.url}/healthz`)).body.in_flight === 1,
        { timeout: 5000, what: 'the fetch of the previous response pending' });
      c.proc.kill('SIGTERM');
      const r = await pending;
      assert.equal(r.status, 'completed');
      assert.equal(r.previous_response_id, kept.id);
      await c.exited;
      assert.equal(c.proc.exitCode, 0);
    } finally {
      await c.stop();
    }
  });

  test('Redis killed: a clear 503 for reads and continuations, answers still served, the process up; back: stored again', async () => {
    const kept = await client(a).responses.create({ model: 'chat', input: 'before the outage' });
    await redis.kill();
    try {
      // the replica notices the loss (the connection's end, or a round trip's timeout)
      const got = await waitFor(async () => {
        const g = await getJSON(`${a.url}/v1/responses/${kept.id}`, { headers: { authorization: `Bearer ${ALICE}` } });
        assert.notEqual(g.status, 404, 'the record was not lost');
        return g.status === 503 ? g : null;
      }, { timeout: 10000, every: 50, what: 'replica a sees Redis gone' });
      assert.equal(got.body.error.code, 'store_unavailable');
      assert.match(got.body.error.message, /response store.*unreachable/i);
      assert.match(got.headers.get('x-request-id'), /^sw-/);
      await assert.rejects(client(a).responses.create({ model: 'chat', previous_response_id: kept.id, input: 'x' }),
        (e) => e.status === 503 && e.code === 'store_unavailable');
      const refusedBefore = await metric(a, 'spillway_responses_store_refused_total{store="redis"}');
      const served = await client(a).responses.create({ model: 'chat', input: 'during the outage' });
      assert.equal(served.status, 'completed');
      await waitFor(async () => (await metric(a, 'spillway_responses_store_refused_total{store="redis"}')) === refusedBefore + 1,
        { timeout: 5000, what: 'the record refused and counted' });
      assert.equal((await getJSON(`${a.url}/healthz`)).status, 200);
    } finally {
      await redis.restart();
    }
    // back (an empty Redis: a crash without persistence): stored and shared again
    const after = await waitFor(async () => {
      const r = await client(a).responses.create({ model: 'chat', input: 'after the outage' });
      const g = await getJSON(`${b.url}/v1/responses/${r.id}`, { headers: { authorization: `Bearer ${ALICE}` } });
      return g.status === 200 ? g.body : null;
    }, { timeout: 15000, every: 200, what: 'a response stored again once Redis is back' });
    assert.equal(after.object, 'response');
    assert.equal(a.proc.exitCode, null);
    assert.equal(b.proc.exitCode, null);
  });
});
