// The Codex CLI as the tests run it (clients_codex, agents_hybrid): its
// config.toml at a gateway, a recording proxy in front of the gateway, and
// one bounded `codex exec` in a fresh HOME. See clients_codex.test.mjs for
// what is turned off and why.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDir } from './harness.mjs';

export const CODEX = resolve(new URL('../../../node_modules/.bin/codex', import.meta.url).pathname);
export const RUN_TIMEOUT_MS = 90000;

// The config.toml of docs/clients.md, at `baseUrl`, for gateway model `model`;
// `defaultTools` leaves Codex's web_search and sub-agent (namespace) tools on.
export function codexConfig(baseUrl, model, { defaultTools = false } = {}) {
  return `model = "${model}"
model_provider = "spillway"
check_for_update_on_startup = false
${defaultTools ? '' : 'web_search = "disabled"'}

[model_providers.spillway]
name = "Spillway"
base_url = "${baseUrl}"
env_key = "SPILLWAY_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[agents]
enabled = ${defaultTools}

[features]
plugins = false
remote_plugin = false
apps = false
goals = false
image_generation = false
api_key_model_discovery = false
`;
}

// A proxy on 127.0.0.1 in front of `target`: records each request (method,
// path, body) and each answer (status, route headers, what checkAnswer read).
export async function recordingProxy(target) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rec = { method: req.method, path: req.url, body: body.length ? JSON.parse(body) : null };
      seen.push(rec);
      const headers = { ...req.headers };
      delete headers.host;
      const up = http.request(`${target}${req.url}`, { method: req.method, headers }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        const parts = [];
        ur.on('data', (d) => { parts.push(d); res.write(d); });
        ur.on('end', () => {
          Object.assign(rec, {
            status: ur.statusCode, backend: ur.headers['x-spillway-backend'], reason: ur.headers['x-spillway-reason'],
            text: Buffer.concat(parts).toString(), contentType: ur.headers['content-type'],
          });
          res.end();
        });
      });
      up.on('error', (e) => { rec.status = 502; rec.text = String(e); res.writeHead(502); res.end(); });
      up.end(body);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    stop: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

// Runs `codex exec PROMPT` against baseUrl in a fresh HOME; resolves
// { code, stdout, stderr } or fails after RUN_TIMEOUT_MS, its process group
// killed either way.
export async function runCodex(baseUrl, model, prompt, opts, files = {}) {
  const home = tempDir('spillway-codex-');
  const codexHome = join(home, '.codex');
  const work = join(home, 'work');
  mkdirSync(codexHome);
  mkdirSync(work);
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(baseUrl, model, opts));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(work, name), text);
  const env = {
    PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, SPILLWAY_API_KEY: 'sk-codex-client',
    HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', ALL_PROXY: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1,localhost', LANG: 'C.UTF-8',
  };
  const proc = spawn(CODEX, ['exec', '--skip-git-repo-check', '-C', work, prompt],
    { env, cwd: work, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  const killGroup = () => { try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ } };
  let timer;
  try {
    const code = await new Promise((res, rej) => {
      proc.on('exit', (c, sig) => res(c ?? sig));
      proc.on('error', rej);
      timer = setTimeout(() => rej(new Error(`codex exec still running after ${RUN_TIMEOUT_MS} ms:\n${stderr.slice(-2000)}`)), RUN_TIMEOUT_MS);
    });
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
    killGroup();
  }
}

