// Helpers shared by the llmsim integration tests (not a test file itself).
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { getJSON, startLlmsim, waitFor } from './lib/harness.mjs';

export { getJSON, startLlmsim, waitFor };

// Starts llmsim with args and registers its stop with the test context.
export async function sim(t, args = [], opts) {
  const s = await startLlmsim(args, opts);
  t.after(() => s.stop());
  return s;
}

export function openai(s, extra = {}) {
  return new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'sk-test', maxRetries: 0, ...extra });
}

export function anthropic(s, extra = {}) {
  return new Anthropic({ baseURL: s.url, apiKey: 'sk-ant-test', maxRetries: 0, ...extra });
}

export async function stats(s) {
  const r = await getJSON(`${s.url}/admin/stats`);
  if (r.status !== 200) throw new Error(`/admin/stats answered ${r.status}`);
  return r.body;
}

// Waits until /admin/stats satisfies pred; returns those stats.
export function waitStats(s, pred, what, timeout = 5000) {
  return waitFor(async () => {
    const st = await stats(s);
    return pred(st) ? st : null;
  }, { timeout, what });
}

export function postFaults(s, body) {
  return getJSON(`${s.url}/admin/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export const user = (text) => [{ role: 'user', content: text }];

// Reads a fetch Response body as SSE events [{event, data}], the raw way.
export async function readSSE(res) {
  const text = await res.text();
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    const ev = { event: null, data: [] };
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) ev.event = line.slice(7);
      else if (line.startsWith('data: ')) ev.data.push(line.slice(6));
    }
    ev.data = ev.data.join('\n');
    return ev;
  });
}
