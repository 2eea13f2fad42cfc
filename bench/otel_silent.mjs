// The load and the collector of bench/otel_silent.sh: a gateway with tracing
// on (sample_ratio 1.0, http/protobuf) in front of one llmsim, CONC clients
// posting chat completions for WARM_S seconds with the collector answering,
// SILENT_S seconds with it silent (it accepts the connection and reads the
// request, never answers), then AFTER_S seconds answering again. Printed:
// requests done and failed (any status but 200, or a transport error), the
// gateway's RSS before the load, at its peak and after the queue drained
// (VmRSS, sampled every 100 ms), the span queue's largest depth
// (spillway_otel_queue_spans, sampled likewise) and the drops by reason.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { startLlmsim, startSpillway } from '../tests/it/lib/harness.mjs';

const num = (k, d) => Number(process.env[k] ?? d);
const CONC = num('CONC', 8), WARM_S = num('WARM_S', 10), SILENT_S = num('SILENT_S', 30), AFTER_S = num('AFTER_S', 10);

let silent = false;
const held = new Set();
let received = 0, answered = 0;
const col = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    received++;
    if (silent) { held.add(res); return; } // accepted, read, never answered
    answered++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
await new Promise((r) => col.listen(0, '127.0.0.1', r));
const colUrl = `http://127.0.0.1:${col.address().port}`;

const sim = await startLlmsim(['--model', 'bench', '--decode-tps', '0', '--slots', '1000', '--keep-received', '0']);
const gw = await startSpillway(`
listen: "127.0.0.1:0"
backends:
  - { name: sim, tier: local, url: "${sim.url}", model: bench, slots: 1000, queue_max: 1000 }
models:
  - { name: bench, backends: [sim] }
telemetry:
  otlp: { endpoint: "${colUrl}", protocol: http/protobuf, sample_ratio: 1.0 }
`, { args: ['--log-level', 'warn'] });

const rss = () => {
  const m = readFileSync(`/proc/${gw.proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) / 1024 : NaN;
};
async function metrics() {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const get = (re) => { const m = text.match(re); return m ? Number(m[1]) : 0; };
  const drops = {};
  for (const m of text.matchAll(/^spillway_otel_spans_dropped_total\{reason="(\w+)"\} (\d+)/gm)) drops[m[1]] = Number(m[2]);
  return { queue: get(/^spillway_otel_queue_spans (\d+)/m), exported: get(/^spillway_otel_spans_exported_total (\d+)/m), drops };
}

const body = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 });
let done = 0, failed = 0, stop = false;
async function client() {
  while (!stop) {
    try {
      const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await r.arrayBuffer();
      if (r.status === 200) done++; else failed++;
    } catch { failed++; }
  }
}

await new Promise((r) => setTimeout(r, 500));
const rssBefore = rss();
let rssPeak = rssBefore, queueMax = 0;
const sampler = setInterval(async () => {
  rssPeak = Math.max(rssPeak, rss());
  try { queueMax = Math.max(queueMax, (await metrics()).queue); } catch { /* a scrape lost under load */ }
}, 100);
const clients = Array.from({ length: CONC }, client);
const phase = (s) => new Promise((r) => setTimeout(r, s * 1000));
await phase(WARM_S);
const doneBeforeSilence = done;
silent = true;
console.error(`  collector silent for ${SILENT_S} s`);
await phase(SILENT_S);
const doneInSilence = done - doneBeforeSilence;
silent = false;
console.error('  collector answering again');
await phase(AFTER_S);
stop = true;
await Promise.all(clients);
// the queue drains once exports succeed again (bounded wait)
for (let i = 0; i < 300 && (await metrics()).queue > 0; i++) await new Promise((r) => setTimeout(r, 100));
clearInterval(sampler);
const m = await metrics();
const rssAfter = rss();

const total = done + failed;
console.log(`otel_silent: ${CONC} clients, ${WARM_S} s answering, ${SILENT_S} s silent, ${AFTER_S} s answering again`);
console.log(`requests: ${done} of ${total} done, ${failed} failed (${doneInSilence} done while the collector was silent)`);
console.log(`gateway RSS: ${rssBefore.toFixed(1)} MiB before, ${rssPeak.toFixed(1)} MiB peak, ${rssAfter.toFixed(1)} MiB after`);
console.log(`span queue: max ${queueMax} (queue_max 4096 + one batch of 512), ${m.queue} at the end`);
console.log(`spans: ${m.exported} exported; dropped ${Object.entries(m.drops).map(([k, v]) => `${k} ${v}`).join(', ')}`);
console.log(`collector: ${received} exports received, ${answered} answered, ${held.size} left unanswered`);

for (const res of held) res.socket?.destroy();
await gw.stop();
await sim.stop();
col.close();
col.closeAllConnections?.();
process.exit(failed ? 1 : 0);
