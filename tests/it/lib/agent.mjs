// Agent conversations for the caches' tests: the bodies bench/agent_trace.py
// writes (each turn resending the earlier ones), and one /metrics sample.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// turn -> body text, for turns 1..n of one conversation (args: more of the
// script's options, such as --shape or --plant)
export function trace(dir, n, args = []) {
  const out = execFileSync('python3', [join(root, 'bench/agent_trace.py'), '--out', dir, '--turns', String(n), ...args],
    { encoding: 'utf8' });
  const bodies = {};
  for (const line of out.trim().split('\n')) {
    const [t, , , path] = line.split(' ');
    bodies[Number(t)] = readFileSync(path, 'utf8');
  }
  return bodies;
}

// The value of an unlabelled series in gw's /metrics.
export async function metric(gw, name) {
  const r = await fetch(`${gw.url}/metrics`);
  const m = (await r.text()).match(new RegExp(`^${name} (\\S+)$`, 'm'));
  assert.ok(m, `${name} in /metrics`);
  return Number(m[1]);
}
