// Integration-test harness: starts the real binaries on ephemeral loopback
// ports and stops them when the test ends. Every wait is bounded. Temporary
// directories (tempDir, startSpillway's config) are removed when their
// process stops, and whatever is left when the test process exits.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(new URL('../../..', import.meta.url).pathname);
export const BUILD = resolve(root, process.env.SPILLWAY_BUILD || 'build');

const tempDirs = new Set();
export function removeTempDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}
function removeTempDirs() {
  for (const d of [...tempDirs]) {
    try { removeTempDir(d); } catch { /* exiting: nothing else to do */ }
  }
}
process.on('exit', removeTempDirs);
for (const sig of ['SIGINT', 'SIGTERM']) {
  // Clean up, then die of the same signal (the listener is gone by then).
  process.once(sig, () => { removeTempDirs(); process.kill(process.pid, sig); });
}

// A new directory under the temp dir, removed at the latest when this
// process exits (a test may remove it earlier with removeTempDir).
export function tempDir(prefix = 'spillway-it-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

// Waits until pred() returns a truthy value (sync or async), polling every
// `every` ms, and fails after `timeout` ms with `what` in the message.
export async function waitFor(pred, { timeout = 5000, every = 10, what = 'condition' } = {}) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

// Spawns `bin args`, waits for a line "listening on HOST:PORT" on stdout or
// stderr, and returns { proc, port, url, output(), stop() }.
export async function startProcess(bin, args, { timeout = 10000, env = {} } = {}) {
  const proc = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const seen = new Promise((res, rej) => {
    const onData = (d) => {
      out += d.toString();
      const m = out.match(/listening on (?:http:\/\/)?([\d.]+):(\d+)/);
      if (m) res(Number(m[2]));
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code, sig) => rej(new Error(`${bin} exited (${code ?? sig}) before listening:\n${out}`)));
    setTimeout(() => rej(new Error(`${bin} not listening after ${timeout} ms:\n${out}`)), timeout).unref();
  });
  const port = await seen;
  const exited = new Promise((res) => {
    if (proc.exitCode !== null || proc.signalCode !== null) res();
    else proc.on('exit', () => res());
  });
  return {
    proc,
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => out,
    exited,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
      // Under `make test SANITIZE=1` every process a test started must have
      // ended without a sanitizer report (leaks, use-after-free, UB).
      if (/ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/.test(out)) {
        throw new Error(`${bin} reported a sanitizer error:\n${out}`);
      }
    },
  };
}

// build/llmsim on an ephemeral port.
export function startLlmsim(args = [], opts) {
  return startProcess(join(BUILD, 'llmsim'), ['--port', '0', ...args], opts);
}

// Writes `yaml` to a temp file and starts build/spillway -c on it; the file's
// directory goes when the process is stopped (or fails to start).
export async function startSpillway(yaml, opts = {}) {
  const dir = tempDir('spillway-it-');
  const file = join(dir, 'spillway.yaml');
  writeFileSync(file, yaml);
  let p;
  try {
    p = await startProcess(join(BUILD, 'spillway'), ['-c', file, ...(opts.args || [])], opts);
    // The start-up check sends each backend GET /v1/models; wait for it to
    // end, so that what a test then counts on a backend is its own traffic.
    // (Not logged under --log-level warn or error.)
    const quiet = (opts.args || []).some((a) => /^(warn|error)$/.test(a));
    if (!quiet) await waitFor(() => /start-up checks done/.test(p.output()) || p.proc.exitCode !== null,
      { timeout: 15000, what: `spillway's start-up checks:\n${p.output()}` });
  } catch (e) {
    if (p) await p.stop('SIGKILL').catch(() => {});
    removeTempDir(dir);
    throw e;
  }
  return {
    ...p,
    configFile: file,
    async stop(signal) {
      try {
        await p.stop(signal);
      } finally {
        removeTempDir(dir);
      }
    },
  };
}

// A string body goes as JSON (Content-Type: application/json) unless the
// caller names another Content-Type: the gateway refuses any other type on
// its API.
export async function getJSON(url, init) {
  if (typeof init?.body === 'string' && !Object.keys(init.headers ?? {}).some((k) => k.toLowerCase() === 'content-type')) {
    init = { ...init, headers: { ...(init.headers ?? {}), 'content-type': 'application/json' } };
  }
  const r = await fetch(url, init);
  const text = await r.text();
  try {
    return { status: r.status, headers: r.headers, body: JSON.parse(text) };
  } catch {
    return { status: r.status, headers: r.headers, body: text };
  }
}
