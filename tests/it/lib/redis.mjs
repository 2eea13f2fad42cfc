// A real redis-server for tests: on a free loopback port (TLS only with
// { tls: { cert, key } }; command() then does not apply), no persistence
// (--save '' --appendonly no), stopped when the test ends. restart() starts it
// again on the same port (an empty server: what a crash without persistence
// leaves).
import { spawn, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, connect } from 'node:net';

export async function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

function spawnRedis(port, timeout, tls, args = []) {
  // tls { cert, key }: TLS only (no plain-text port), clients not asked for certificates
  const listen = tls
    ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key,
      '--tls-auth-clients', 'no']
    : ['--port', String(port)];
  const proc = spawn('redis-server', [...listen, '--bind', '127.0.0.1', '--save', '',
    '--appendonly', 'no', '--enable-debug-command', 'local', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = new Promise((res, rej) => {
    const onData = (d) => {
      out += d.toString();
      if (/Ready to accept connections/.test(out)) res();
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('error', rej);
    proc.on('exit', (code, sig) => rej(new Error(`redis-server exited (${code ?? sig}) before ready:\n${out}`)));
    setTimeout(() => rej(new Error(`redis-server not ready after ${timeout} ms:\n${out}`)), timeout).unref();
  });
  const exited = new Promise((res) => proc.on('exit', () => res()));
  return { proc, ready, exited };
}

export async function startRedis({ timeout = 10000, tls, args } = {}) {
  const port = await freePort();
  let cur = spawnRedis(port, timeout, tls, args);
  await cur.ready;
  return {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    // SIGKILL: a crash, nothing flushed.
    async kill() {
      if (cur.proc.exitCode === null && cur.proc.signalCode === null) cur.proc.kill('SIGKILL');
      await cur.exited;
    },
    async restart() {
      await this.kill();
      cur = spawnRedis(port, timeout, tls, args);
      await cur.ready;
    },
    async stop() {
      await this.kill();
    },
    // Sends one command (RESP) and resolves with the raw reply once it starts
    // arriving, e.g. command('DEBUG', 'SLEEP', '1') after the sleep.
    command(...args) {
      return new Promise((res, rej) => {
        const sock = connect(port, '127.0.0.1');
        sock.on('error', rej);
        sock.on('data', (d) => { sock.destroy(); res(d.toString()); });
        sock.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`);
      });
    },
  };
}

// Test certificates in dir: a CA "ca" (ca.crt, ca.key), a second CA "other"
// nobody's certificate is signed by (other.crt), and a server certificate for
// localhost and 127.0.0.1 signed by "ca" (server.crt, server.key).
export function makeTestCerts(dir) {
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  for (const name of ['ca', 'other'])
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name}`,
      '-keyout', `${name}.key`, '-out', `${name}.crt`);
  writeFileSync(join(dir, 'ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'server.key', '-out', 'server.csr');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
    '-extfile', 'ext', '-out', 'server.crt');
  return { ca: join(dir, 'ca.crt'), other: join(dir, 'other.crt'), cert: join(dir, 'server.crt'),
    key: join(dir, 'server.key') };
}
