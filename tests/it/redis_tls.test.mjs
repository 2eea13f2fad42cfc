// Redis over TLS through a local tunnel (docs/scaling.md "Redis over TLS"):
// this build's hiredis has no TLS, so a TLS-only redis-server (started here,
// with its own test CA) is reached through HAProxy configured as the doc's
// recipe, and state.redis points at the tunnel's local end. A tunnel that
// does not trust the server's certificate gets the replica nowhere: it
// stays degraded, as with Redis down.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startLlmsim, startSpillway, waitFor, getJSON, tempDir, removeTempDir } from './lib/harness.mjs';
import { startRedis, freePort, makeTestCerts } from './lib/redis.mjs';

const ADMIN = 'sk-admin-test';
const admin = { authorization: `Bearer ${ADMIN}` };
const HAPROXY = ['/usr/sbin/haproxy', '/sbin/haproxy'].find((p) => existsSync(p)) || 'haproxy';

let dir, redis, sim;
const procs = [];
const gws = [];

function portOpen(port) {
  return new Promise((res) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); res(true); });
    s.once('error', () => res(false));
  });
}

// HAProxy as a TLS client tunnel: 127.0.0.1:<port> in plain text to the
// TLS-only Redis, verifying its certificate against caFile.
async function startTunnel(caFile) {
  const port = await freePort();
  const cfg = join(dir, `haproxy-${port}.cfg`);
  writeFileSync(cfg, `
defaults
  mode tcp
  timeout connect 2s
  timeout client 24h
  timeout server 24h
listen redis_tls
  bind 127.0.0.1:${port}
  server redis 127.0.0.1:${redis.port} ssl verify required ca-file ${caFile} sni str(localhost)
`);
  const proc = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { out += d; });
  const t = { proc, port, output: () => out };
  procs.push(t);
  await waitFor(async () => proc.exitCode === null && portOpen(port),
    { timeout: 10000, what: `haproxy listening on ${port}:\n${out}` });
  return t;
}

function config(port) {
  return `
listen: "127.0.0.1:0"
admin:
  key: "${ADMIN}"
state:
  redis: "redis://127.0.0.1:${port}"
  key_prefix: "tls${process.pid}:"
  timeout_ms: 500
backends:
  - { name: "local", tier: local, url: "${sim.url}", model: "m", slots: 2 }
models:
  - { name: "chat", backends: [local] }
`;
}

const state = async (gw) => (await getJSON(`${gw.url}/admin/state`, { headers: admin })).body;

describe('Redis over TLS through a local tunnel', () => {
  before(async () => {
    dir = tempDir('spillway-redis-tls-');
    makeTestCerts(dir);
    redis = await startRedis({ tls: { cert: join(dir, 'server.crt'), key: join(dir, 'server.key') } });
    sim = await startLlmsim(['--decode-tps', '0']);
  });
  after(async () => {
    await Promise.all(gws.map((g) => g.stop()));
    for (const t of procs) {
      if (t.proc.exitCode === null && t.proc.signalCode === null) t.proc.kill('SIGTERM');
    }
    await Promise.all(procs.map((t) => (t.proc.exitCode === null && t.proc.signalCode === null
      ? new Promise((r) => t.proc.on('exit', r)) : null)));
    await sim?.stop();
    await redis?.stop();
    if (dir) removeTempDir(dir);
  });

  test('replicas share state through the tunnel: connected, and an emergency declared on one is in force on the other', async () => {
    const tunnel = await startTunnel(join(dir, 'ca.crt'));
    gws.push(await startSpillway(config(tunnel.port)), await startSpillway(config(tunnel.port)));
    await waitFor(async () => (await Promise.all(gws.map(state))).every((s) => s.state.degraded === null),
      { timeout: 10000, what: `both replicas on Redis through the tunnel:\n${tunnel.output()}` });
    const r = await getJSON(`${gws[0].url}/admin/emergency`, {
      method: 'POST', headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ declared: true, reason: 'tls test' }),
    });
    assert.equal(r.status, 200);
    await waitFor(async () => (await state(gws[1])).emergency === true,
      { timeout: 5000, what: 'the emergency on the other replica (pub/sub through the tunnel)' });
    assert.equal((await state(gws[1])).emergency_reason, 'tls test');
  });

  test('a tunnel that does not trust the server certificate: the replica stays degraded, never claims shared state', async () => {
    const bad = await startTunnel(join(dir, 'other.crt'));
    const gw = await startSpillway(config(bad.port));
    gws.push(gw);
    // The tunnel accepts every TCP connection: only Redis's answers say
    // "connected". Two failed attempts, and never a claim of shared state.
    const failures = () => (gw.output().match(/state: (no connection to Redis|lost the connection to Redis)/g) || []).length;
    await waitFor(() => failures() >= 2,
      { timeout: 15000, what: `two failed connections in the replica's log:\n${gw.output()}` });
    assert.doesNotMatch(gw.output(), /back: shared state again/);
    const s = await waitFor(async () => { const x = await state(gw); return x.state.degraded === 'redis' && x; },
      { timeout: 5000, what: 'the replica degraded' });
    assert.equal(s.emergency, false, 'the emergency stored in Redis did not reach it');
  });
});
