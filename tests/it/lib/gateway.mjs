// A gateway in front of llmsim processes, as the router tests set it up: the
// config from a list of backends and models, the processes stopped when the
// test ends, and the usual pair (one local llmsim, one cloud llmsim).
import { startLlmsim, startSpillway } from './harness.mjs';

export const ADMIN = 'sk-admin-test';

// A Spillway config: each backend an object of fields (a string is quoted,
// { raw: 'yaml' } goes in as written), each model { name, backends: [names] },
// `routing` (indented lines) after health_interval_ms, `keys` (a top-level
// keys: section) as written.
export function gatewayYaml({ backends, models, routing = '', keys = '', healthMs = 100, admin = ADMIN }) {
  return `
listen: "127.0.0.1:0"
admin:
  key: "${admin}"
${keys}
backends:
${backends.map((b) => `  - { ${Object.entries(b).map(([k, v]) => `${k}: ${typeof v === 'string' ? `"${v}"` : (v.raw ?? v)}`).join(', ')} }`).join('\n')}
models:
${models.map((m) => `  - { name: "${m.name}", backends: [${m.backends.join(', ')}] }`).join('\n')}
routing:
  health_interval_ms: ${healthMs}
${routing}
`;
}

// Runs fn(track): every process started through track(startXxx(...)) is
// stopped, last first, when fn ends or throws.
export async function withProcs(fn) {
  const procs = [];
  const track = async (pending) => { const p = await pending; procs.push(p); return p; };
  try {
    await fn(track);
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

// The usual pair: llmsim "edge-model" (more llmsim flags in edgeArgs) as the
// local backend "edge" (more fields in `edge`, e.g. { slots: 1 }), llmsim
// "cloud-model" as the cloud backend "cloud", and the model "chat" over both.
// Returns { edge, cloud, gw }.
export async function edgeAndCloud(track, { edgeArgs = [], cloudArgs = [], edge = {}, cloud = {}, ...rest } = {}) {
  const e = await track(startLlmsim(['--model', 'edge-model', ...edgeArgs]));
  const c = await track(startLlmsim(['--model', 'cloud-model', ...cloudArgs]));
  const gw = await track(startSpillway(gatewayYaml({
    backends: [
      { name: 'edge', tier: 'local', url: e.url, model: 'edge-model', ...edge },
      { name: 'cloud', tier: 'cloud', url: c.url, model: 'cloud-model', ...cloud },
    ],
    models: [{ name: 'chat', backends: ['edge', 'cloud'] }],
    ...rest,
  })));
  return { edge: e, cloud: c, gw };
}
