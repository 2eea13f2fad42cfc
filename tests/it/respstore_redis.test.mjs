// The Responses API's response store on a real Redis (src/state/respredis.c),
// driven by build/tests/respstore_drive: round trip with the sensitive flag,
// scopes, delete, the record's key and its EXPIRE, two replicas sharing one
// Redis, both bounds evicting the oldest across replicas, the TTL, Redis
// going away and coming back; and no stored value in any log line.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { BUILD, waitFor } from './lib/harness.mjs';
import { startRedis } from './lib/redis.mjs';

const MARKER = 'zq-stored-value-5e1d';
const PREFIX = 'it:';

// One driver process (a "replica"): cmd(...fields) resolves with the answer line's fields.
async function startDriver(url, { entries = 100, bytes = 1 << 20, ttl = 60 } = {}) {
  const proc = spawn(join(BUILD, 'tests', 'respstore_drive'), [url, PREFIX, String(entries), String(bytes), String(ttl)],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d) => { err += d.toString(); });
  const lines = [];
  const waiters = [];
  createInterface({ input: proc.stdout }).on('line', (l) => {
    if (waiters.length) waiters.shift()(l);
    else lines.push(l);
  });
  const next = () => new Promise((res, rej) => {
    if (lines.length) return res(lines.shift());
    const t = setTimeout(() => rej(new Error(`respstore_drive: no answer within 10 s\n${err}`)), 10000);
    waiters.push((l) => { clearTimeout(t); res(l); });
  });
  assert.equal(await next(), 'ready');
  const exited = new Promise((res) => proc.on('exit', res));
  return {
    async cmd(...fields) {
      proc.stdin.write(`${fields.join('\t')}\n`);
      return (await next()).split('\t');
    },
    stderr: () => err,
    async stop() {
      proc.stdin.end();
      await exited;
      // the sanitizer build: the store ended without a report (leaks, use-after-free, UB)
      if (/ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/.test(err)) throw new Error(`respstore_drive: sanitizer report:\n${err}`);
    },
  };
}

const put = (d, id, scope, sensitive, input = `[{"id":"m1","type":"message","content":"${MARKER}"}]`) =>
  d.cmd('put', id, scope, sensitive ? '1' : '0', '1700000000', input, `[{"id":"o_${id}","type":"message"}]`, '{"model":"chat"}');

describe('response store on Redis', () => {
  let redis, a, b;
  before(async () => {
    redis = await startRedis();
    a = await startDriver(redis.url);
    b = await startDriver(redis.url);
  });
  after(async () => { await a?.stop(); await b?.stop(); await redis?.stop(); });

  test('round trip with the sensitive flag and meta, scopes, delete; one hash per record with EXPIRE', async () => {
    assert.deepEqual(await put(a, 'resp_s', 'app', true), ['ok']);
    assert.deepEqual(await put(a, 'resp_p', 'app', false, '[]'), ['ok']);
    const got = await a.cmd('get', 'resp_s', 'app');
    assert.deepEqual(got, ['ok', '1', '1700000000', `[{"id":"m1","type":"message","content":"${MARKER}"}]`,
      '[{"id":"o_resp_s","type":"message"}]', '{"model":"chat"}']);
    assert.equal((await a.cmd('get', 'resp_p', 'app'))[1], '0');
    // another replica reads what this one stored
    assert.deepEqual((await b.cmd('get', 'resp_s', 'app')).slice(0, 2), ['ok', '1']);
    // another scope sees nothing, and cannot delete it
    assert.deepEqual(await b.cmd('get', 'resp_s', 'other'), ['err', 'not_found']);
    assert.deepEqual(await b.cmd('del', 'resp_s', 'other'), ['err', 'not_found']);
    // nor replace it with a record of its own under the same id
    const refused = Number((await b.cmd('stats'))[3]);
    assert.deepEqual(await put(b, 'resp_s', 'other', false), ['err', 'invalid']);
    assert.equal(Number((await b.cmd('stats'))[3]), refused + 1);
    assert.deepEqual((await a.cmd('get', 'resp_s', 'app')).slice(0, 2), ['ok', '1']);
    const list = await b.cmd('list', 'resp_s', 'app', '10', 'asc', '');
    assert.equal(list[0], 'ok');
    assert.deepEqual(JSON.parse(list[1]).data.map((i) => i.id), ['m1']);

    assert.equal(await redis.command('TYPE', `${PREFIX}resp:r:resp_s`), '+hash\r\n');
    const ttl = Number((await redis.command('TTL', `${PREFIX}resp:r:resp_s`)).slice(1));
    assert.ok(ttl > 0 && ttl <= 60, `TTL ${ttl}`);

    assert.deepEqual(await b.cmd('del', 'resp_s', 'app'), ['ok']);
    assert.deepEqual(await a.cmd('get', 'resp_s', 'app'), ['err', 'not_found']);
    assert.deepEqual(await a.cmd('del', 'resp_s', 'app'), ['err', 'not_found']);
    assert.equal(await redis.command('EXISTS', `${PREFIX}resp:r:resp_s`), ':0\r\n');
    assert.deepEqual(await a.cmd('del', 'resp_p', 'app'), ['ok']);
  });

  test('max_entries and max_bytes hold across replicas: the oldest goes first', async () => {
    for (const d of [a, b]) assert.deepEqual(await d.cmd('limits', '3', String(1 << 20), '60'), ['ok']);
    assert.deepEqual(await put(a, 'e1', 'k', false), ['ok']);
    assert.deepEqual(await put(b, 'e2', 'k', true), ['ok']);
    assert.deepEqual(await put(a, 'e3', 'k', false), ['ok']);
    assert.deepEqual(await put(b, 'e4', 'k', false), ['ok']);
    assert.deepEqual(await a.cmd('get', 'e1', 'k'), ['err', 'not_found']);
    for (const id of ['e2', 'e3', 'e4']) assert.equal((await a.cmd('get', id, 'k'))[0], 'ok', id);
    assert.equal((await b.cmd('stats'))[1], '1', 'one eviction counted by the replica that made it');
    assert.equal(await redis.command('ZCARD', `${PREFIX}resp:index`), ':3\r\n');

    // bytes: room for about two records of 3000 bytes
    const big = `[${'"x",'.repeat(749)}"x"]`;
    for (const d of [a, b]) assert.deepEqual(await d.cmd('limits', '100', '7000', '60'), ['ok']);
    assert.deepEqual(await put(a, 'b1', 'k', false, big), ['ok']);
    assert.deepEqual(await put(b, 'b2', 'k', false, big), ['ok']);
    assert.deepEqual(await put(a, 'b3', 'k', false, big), ['ok']);
    assert.deepEqual(await b.cmd('get', 'b1', 'k'), ['err', 'not_found']);
    assert.equal((await b.cmd('get', 'b2', 'k'))[0], 'ok');
    assert.equal((await b.cmd('get', 'b3', 'k'))[0], 'ok');
    const total = Number((await redis.command('GET', `${PREFIX}resp:bytes`)).split('\r\n')[1]);
    assert.ok(total > 6000 && total <= 7000, `bytes ${total}`);
    // a record larger than the store: refused before Redis sees it
    assert.deepEqual(await put(a, 'huge', 'k', false, `[${'"x",'.repeat(2000)}"x"]`), ['err', 'too_big']);
    assert.equal((await b.cmd('get', 'b2', 'k'))[0], 'ok');
    for (const d of [a, b]) await d.cmd('limits', '100', String(1 << 20), '60');
  });

  test('the TTL: a record is gone once its time is up', async () => {
    await a.cmd('limits', '100', String(1 << 20), '1');
    assert.deepEqual(await put(a, 'short', 'k', true), ['ok']);
    await waitFor(async () => (await b.cmd('get', 'short', 'k'))[1] === 'not_found',
      { timeout: 5000, every: 100, what: 'the record to expire' });
    assert.equal(await redis.command('EXISTS', `${PREFIX}resp:r:short`), ':0\r\n');
    await a.cmd('limits', '100', String(1 << 20), '60');
  });

  test('Redis gone: calls answer unavailable at once; back: the store works again', async () => {
    await redis.kill();
    await waitFor(async () => ['unavailable', 'timeout'].includes((await a.cmd('get', 'e2', 'k'))[1]),
      { timeout: 5000, every: 50, what: 'the loss to be noticed' });
    const during = await put(a, 'during', 'k', true);
    assert.equal(during[0], 'err');
    assert.ok(['unavailable', 'timeout'].includes(during[1]), during.join(' '));
    await redis.restart();
    await waitFor(async () => (await a.cmd('get', 'nothing', 'k'))[1] === 'not_found',
      { timeout: 10000, every: 50, what: 'the reconnection' });
    assert.deepEqual(await put(a, 'after', 'k', true), ['ok']);
    assert.deepEqual((await b.cmd('get', 'after', 'k')).slice(0, 2), ['ok', '1']);
  });

  test('no stored value in any log line', () => {
    for (const d of [a, b]) assert.ok(!d.stderr().includes(MARKER), d.stderr());
    assert.match(a.stderr(), /lost the connection|no connection/, 'the loss was logged');
  });
});
