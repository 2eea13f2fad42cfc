// Helpers shared by the stored-responses integration tests (not a test file
// itself): the gateway config (two keys, a local and a cloud llmsim), the
// official SDK client, what a backend received, /metrics samples, and the
// required fields of the official spec's schemas.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { getJSON } from './lib/harness.mjs';

export const ADMIN = 'sk-admin-rstate';
export const ALICE = 'sk-alice-rstate';
export const BOB = 'sk-bob-rstate';
export const SPEC = JSON.parse(readFileSync(new URL('../spec/openai_responses.json', import.meta.url)));
export const SPEC_COMMIT = 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3';
const schemas = SPEC.components.schemas;

// The required fields of a schema, through $ref and allOf.
function required(name) {
  const out = new Set();
  const walk = (s) => {
    if (s.$ref) return walk(schemas[s.$ref.split('/').at(-1)]);
    for (const r of s.required || []) out.add(r);
    for (const p of s.allOf || []) walk(p);
  };
  walk(schemas[name]);
  return [...out];
}

export function assertResponse(r) {
  for (const k of required('Response')) assert.ok(k in r, `Response lacks ${k}`);
  for (const k of required('ResponseUsage')) if (r.usage) assert.ok(k in r.usage, `usage lacks ${k}`);
  for (const item of r.output) {
    const name = item.type === 'message' ? 'OutputMessage' : 'FunctionToolCall';
    for (const k of required(name)) assert.ok(k in item, `${item.type} item lacks ${k}`);
  }
}

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

