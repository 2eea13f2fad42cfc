// How long a request body of limits.max_body_bytes holds up the event loop,
// with the PII scan on the loop (limits.scan_threads 0) and off it (2):
// small requests are sent one after another on another connection from the
// moment the gateway has read the whole large body until the large one is
// answered; their worst latency, against the same small request's median on
// an idle gateway, and spillway_event_loop_lag_seconds read right after.
//
//   node bench/scan_stall.mjs [rounds]       (SPILLWAY_BUILD=build/asan for another build)
//
// The large body is digits and separators, among the slowest texts to scan
// (test_pii_linear --mbps), served by a local llmsim (policy local_only: the
// relay neither scans nor masks for a local attempt).
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { startLlmsim, startSpillway, waitFor } from '../tests/it/lib/harness.mjs';
import { gatewayYaml } from '../tests/it/lib/gateway.mjs';

const ROUNDS = Number(process.argv[2] || 5);
const MAX_BODY = 4194304;

function bigBody() {
  const head = '{"model":"big","max_tokens":4,"messages":[{"role":"user","content":"';
  const end = '"}]}';
  const unit = '12-34 56.78 90/12 ';
  return head + unit.repeat(Math.floor((MAX_BODY - 1024 - head.length - end.length) / unit.length)) + end;
}

function allRead(sock) {
  if (sock.destroyed) return true;
  const hex = (p) => `:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  const lp = hex(sock.localPort), rp = hex(sock.remotePort);
  let tx = null, rx = null;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5) continue;
    const [t, r] = f[4].split(':').map((x) => parseInt(x, 16));
    if (f[1].endsWith(lp) && f[2].endsWith(rp)) tx = t;
    if (f[1].endsWith(rp) && f[2].endsWith(lp)) rx = r;
  }
  return sock.writableLength === 0 && tx === 0 && rx === 0;
}

const ms = (a, b) => Number(b - a) / 1e6;
const now = () => process.hrtime.bigint();

async function small(gw) {
  const t = now();
  const r = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
  });
  await r.text();
  if (r.status !== 200) throw new Error(`small request: ${r.status}`);
  return ms(t, now());
}

async function lag(gw) {
  const m = await (await fetch(`${gw.url}/metrics`)).text();
  return 1000 * Number(m.match(/^spillway_event_loop_lag_seconds (\S+)$/m)[1]);
}

async function round(gw, body) {
  const c = net.connect(gw.port, '127.0.0.1');
  const start = now();
  const answered = new Promise((resolve) => {
    let got = '';
    c.on('data', (d) => { got += d; });
    c.on('close', () => resolve(got));
  });
  let done = false;
  answered.then(() => { done = true; });
  await new Promise((r) => c.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nContent-Type: application/json\r\n` +
    `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, r));
  await waitFor(() => allRead(c), { timeout: 30000, what: 'the whole body read' });
  const read = now();
  const lat = [];
  const at = [];
  while (!done) { at.push(ms(read, now())); lat.push(await small(gw)); }
  if (process.env.SCAN_STALL_TRACE) { const i = lat.indexOf(Math.max(...lat)); console.log(`  worst small sent ${at[i].toFixed(1)} ms after the body was read`); }
  const text = await answered;
  const end = now();
  if (!/^HTTP\/1\.1 200 /.test(text)) throw new Error(`large request: ${text.slice(0, 200)}`);
  return { worst: Math.max(...lat), n: lat.length, large_ms: ms(start, end), after_read_ms: ms(read, end), lag_ms: await lag(gw) };
}

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
// Two backends, so that the small requests never wait behind the large one
// in the simulator: any wait they see is the gateway's.
const edge = await startLlmsim(['--model', 'local-model', '--decode-tps', '0']);
const edge2 = await startLlmsim(['--model', 'local-model', '--decode-tps', '0']);
const body = bigBody();
try {
  for (const threads of [0, 2]) {
    const gw = await startSpillway(gatewayYaml({
      backends: [{ name: 'edge', tier: 'local', url: edge.url, model: 'local-model' },
        { name: 'edge2', tier: 'local', url: edge2.url, model: 'local-model' }],
      models: [{ name: 'big', backends: ['edge'] }, { name: 'm', backends: ['edge2'] }],
    }) + `limits:\n  scan_threads: ${threads}\n`, { args: ['--log-level', 'warn'] });
    try {
      const idle = [];
      for (let i = 0; i < 30; i++) idle.push(await small(gw));
      const base = median(idle);
      const rs = [];
      for (let i = 0; i < ROUNDS; i++) rs.push(await round(gw, body));
      const worst = median(rs.map((r) => r.worst));
      console.log(`scan_threads ${threads}: body ${body.length} bytes; idle small p50 ${base.toFixed(2)} ms; ` +
        `during the large body (median of ${ROUNDS}): worst small ${worst.toFixed(1)} ms (${(worst / base).toFixed(1)}x idle), ` +
        `${median(rs.map((r) => r.n))} small answered, loop lag ${median(rs.map((r) => r.lag_ms)).toFixed(0)} ms, ` +
        `large answered ${median(rs.map((r) => r.after_read_ms)).toFixed(0)} ms after its body was read`);
    } finally {
      await gw.stop();
    }
  }
} finally {
  await edge.stop();
  await edge2.stop();
}
