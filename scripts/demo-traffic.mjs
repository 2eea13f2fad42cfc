#!/usr/bin/env node
// The demo's background traffic (started by scripts/demo.sh, stopped with it):
// a steady trickle of chat requests to the gateway, and every SPIKE_EVERY
// seconds a spike of concurrent ones that the two-slot local box cannot start
// within the TTFT budget, so the overflow spills to the cloud; each spike
// also sends one request for an unknown model (a rejection on the chart).
//   node scripts/demo-traffic.mjs http://127.0.0.1:8080 [spike_every_s=60]
// Node's own fetch; no packages.
const base = process.argv[2] || 'http://127.0.0.1:8080';
const spikeEvery = Math.max(5, Number(process.argv[3] || process.env.DEMO_SPIKE_EVERY || 60)) * 1000;
const TRICKLE_MS = 1500;
const SPIKE_SIZE = 10;

const words = ['Summarise', 'Explain', 'Translate', 'List', 'Describe'];
const topics = ['the tide tables', 'a spillway', 'queueing theory', 'edge inference', 'the weather'];
const pick = (a) => a[Math.floor(Math.random() * a.length)];

let stopping = false;
async function chat(model = 'chat') {
  try {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        stream: true,
        max_tokens: 20 + Math.floor(Math.random() * 40),
        messages: [{ role: 'user', content: `${pick(words)} ${pick(topics)}.` }],
      }),
      signal: AbortSignal.timeout(30000),
    });
    await r.arrayBuffer();
  } catch {
    // The gateway restarting or stopping: the next tick tries again.
  }
}

function trickle() {
  if (stopping) return;
  chat();
  setTimeout(trickle, TRICKLE_MS * (0.5 + Math.random()));
}

function spike() {
  if (stopping) return;
  for (let i = 0; i < SPIKE_SIZE; i++) setTimeout(() => chat(), i * 150);
  chat('no-such-model');
  setTimeout(spike, spikeEvery);
}

for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { stopping = true; process.exit(0); });
trickle();
setTimeout(spike, Math.min(spikeEvery, 10000));
