// A request body above 64 KiB is scanned for PII off the event loop
// (limits.scan_threads): while a body of max_body_bytes is being scanned a
// small request on another connection is answered (with scan_threads 0 it
// waits for the scan); spillway_pii_scans_offloaded_total and
// spillway_pii_scans_dropped_total count the scans and the results dropped
// for a client that left; a SIGTERM during the scan lets the request finish
// and the process exit 0, and a drain timeout shorter than the scan joins the
// worker and exits 0 (no sanitizer report under SANITIZE=1). A body whose
// messages the parse memo holds with their verdicts is not sent to a worker.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { startLlmsim, startSpillway, waitFor } from './lib/harness.mjs';
import { gatewayYaml, withProcs } from './lib/gateway.mjs';

// limits.max_body_bytes, twice its default (and the most llmsim takes): a
// scan of a hundred ms or more against a small request's few, so that the
// order and the drain cases below hold on a loaded machine too
const MAX_BODY = 8388608;

// Digits and separators: among the slowest texts to scan (test_pii_linear
// --mbps), filling a body to just under max_body_bytes. `tail` ends the text.
function bigBody(tail = '') {
  const head = '{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"';
  const end = '"}]}';
  const unit = '12-34 56.78 90/12 ';
  const room = MAX_BODY - 1024 - head.length - end.length - tail.length;
  return head + unit.repeat(Math.floor(room / unit.length)) + tail + end;
}

// limits: more lines of the limits block
function yaml(extra = '', limits = '') {
  return (edgeUrl) => gatewayYaml({
    backends: [{ name: 'edge', tier: 'local', url: edgeUrl, model: 'local-model' }],
    models: [{ name: 'm', backends: ['edge'] }],
  }) + `limits:\n  max_body_bytes: ${MAX_BODY}\n${limits}` + extra;
}

async function gateway(track, extra, limits) {
  // Instant answers: a small request's time is the gateway's (a few ms
  // against the large body's scan of tens to hundreds).
  const edge = await track(startLlmsim(['--model', 'local-model', '--decode-tps', '0']));
  return track(startSpillway(yaml(extra, limits)(edge.url)));
}

// Opens a raw connection and writes `body` as one request. Returns the
// socket, when the first byte of the answer came (order), and the answer.
function sendBig(gw, body) {
  const c = net.connect(gw.port, '127.0.0.1');
  c.on('error', () => {});
  let got = '';
  let first = null;
  const answer = new Promise((resolve) => {
    c.on('data', (d) => { if (first === null) first = process.hrtime.bigint(); got += d; });
    c.on('close', () => resolve(got));
  });
  const written = new Promise((r) => c.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nContent-Type: application/json\r\n` +
    `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, r));
  return { c, written, answer, firstAt: () => first };
}

// Whether the gateway read every byte written on sock: none left in this
// side's send queue nor in the gateway's receive queue (Linux /proc/net/tcp).
// From then on the gateway has the whole body: it is parsing or scanning it.
function allRead(sock) {
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

function post(gw, content) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content }] }),
  }).then(async (r) => ({ status: r.status, text: await r.text(), at: process.hrtime.bigint() }));
}

async function counters(gw) {
  const m = await (await fetch(`${gw.url}/metrics`)).text();
  const get = (name) => Number((m.match(new RegExp(`^${name} (\\S+)$`, 'm')) || [])[1]);
  return { offloaded: get('spillway_pii_scans_offloaded_total'), dropped: get('spillway_pii_scans_dropped_total') };
}

// The large body holds an e-mail address at its end and the policy is
// block: it is answered 400 as soon as its scan ends, without a backend. A
// small clean request sent once the gateway read the whole large body is
// answered before that when the scan runs off the loop, after it when the
// scan runs on the loop.
async function smallDuringScan(threads) {
  let order;
  await withProcs(async (track) => {
    const gw = await gateway(track, 'pii:\n  policy: block\n', `  scan_threads: ${threads}\n`);
    const big = sendBig(gw, bigBody(' mail jan.jansen@example.com'));
    await big.written;
    await waitFor(() => allRead(big.c), { what: 'the gateway to read the whole body' });
    const small = await post(gw, 'hello');
    const text = await big.answer;
    assert.equal(small.status, 200, small.text);
    assert.match(text, /^HTTP\/1\.1 400 /);
    assert.match(text, /pii_blocked/);
    order = small.at < big.firstAt() ? 'small first' : 'large first';
    const n = await counters(gw);
    assert.equal(n.offloaded, threads ? 1 : 0);
    assert.equal(n.dropped, 0);
  });
  return order;
}

test('a small request is answered while a body of max_body_bytes is scanned; with scan_threads 0 it waits for the scan', async () => {
  assert.equal(await smallDuringScan(2), 'small first');
  assert.equal(await smallDuringScan(0), 'large first');
});

test('a client gone mid-scan: its result is dropped and counted, the gateway serves on', () => withProcs(async (track) => {
  const gw = await gateway(track);
  assert.deepEqual(await counters(gw), { offloaded: 0, dropped: 0 });
  const big = sendBig(gw, bigBody());
  await big.written;
  await waitFor(() => allRead(big.c), { what: 'the gateway to read the whole body' });
  await waitFor(async () => (await counters(gw)).offloaded === 1, { what: 'the scan to start off the loop' });
  big.c.destroy();
  await waitFor(async () => (await counters(gw)).dropped === 1, { what: 'the dropped scan to be counted' });
  await waitFor(() => /client disconnected during the PII scan; dropped/.test(gw.output()), { what: 'the log line' });
  const after = await post(gw, 'hello again');
  assert.equal(after.status, 200, after.text);
  // A large clean body (new bytes: the first one's message is in the parse
  // memo now) is scanned off the loop and served.
  const big2 = sendBig(gw, bigBody(' second'));
  assert.match(await big2.answer, /^HTTP\/1\.1 200 /);
  assert.deepEqual(await counters(gw), { offloaded: 2, dropped: 1 });
  // The same body again: its message is held with its verdict, nothing is
  // left to scan, so nothing goes to a worker.
  const big3 = sendBig(gw, bigBody(' second'));
  assert.match(await big3.answer, /^HTTP\/1\.1 200 /);
  assert.deepEqual(await counters(gw), { offloaded: 2, dropped: 1 });
}));

test('SIGTERM while a large body is scanned off the loop: the request is answered, the process drains and exits 0', () => withProcs(async (track) => {
  const gw = await gateway(track, '', '  drain_timeout_ms: 30000\n');
  const big = sendBig(gw, bigBody());
  await big.written;
  await waitFor(() => allRead(big.c), { what: 'the gateway to read the whole body' });
  await waitFor(async () => (await counters(gw)).offloaded === 1, { what: 'the scan to start off the loop' });
  gw.proc.kill('SIGTERM');
  const text = await big.answer;
  await gw.exited;
  assert.equal(gw.proc.exitCode, 0);
  assert.match(text, /^HTTP\/1\.1 200 /);
  const out = gw.output();
  assert.match(out, /SIGTERM: draining/);
  assert.match(out, /draining: 1 request\(s\) in flight/);
  assert.match(out, /drained; exiting/);
  assert.doesNotMatch(out, /drain timeout/);
}));

test('a drain timeout shorter than the scan: the worker is joined, the client sees the connection close, exit 0', () => withProcs(async (track) => {
  const gw = await gateway(track, '', '  drain_timeout_ms: 0\n');
  const big = sendBig(gw, bigBody());
  await big.written;
  await waitFor(() => allRead(big.c), { what: 'the gateway to read the whole body' });
  await waitFor(async () => (await counters(gw)).offloaded === 1, { what: 'the scan to start off the loop' });
  gw.proc.kill('SIGTERM');
  const text = await big.answer;
  await gw.exited;
  assert.equal(gw.proc.exitCode, 0);
  assert.equal(text, '', 'no answer: the request was cut');
  assert.match(gw.output(), /drain timeout: 1 request\(s\) still in flight are cut/);
}));

// A large request that goes to the cloud masked: the relay's mask and
// egress check (its gate) of the body run on the pool too, after the front's
// scan: three jobs off the loop; what leaves is masked, the answer restored.
test('a large body masked for the cloud: masking and the egress check run off the loop, what leaves is masked, the answer comes back restored', () => withProcs(async (track) => {
  const cloud = await track(startLlmsim(['--model', 'cloud-model', '--reply', 'echo', '--decode-tps', '0', '--keep-received', '10']));
  const gw = await track(startSpillway(gatewayYaml({
    backends: [{ name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' }],
    models: [{ name: 'm', backends: ['cloud'] }],
  }) + 'pii:\n  policy: mask\n'));
  const jobs = async () => Number(((await (await fetch(`${gw.url}/metrics`)).text())
    .match(/^spillway_pii_jobs_off_loop_total (\S+)$/m) || [])[1]);
  assert.equal(await jobs(), 0);
  const filler = 'The spillway lets the overflow out of the reservoir when the river is high. '.repeat(4000);
  for (const [i, stream] of [[1, false], [2, true]]) {
    const content = `Write to jan.jansen${i}@example.com about this. ${filler}`;
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', max_tokens: 12, stream, messages: [{ role: 'user', content }] }),
    });
    const text = await r.text();
    assert.equal(r.status, 200, text.slice(0, 300));
    assert.match(text, new RegExp(`jan\\.jansen${i}@example\\.com`), 'the echoed value comes back restored');
    const sent = JSON.stringify((await (await fetch(`${cloud.url}/admin/received?n=10`)).json()).requests.at(-1));
    assert.ok(!sent.includes(`jan.jansen${i}@example.com`), 'the cloud never saw the value');
    assert.match(sent, /\[EMAIL_\d+\]/);
    assert.equal(await jobs(), 3 * i, 'the front scan, the mask and the gate, each on a worker');
  }
}));

// The client leaves once the relay's mask job was handed to the pool (it may
// still run, or have ended, the body then on its way to a cloud that holds it): the job is cancelled or its result dropped, the
// process serves on, and under SANITIZE=1 nothing is used after it is freed.
test('a client gone while its body is masked off the loop: the gateway serves on', () => withProcs(async (track) => {
  const cloud = await track(startLlmsim(['--model', 'cloud-model', '--decode-tps', '0']));
  const gw = await track(startSpillway(gatewayYaml({
    backends: [{ name: 'cloud', tier: 'cloud', url: cloud.url, model: 'cloud-model' }],
    models: [{ name: 'm', backends: ['cloud'] }],
  }) + 'pii:\n  policy: mask\n'));
  const jobs = async () => Number(((await (await fetch(`${gw.url}/metrics`)).text())
    .match(/^spillway_pii_jobs_off_loop_total (\S+)$/m) || [])[1]);
  // The cloud holds what reaches it, so the request is still open when the
  // client leaves; digits and separators make the masking slow to scan.
  await fetch(`${cloud.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ hang: true }) });
  const values = Array.from({ length: 3000 }, (_, i) => `mail p.${i}@example.org`).join(', ');
  const body = JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: values + ' 12-34 56.78 90/12'.repeat(100000) }] });
  const big = sendBig(gw, body);
  await big.written;
  await waitFor(async () => (await jobs()) >= 2, { timeout: 20000, what: 'the mask job handed to the pool' });
  big.c.destroy();
  await waitFor(() => /client disconnected/.test(gw.output()), { timeout: 20000, what: 'the request to end' });
  await fetch(`${cloud.url}/admin/faults`, { method: 'DELETE' });
  const after = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] }),
  });
  assert.equal(after.status, 200);
}));
