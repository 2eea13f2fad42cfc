// The command line: --help, --version, --check-config, and a bad config at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD, waitFor, tempDir } from './lib/harness.mjs';

const bin = join(BUILD, 'spillway');
const run = (...args) => spawnSync(bin, args, { encoding: 'utf8', timeout: 10000 });

function file(text) {
  const p = join(tempDir('spillway-cli-'), 'c.yaml');
  writeFileSync(p, text);
  return p;
}

test('--help and --version', () => {
  const h = run('--help');
  assert.equal(h.status, 0);
  assert.match(h.stdout, /--check-config FILE/);
  const v = run('--version');
  assert.equal(v.status, 0);
  assert.match(v.stdout, /^spillway \d+\.\d+\.\d+/);
  assert.equal(run('--bogus').status, 2);
});

test('--check-config: a good file is ok, the demo config too', () => {
  const r = run('--check-config', 'examples/demo.yaml');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /examples\/demo.yaml: ok/);
});

test('--check-config: every error with file:line:col, exit 1', () => {
  const p = file(`listen: "127.0.0.1:8080"
backends:
  - name: edge
    tier: edgy
    url: "http://127.0.0.1:1"
    model: "m"
models:
  - name: chat
    backends: [edge, nope]
`);
  const r = run('--check-config', p);
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`${p}:4:11: backends\\[0\\]\\.tier: .*edgy`));
  assert.match(r.stderr, new RegExp(`${p}:9:\\d+: models\\[0\\]\\.backends\\[1\\]: .*nope`));
});

test('--check-config: a backend url ending in /v1 is valid and the notice says what it is read as', () => {
  const p = file(`listen: "127.0.0.1:8080"
backends:
  - { name: edge, tier: local, url: "http://127.0.0.1:8081/v1", model: m }
  - { name: proxy, tier: cloud, url: "https://gw.example/openai/v1/", model: m }
  - { name: plain, tier: cloud, url: "https://api.example", model: m }
models:
  - { name: chat, backends: [edge, proxy, plain] }
`);
  const r = run('--check-config', p);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /: ok/);
  assert.match(r.stderr, /backends\[0\]\.url \(edge\): read as "http:\/\/127\.0\.0\.1:8081"; the \/v1 is dropped/);
  assert.match(r.stderr, /backends\[1\]\.url \(proxy\): read as "https:\/\/gw\.example\/openai"/);
  assert.doesNotMatch(r.stderr, /plain/);
});

test('--check-config: a url with a path of its own is the API\'s base, and the notice says where requests go', () => {
  const p = file(`backends:
  - { name: gemini, tier: cloud, url: "https://generativelanguage.googleapis.com/v1beta/openai/", model: m }
  - { name: groq, tier: cloud, url: "https://api.groq.com/openai/v1", model: m, api_key: k }
models:
  - { name: chat, backends: [gemini, groq] }
`);
  const r = run('--check-config', p);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /backends\[0\]\.url \(gemini\): requests go to https:\/\/generativelanguage\.googleapis\.com\/v1beta\/openai\/chat\/completions/);
  assert.doesNotMatch(r.stderr, /groq\): requests go to/);
  const twice = run('--check-config', file(`backends:
  - { name: b, tier: cloud, url: "http://127.0.0.1:8000/v1/v1", model: m }
models:
  - { name: chat, backends: [b] }
`));
  assert.equal(twice.status, 1);
  assert.match(twice.stderr, /backends\[0\]\.url: .* has \/v1 twice.*use "http:\/\/127\.0\.0\.1:8000\/v1"/);
});

test('starting with an invalid config exits 1 without listening', () => {
  const r = run('-c', file('listen: 12\n'));
  assert.equal(r.status, 1);
  assert.doesNotMatch(r.stderr, /listening on/);
});

test('--check-config: every shipped example is valid (with its secrets in the environment)', () => {
  const env = { ...process.env, APP_KEY: 'sk-app-1', INTERNAL_KEY: 'sk-int-1', ADMIN_KEY: 'sk-admin-1', OPENAI_API_KEY: 'sk-o', ANTHROPIC_API_KEY: 'sk-a', CLAUDE_CODE_KEY: 'sk-cc', CODEX_KEY: 'sk-cx', AZURE_OPENAI_API_KEY: 'az-k' };
  for (const f of ['examples/demo.yaml', 'examples/llamacpp-openai.yaml', 'examples/ollama.yaml', 'examples/claude-code.yaml', 'examples/codex.yaml', 'examples/azure.yaml']) {
    const r = spawnSync(bin, ['--check-config', f], { encoding: 'utf8', env, timeout: 10000 });
    assert.equal(r.status, 0, `${f}: ${r.stderr}`);
  }
});

test('--check-config: anthropic backends, dialects and anthropic_version are accepted', () => {
  const r = run('--check-config', file(`backends:
  - { name: c, tier: cloud, url: "https://api.anthropic.com", dialect: anthropic, model: m, anthropic_version: "2023-06-01" }
  - { name: both, tier: cloud, url: "https://gw.example", dialects: [anthropic, openai], model: m }
models:
  - { name: chat, backends: [c, both] }
`));
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /: ok/);
});

// `make run` = build + scripts/demo.sh: two llmsim processes on :8081/:8082 and
// the gateway on :8080 with examples/demo.yaml; Ctrl-C stops all three.
const DEMO_PORTS = [8080, 8081, 8082];
const portFree = (port) => new Promise((res) => {
  const srv = net.createServer();
  srv.once('error', () => res(false));
  srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
});

test('make run: scripts/demo.sh serves a streamed chat on :8080 and Ctrl-C frees its three ports', { timeout: 60000 }, async (t) => {
  const busy = [];
  for (const p of DEMO_PORTS) if (!(await portFree(p))) busy.push(p);
  if (busy.length) { t.skip(`the demo's fixed port(s) ${busy.join(', ')} already in use on this machine`); return; }

  const root = new URL('../..', import.meta.url).pathname;
  // Its own process group, so the finally below can stop whatever is left if the test fails.
  const demo = spawn('bash', ['scripts/demo.sh'], { cwd: root, env: { ...process.env, BUILD }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  demo.stdout.on('data', (d) => { out += d; });
  demo.stderr.on('data', (d) => { out += d; });
  let exited = null;
  const exit = new Promise((res) => demo.on('exit', (code, signal) => { exited = { code, signal }; res(exited); }));
  try {
    await waitFor(async () => {
      if (exited) throw new Error(`demo.sh exited early (${JSON.stringify(exited)}): ${out}`);
      try { return (await fetch('http://127.0.0.1:8080/healthz')).status === 200; } catch { return false; }
    }, { timeout: 20000, every: 100, what: 'http://127.0.0.1:8080/healthz' })
      .catch((e) => { throw new Error(`${e.message}; demo output: ${out}`); });

    const r = await fetch('http://127.0.0.1:8080/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'Hello!' }] }),
    });
    const body = await r.text();
    assert.equal(r.status, 200, body);
    assert.match(r.headers.get('content-type') || '', /^text\/event-stream/);
    assert.ok(r.headers.get('x-spillway-backend'), 'X-Spillway-Backend is set');
    assert.match(body, /^data: \{/);
    assert.match(body, /data: \[DONE\]\s*$/);

    demo.kill('SIGINT');
    const how = await Promise.race([exit, new Promise((res) => setTimeout(() => res(null), 15000))]);
    assert.ok(how, `demo.sh still running 15 s after SIGINT; output: ${out}`);
    await waitFor(async () => (await Promise.all(DEMO_PORTS.map(portFree))).every(Boolean),
      { timeout: 10000, every: 100, what: 'ports 8080-8082 free after Ctrl-C' });
  } finally {
    if (!exited) try { process.kill(-demo.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
});

// The harness removes its temporary directories: the config directory of a
// stopped, a failed and an abandoned spillway, and tempDir()s when the test
// process exits or is killed by SIGTERM. Each child runs with its own TMPDIR.
test('the test harness leaves no spillway-it-* directory behind', async () => {
  const harness = new URL('./lib/harness.mjs', import.meta.url).href;
  const tmp = tempDir('spillway-harness-');
  const left = (d) => readdirSync(d).filter((n) => n.startsWith('spillway-'));
  const node = (dir, script) => spawn(process.execPath, ['--input-type=module', '-e', script],
    { env: { ...process.env, TMPDIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  const finish = (child) => new Promise((res) => {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code, signal) => res({ code, signal, out }));
  });

  const runs = join(tmp, 'runs');
  mkdirSync(runs);
  const r = await finish(node(runs, `
    import { readdirSync } from 'node:fs';
    import { tmpdir } from 'node:os';
    import { startLlmsim, startSpillway, tempDir } from '${harness}';
    const left = () => readdirSync(tmpdir()).filter((n) => n.startsWith('spillway-'));
    const sim = await startLlmsim();
    const cfg = (url) => 'listen: "127.0.0.1:0"\\nbackends:\\n  - { name: e, tier: local, url: "' + url + '", model: m }\\nmodels:\\n  - { name: chat, backends: [e] }\\n';
    const gw = await startSpillway(cfg(sim.url));
    if (left().length !== 1) throw new Error('expected the config dir while running: ' + left());
    await gw.stop();
    console.log('after stop:', left().length);
    await startSpillway('listen: 12\\n').then(() => { throw new Error('started'); }, () => {});
    console.log('after failed start:', left().length);
    const abandoned = await startSpillway(cfg(sim.url));
    tempDir('spillway-extra-');
    abandoned.proc.kill('SIGKILL');
    await abandoned.exited;
    await sim.stop();
    console.log('at exit:', left().length);
  `));
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /after stop: 0/);
  assert.match(r.out, /after failed start: 0/);
  assert.match(r.out, /at exit: 2/);
  assert.deepEqual(left(runs), [], 'left behind after the process exited');

  const killed = join(tmp, 'killed');
  mkdirSync(killed);
  const child = node(killed, `
    import { tempDir } from '${harness}';
    tempDir('spillway-it-');
    console.log('ready');
    setInterval(() => {}, 1000);
  `);
  let said = '';
  child.stdout.on('data', (d) => { said += d; });
  const done = finish(child);
  await waitFor(() => said.includes('ready'), { timeout: 10000, what: 'the child to make its directory' });
  assert.equal(left(killed).length, 1);
  child.kill('SIGTERM');
  const k = await done;
  assert.equal(k.signal, 'SIGTERM', k.out);
  assert.deepEqual(left(killed), [], 'left behind after SIGTERM');
});

// ---- First-time mistakes: each message names the key or field and says what to do ----
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startLlmsim, startSpillway } from './lib/harness.mjs';

const OK_BACKENDS = `backends:
  - { name: edge, tier: local, url: "http://127.0.0.1:8081", model: m }
models:
  - { name: chat, backends: [edge] }
`;

// [what the user did, the file, the lines stderr must match (file:line:col
// prefixed where the mistake has a place), the exit status].
const CONFIG_MISTAKES = [
  ['a typo in a key', `routing:\n  ttft_budgt_ms: 800\n${OK_BACKENDS}`,
    [/:2:3: routing\.ttft_budgt_ms: unknown key; did you mean "ttft_budget_ms"\?/]],
  ['a word where a number goes', `routing:\n  ttft_budget_ms: fast\n${OK_BACKENDS}`,
    [/:2:19: routing\.ttft_budget_ms: expected an integer 1\.\.600000, got "fast"/]],
  ['a model without backends', `backends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:8081", model: m }\nmodels:\n  - { name: chat }\n`,
    [/:4:5: models\[0\]\.backends: required key is missing \(a list of backend names\)/]],
  ['a model naming a backend that is not defined', `backends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:8081", model: m }\nmodels:\n  - { name: chat, backends: [edg] }\n`,
    [/:4:\d+: models\[0\]\.backends\[0\]: unknown backend "edg" \(defined: edge\)/]],
  ['a url without scheme', `backends:\n  - { name: edge, tier: local, url: "127.0.0.1:8081", model: m }\nmodels:\n  - { name: chat, backends: [edge] }\n`,
    [/:2:\d+: backends\[0\]\.url: "127\.0\.0\.1:8081" must start with http:\/\/ or https:\/\/, e\.g\. "http:\/\/127\.0\.0\.1:8081"/]],
  ['a url with the endpoint path', `backends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:8081/v1/chat/completions", model: m }\nmodels:\n  - { name: chat, backends: [edge] }\n`,
    [/:2:\d+: backends\[0\]\.url: .* ends in the API endpoint \/chat\/completions; .*Spillway appends \/v1\/chat\/completions .*: use "http:\/\/127\.0\.0\.1:8081"$/m]],
  ['an unset ${VAR}', `backends:\n  - { name: oai, tier: cloud, url: "https://api.openai.com", model: gpt-4o-mini, api_key: "\${SPILLWAY_TEST_UNSET_KEY}" }\nmodels:\n  - { name: chat, backends: [oai] }\n`,
    [/:2:\d+: backends\[0\]\.api_key: environment variable SPILLWAY_TEST_UNSET_KEY is not set; export it .*SPILLWAY_TEST_UNSET_KEY=\.\.\. spillway -c FILE/]],
  ['the server\'s name as dialect', `backends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:11434", model: m, dialect: ollama }\nmodels:\n  - { name: chat, backends: [edge] }\n`,
    [/:2:\d+: backends\[0\]\.dialect: "ollama" is not one of openai, anthropic, responses, azure[a-z_, ]*; .*Ollama.* speak openai/]],
  ['two backends with one name', `backends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:8081", model: m }\n  - { name: edge, tier: local, url: "http://127.0.0.1:8082", model: m }\nmodels:\n  - { name: chat, backends: [edge] }\n`,
    [/:3:13: backends\[1\]\.name: duplicate name "edge" \(also backends\[0\]\); names must be unique/]],
  ['listen without a port', `listen: "8080"\n${OK_BACKENDS}`,
    [/:1:9: listen: "8080" has no port; expected "host:port" .* e\.g\. "127\.0\.0\.1:8080"/]],
  ['a backend without model', `backends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:8081" }\nmodels:\n  - { name: chat, backends: [edge] }\n`,
    [/:2:5: backends\[0\]\.model: required key is missing \(the model id the upstream expects\)/]],
  ['a backend without tier', `backends:\n  - { name: edge, url: "http://127.0.0.1:8081", model: m }\nmodels:\n  - { name: chat, backends: [edge] }\n`,
    [/:2:5: backends\[0\]\.tier: required key is missing \(local or cloud\)/]],
  ['the admin key reused as a client key', `keys:\n  - { name: app, key: "sk-one-secret-value" }\nadmin: { key: "sk-one-secret-value" }\n${OK_BACKENDS}`,
    [/:3:15: admin\.key: same secret as keys\[0\] \("app"\); the admin key must differ from every client key/]],
  ['an on_cap that does not exist', `routing:\n  spend: { cap_usd: 10, on_cap: stop }\n${OK_BACKENDS}`,
    [/:2:\d+: routing\.spend\.on_cap: "stop" is not one of shed, degrade, keep_local/]],
  ['an empty file', '', [/:1:1: the file is empty; expected a mapping with at least backends and models/]],
  ['OpenAI without api_key (valid, with a notice)', `backends:\n  - { name: oai, tier: cloud, url: "https://api.openai.com", model: gpt-4o-mini }\nmodels:\n  - { name: chat, backends: [oai] }\n`,
    [/notice: backends\[0\] \(oai\): no api_key, so the provider will answer 401; add api_key: "\$\{OPENAI_API_KEY\}"/], 0],
];

test('--check-config: each first-time mistake names file:line, the key, the value and the fix', () => {
  const secret = 'sk-one-secret-value';
  for (const [what, yaml, want, status = 1] of CONFIG_MISTAKES) {
    const p = file(yaml);
    const env = { ...process.env };
    delete env.SPILLWAY_TEST_UNSET_KEY;
    const r = spawnSync(bin, ['--check-config', p], { encoding: 'utf8', env, timeout: 10000 });
    assert.equal(r.status, status, `${what}: ${r.stderr}`);
    for (const re of want) {
      assert.ok(r.stderr.includes(p), `${what}: the message names the file: ${r.stderr}`);
      assert.match(r.stderr, re, what);
    }
    assert.ok(!r.stderr.includes(secret), `${what}: a secret is never printed`);
    assert.doesNotMatch(r.stderr, /Sanitizer|runtime error:/, what);
  }
  const missing = run('--check-config', '/nonexistent/spillway.yaml');
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /\/nonexistent\/spillway\.yaml: cannot read: No such file or directory; check the path/);
});

test('command line mistakes say how to call it', () => {
  const noConfig = run();
  assert.equal(noConfig.status, 2);
  assert.match(noConfig.stderr, /no config given; use -c FILE \(see --help\)/);
  const flag = run('--bogus');
  assert.equal(flag.status, 2);
  assert.match(flag.stderr, /unrecognized option '--bogus'[\s\S]*Usage: spillway -c FILE/);
  const level = run('-c', 'x.yaml', '--log-level', 'loud');
  assert.equal(level.status, 2);
  assert.match(level.stderr, /--log-level: 'loud' is not one of debug, info, warn, error/);
  const plan = run('plan');
  assert.equal(plan.status, 2);
  assert.match(plan.stderr, /spillway plan: needs -c CONFIG and exactly one of --trace FILE or --synthetic SPEC \(see spillway plan --help\)/);
  const planHelp = run('plan', '--help');
  assert.equal(planHelp.status, 0);
  assert.match(planHelp.stdout, /--synthetic SPEC/);
});

test('start-up: a port in use and an unreachable backend say what to check', async () => {
  const holder = net.createServer();
  await new Promise((res) => holder.listen(0, '127.0.0.1', res));
  const port = holder.address().port;
  try {
    const r = spawnSync(bin, ['-c', file(`listen: "127.0.0.1:${port}"\n${OK_BACKENDS}`)], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use; .*change listen: in the config`));
  } finally {
    holder.close();
  }
  // Port 1 on loopback: nothing listens there.
  const gw = await startSpillway(`listen: "127.0.0.1:0"\nbackends:\n  - { name: edge, tier: local, url: "http://127.0.0.1:1", model: m }\nmodels:\n  - { name: chat, backends: [edge] }\n`);
  try {
    assert.match(gw.output(), /backend edge \(http:\/\/127\.0\.0\.1:1\) failed its start-up check: GET \/v1\/models: .*; is the server running and listening at this backend's url\?/);
  } finally {
    await gw.stop();
  }
});

test('request mistakes: each answer names the header, field or limit and what to do', async () => {
  const sim = await startLlmsim(['--model', 'm']);
  const gw = await startSpillway(`listen: "127.0.0.1:0"
keys:
  - { name: app, key: "sk-app-errmsg" }
admin: { key: "sk-admin-errmsg" }
backends:
  - { name: edge, tier: local, url: "${sim.url}", model: m }
  - { name: gone, tier: cloud, url: "http://127.0.0.1:1", model: m }
  - { name: priced, tier: cloud, url: "${sim.url}", model: m, price: { input_usd_per_mtok: 10000, output_usd_per_mtok: 10000 } }
models:
  - { name: chat, backends: [edge] }
  - { name: deadchat, backends: [gone] }
  - { name: capped, backends: [priced] }
routing:
  spend: { cap_usd: 0.01, window: hour, on_cap: shed }
limits: { max_body_bytes: 4000, max_header_bytes: 4096, client_timeout_ms: 1000 }
`);
  const url = `${gw.url}/v1/chat/completions`;
  const auth = { authorization: 'Bearer sk-app-errmsg', 'content-type': 'application/json' };
  const post = async (body, headers = auth, path = url) => {
    const r = await fetch(path, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: r.status, headers: r.headers, body: await r.json() };
  };
  const hi = [{ role: 'user', content: 'hi' }];
  // [what, request, status, code, param, message]
  const cases = [
    ['no key', () => post({ model: 'chat', messages: hi }, { 'content-type': 'application/json' }),
      401, 'missing_api_key', null, /Send it as 'Authorization: Bearer KEY' \(or 'x-api-key: KEY'\)/],
    ['a Basic Authorization', () => post({ model: 'chat', messages: hi }, { authorization: 'Basic YTpi' }),
      401, 'missing_api_key', null, /The Authorization header is not a bearer token\. Send the key as 'Authorization: Bearer KEY'/],
    ['a wrong key', () => post({ model: 'chat', messages: hi }, { authorization: 'Bearer sk-wrong' }),
      401, 'invalid_api_key', null, /one of the secrets under keys: in the gateway's config/],
    ['broken JSON', () => post('{"model":'),
      400, 'invalid_json', null, /could not parse the JSON body .* line 1 column \d+/],
    ['no model', () => post({ messages: hi }),
      400, 'missing_required_parameter', 'model', /Missing required parameter: 'model'/],
    ['an unknown role', () => post({ model: 'chat', messages: [{ role: 'robot', content: 'hi' }] }),
      400, 'invalid_value', 'messages[0].role', /'robot'\. Supported values are: 'system', .*'user'/],
    ['a string temperature', () => post({ model: 'chat', temperature: 'hot', messages: hi }),
      400, 'invalid_type', 'temperature', /expected a number, but got a string/],
    ['n above 1', () => post({ model: 'chat', n: 3, messages: hi }),
      400, 'invalid_value', 'n', /set 'n' to 1 or leave it out/],
    ['a body over the limit', () => post({ model: 'chat', messages: [{ role: 'user', content: 'a'.repeat(5000) }] }),
      413, 'request_too_large', null, /the limit is 4000 bytes\. Send a smaller request, or raise limits\.max_body_bytes/],
    ['headers over the limit', () => post({ model: 'chat', messages: hi }, { ...auth, 'x-junk': 'a'.repeat(5000) }),
      431, 'request_header_fields_too_large', null, /over the limit of 4096 bytes\. .*raise limits\.max_header_bytes/],
    ['a misspelt path', () => post({ model: 'chat', messages: hi }, auth, `${gw.url}/v1/chat/completion`),
      404, 'unknown_url', null, /Unknown URL: \/v1\/chat\/completion\. Spillway serves POST \/v1\/chat\/completions/],
    ['an unknown admin path', () => post({}, { authorization: 'Bearer sk-admin-errmsg' }, `${gw.url}/admin/backends/edge/drain`),
      404, 'unknown_url', null, /The admin API serves GET \/admin\/state/],
    ['the client key on the admin API', () => post({}, auth, `${gw.url}/admin/reload`),
      401, 'invalid_admin_key', null, /'Authorization: Bearer ADMIN_KEY', the secret under admin\.key/],
    ['the spend cap reached', () => post({ model: 'capped', max_tokens: 5, messages: hi }),
      429, 'budget_exhausted', null, /spend cap is reached.* Retry in \d+ s \(the Retry-After header\); routing\.spend\.cap_usd/],
  ];
  try {
    for (const [what, send, status, code, param, message] of cases) {
      const r = await send();
      assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code, what);
      assert.equal(r.body.error.param, param, what);
      assert.match(r.body.error.message, message, what);
      assert.ok(!r.body.error.message.includes('sk-app-errmsg') && !r.body.error.message.includes('sk-admin-errmsg'), `${what}: no secret`);
      if (status === 429) assert.match(r.headers.get('retry-after') || '', /^\d+$/, what);
    }

    // A client that stops sending mid-body: 408 naming the limit.
    const timedOut = await new Promise((res, rej) => {
      const s = net.connect(gw.port, '127.0.0.1', () => s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer sk-app-errmsg\r\nContent-Length: 100\r\n\r\n{"mo'));
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('close', () => res(got));
      s.on('error', rej);
    });
    assert.match(timedOut, /^HTTP\/1\.1 408/);
    assert.match(timedOut, /"code":"request_timeout"/);
    assert.match(timedOut, /raise limits\.client_timeout_ms/);

    // Through the official SDKs: the model that does not exist, and every backend down.
    const oai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-app-errmsg', maxRetries: 0 });
    const nf = await oai.chat.completions.create({ model: 'gpt-4o', messages: hi }).catch((e) => e);
    assert.equal(nf.status, 404);
    assert.equal(nf.code, 'model_not_found');
    assert.equal(nf.param, 'model');
    assert.match(nf.message, /The model 'gpt-4o' does not exist\. This gateway serves 'chat', 'deadchat', 'capped' \(GET \/v1\/models lists them; models: in the gateway's config/);
    const down = await oai.chat.completions.create({ model: 'deadchat', messages: hi }).catch((e) => e);
    assert.equal(down.status, 503);
    assert.equal(down.code, 'all_backends_failed');
    assert.match(down.message, /gone: /);
    assert.match(down.message, /GET \/admin\/state/);
    const anth = new Anthropic({ baseURL: gw.url, apiKey: 'sk-app-errmsg', maxRetries: 0 });
    const over = await anth.messages.create({ model: 'deadchat', max_tokens: 10, messages: hi }).catch((e) => e);
    assert.equal(over.status, 529);
    assert.equal(over.error?.error?.type, 'overloaded_error');
    assert.match(over.error.error.message, /gone: /);
    assert.match(over.error.error.message, /GET \/admin\/state/);
  } finally {
    await gw.stop();
    await sim.stop();
  }
});
