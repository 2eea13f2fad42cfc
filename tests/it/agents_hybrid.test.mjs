// Coding agents and structured output through the hybrid, with real clients:
//
//  - `codex exec` (lib/codex.mjs: HOME in a temp dir, analytics, feedback
//    and update checks off, loopback only, bounded) runs a tool round trip in
//    which Codex reads a file holding a planted secret (`cat creds.ini`) and
//    sends its output back: at baseline both turns run on the local box; under
//    overflow the first turn (no secret yet) spills to the cloud and the one
//    holding the secret waits for the local box. The cloud llmsim never
//    receives the secret. The local box's prefill rate comes from the
//    warm-up (backends[].prefill_warmup). Each session's decision-log lines are printed as
//    test diagnostics (they carry no prompt text).
//  - LangChain's withStructuredOutput, ChatOpenAI (response_format
//    json_schema) and ChatAnthropic (a forced tool by default, and
//    output_config.format with method jsonSchema), each against a model on an
//    OpenAI-speaking box and one on an Anthropic backend: the parsed object is
//    the one the (echoing) backend produced, and the backend was asked for the
//    structure in its own API.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { getJSON, startLlmsim, startSpillway, waitFor } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';
import { recordingProxy, runCodex } from './lib/codex.mjs';

const ADMIN = 'sk-agents-hybrid-admin';
// (built from pieces, so the repository's own secret scan does not count it)
const SECRET = ['AKIA', 'Q4RZT7WX', 'B2NK9PLE'].join('');
const CREDS = `[default]\naws_access_key_id = ${SECRET}\naws_secret_access_key = ${['w3Jd8sKq1Zx5', 'Tn6Vb0Hy4Mc7', 'Lr2Fg9Pa5Ue1Qi8S'].join('')}\n`;
const PROMPT = 'llmsim:call exec_command {"cmd":"cat creds.ini"}';

const config = (u) => `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${u.edge}", model: edge-model, slots: 1, prefill_warmup: true }
  - { name: cloud, tier: cloud, url: "${u.cloud}", model: cloud-model, dialect: responses }
  - { name: lc-box, tier: local, url: "${u.lcBox}", model: lc-box-model }
  - { name: lc-claude, tier: cloud, url: "${u.lcClaude}", model: lc-claude-model, dialect: anthropic, api_key: "sk-ant-up" }
models:
  - { name: coder, backends: [edge, cloud] }
  - { name: box, backends: [lc-box] }
  - { name: claude, backends: [lc-claude] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 300
pii:
  policy: local_only
`;

const admin = { headers: { authorization: `Bearer ${ADMIN}` } };
const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100`)).body.requests;
const edgeState = async (gw) => (await getJSON(`${gw.url}/admin/state`, admin)).body.backends.find((b) => b.name === 'edge');
// The decision-log lines the gateway has written (its standard output).
const logLines = (gw) => gw.output().split('\n').filter((l) => l.startsWith('{"') && l.includes('"request_id"'));

describe('agents through the hybrid', () => {
  let sims, gw;
  before(async () => {
    const sim = (model, extra = []) => startLlmsim(['--model', model, '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100', ...extra]);
    sims = {
      edge: await sim('edge-model', ['--prefill-ms-per-token', '0.01']), cloud: await sim('cloud-model'),
      lcBox: await sim('lc-box-model'), lcClaude: await sim('lc-claude-model', ['--dialect', 'anthropic']),
    };
    gw = await startSpillway(config(Object.fromEntries(Object.entries(sims).map(([k, v]) => [k, v.url]))));
    // the box's prefill rate measured (as examples/claude-code.yaml does):
    // an agent's prompt of thousands of tokens then fits the TTFT budget
    await waitFor(async () => (await edgeState(gw)).prefill_source === 'warmup', { timeout: 10000, what: 'the prefill warm-up' });
  });
  after(async () => {
    await gw?.stop();
    for (const s of Object.values(sims ?? {})) await s.stop();
  });

  // One `codex exec` that reads creds.ini; its POSTs as the proxy saw them,
  // and the decision-log lines it caused.
  async function codexSession(t, label, during) {
    const proxy = await recordingProxy(gw.url);
    const from = logLines(gw).length;
    try {
      const run = runCodex(`${proxy.url}/v1`, 'coder', PROMPT, {}, { 'creds.ini': CREDS });
      if (during) await during();
      const r = await run;
      assert.equal(r.code, 0, `codex exec failed:\n${r.stderr.slice(-3000)}`);
      const posts = proxy.seen.filter((s) => s.method === 'POST');
      assert.equal(posts.length, 2, 'the call, then the answer after the tool ran');
      for (const p of posts) assert.equal(p.status, 200, p.text?.slice(0, 300));
      const out = posts[1].body.input.find((i) => i.type === 'function_call_output');
      assert.ok(out && JSON.stringify(out.output).includes(SECRET), 'Codex read the file and sent its output');
      await waitFor(() => logLines(gw).length >= from + 2, { timeout: 10000, what: 'the session\'s decision-log lines' });
      const lines = logLines(gw).slice(from).filter((l) => JSON.parse(l).api === 'responses');
      for (const l of lines) t.diagnostic(`${label}: ${l}`);
      for (const l of lines) assert.ok(!l.includes(SECRET) && !l.includes('creds.ini'), 'prompt text in the decision log');
      return { posts, decisions: lines.map((l) => JSON.parse(l)), stdout: r.stdout };
    } finally {
      await proxy.stop();
    }
  }

  test('codex exec at baseline: both turns on the local box, the secret never at the cloud', async (t) => {
    const n0 = (await received(sims.cloud)).length;
    const { posts, decisions } = await codexSession(t, 'codex baseline');
    assert.deepEqual(posts.map((p) => [p.backend, p.reason]), [['edge', 'baseline'], ['edge', 'baseline']]);
    assert.ok(decisions.some((d) => d.pii_outcome === 'kept_local'), JSON.stringify(decisions));
    assert.equal((await received(sims.cloud)).length, n0, 'nothing went to the cloud');
    assert.ok(JSON.stringify((await received(sims.edge)).at(-1).body).includes(SECRET), 'the local box saw the file');
  });

  test('codex exec under overflow: the first turn spills, the turn holding the secret waits for the local box', async (t) => {
    const n0 = (await received(sims.cloud)).length;
    const hold = await holdLocal(gw, sims.edge, { admin: ADMIN, model: 'coder' });
    let released = false;
    try {
      const { posts, decisions } = await codexSession(t, 'codex overflow', async () => {
        await waitFor(async () => (await edgeState(gw)).queued >= 1, { timeout: 60000, what: 'the secret turn queued for the local box' });
        await hold.release();
        released = true;
      });
      assert.deepEqual(posts.map((p) => [p.backend, p.reason]).at(0), ['cloud', 'overflow']);
      assert.equal(posts[1].backend, 'edge');
      assert.ok(decisions.some((d) => d.backend === 'edge' && d.pii_outcome === 'kept_local'), JSON.stringify(decisions));
    } finally {
      if (!released) await hold.release();
    }
    const atCloud = (await received(sims.cloud)).slice(n0);
    assert.equal(atCloud.length, 1, 'only the first turn went to the cloud');
    assert.ok(!JSON.stringify(atCloud).includes(SECRET), 'the secret reached the cloud');
  });

  // LangChain: the schema, and the text the echoing backends send back.
  const City = z.object({ city: z.string(), population: z.number() });
  const WANT = { city: 'Utrecht', population: 361924 };
  const ASK = JSON.stringify(WANT);
  const clients = {
    ChatOpenAI: (model) => new ChatOpenAI({ model, apiKey: 'unused', maxRetries: 0, configuration: { baseURL: `${gw.url}/v1` } }),
    ChatAnthropic: (model) => new ChatAnthropic({ model, apiKey: 'unused', maxRetries: 0, anthropicApiUrl: gw.url }),
  };
  // client, its withStructuredOutput method, the gateway model, and what the
  // backend was asked for (in its own API)
  const cases = [
    ['ChatOpenAI', undefined, 'box', (b) => b.response_format?.type === 'json_schema'],
    ['ChatOpenAI', undefined, 'claude', (b) => b.tool_choice?.type === 'tool'],
    ['ChatAnthropic', undefined, 'box', (b) => b.tool_choice?.function?.name === 'city_facts'],
    ['ChatAnthropic', undefined, 'claude', (b) => b.tool_choice?.name === 'city_facts'],
    ['ChatAnthropic', 'jsonSchema', 'box', (b) => b.response_format?.type === 'json_schema'],
    ['ChatAnthropic', 'jsonSchema', 'claude', (b) => b.output_config?.format?.type === 'json_schema'],
  ];
  const boxes = { box: ['lcBox', 'lc-box'], claude: ['lcClaude', 'lc-claude'] };
  for (const [name, method, model, asked] of cases) {
    const [box, backend] = boxes[model];
    test(`LangChain ${name}.withStructuredOutput(${method ?? 'default'}) through a model on ${backend}: the parsed object`, async () => {
      const n0 = (await received(sims[box])).length;
      const got = await clients[name](model).withStructuredOutput(City, { name: 'city_facts', ...(method ? { method } : {}) }).invoke(ASK);
      assert.deepEqual(got, WANT);
      const reqs = (await received(sims[box])).slice(n0);
      assert.equal(reqs.length, 1, `the request reached ${backend}`);
      assert.ok(asked(reqs[0].body), JSON.stringify(reqs[0].body).slice(0, 600));
    });
  }
});
