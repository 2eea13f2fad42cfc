// Helpers shared by the stored-responses integration tests (not a test file
// itself): the gateway config (two keys, a local and a cloud llmsim), the
// official SDK client, what a backend received, /metrics samples; answers
// are validated against the official spec's schemas by responses_lib.mjs.
import OpenAI from 'openai';
import { getJSON } from './lib/harness.mjs';

export { SPEC, SPEC_COMMIT, assertResponse, assertSchema } from './responses_lib.mjs';

export const ADMIN = 'sk-admin-rstate';
export const ALICE = 'sk-alice-rstate';
export const BOB = 'sk-bob-rstate';
export function config({ edgeUrl, cloudUrl, responses = '', routing = '', edge = '', cloud = '', extra = '' }) {
  return `
listen: "127.0.0.1:0"
limits:
  client_timeout_ms: 300000
admin:
  key: "${ADMIN}"
keys:
  - { name: "alice", key: "${ALICE}" }
  - { name: "bob", key: "${BOB}" }
backends:
  - { name: "edge", tier: local, url: "${edgeUrl}", model: "edge-model", slots: 1${edge} }
  - { name: "cloud", tier: cloud, url: "${cloudUrl}", model: "cloud-model"${cloud} }
models:
  - { name: "chat", backends: [edge, cloud] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 400
${routing}
${responses}
${extra}
`;
}

export const client = (gw, key = ALICE) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });

export const received = async (sim) => (await getJSON(`${sim.url}/admin/received`)).body.requests;
export const clearReceived = (sim) => fetch(`${sim.url}/admin/received`, { method: 'DELETE' });

// The gateway's /metrics sample `name{labels}`, as a number (0 when absent).
export async function metric(gw, sample) {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

