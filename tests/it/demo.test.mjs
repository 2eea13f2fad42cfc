// The demo (`make run` = scripts/demo.sh) end to end: it starts two llmsim
// processes, the gateway with a generated admin key and the traffic
// generator, and prints a dashboard URL; that URL alone (no key typed) opens
// a dashboard in headless Chromium whose charts show the demo's traffic and
// its spike (requests spilled to the cloud). Stopping the script stops every
// process it started. A screenshot goes to tests/it/artifacts/demo.png; with
// UPDATE_SCREENSHOT=1 it also replaces docs/dashboard.png (the README's).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { BUILD, startProcess, waitFor, tempDir } from './lib/harness.mjs';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'tests/it/artifacts');

// A port free right now (the demo needs fixed ports for its configuration).
function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

// Processes whose command line names this run's gateway port (the traffic generator).
const leftovers = (port) => execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
  .split('\n').filter((l) => l.includes(`127.0.0.1:${port}`) && !l.includes('ps -eo'));

test('the demo prints a dashboard URL that opens charts with its traffic and spike, no key typed', { timeout: 120000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: scripts/deps.sh test installs Debian's chromium`);
  const [port, localPort, cloudPort] = [await freePort(), await freePort(), await freePort()];
  const profile = tempDir('spillway-chromium-');
  let demo, browser;
  try {
    demo = await startProcess(join(ROOT, 'scripts/demo.sh'), [], {
      timeout: 30000,
      env: { BUILD, DEMO_PORT: String(port), DEMO_LOCAL_PORT: String(localPort), DEMO_CLOUD_PORT: String(cloudPort), DEMO_SPIKE_EVERY: '10' },
    });
    const url = await waitFor(() => /Dashboard: (http:\S+)/.exec(demo.output())?.[1],
      { timeout: 15000, what: `the dashboard URL in the demo's output:\n${demo.output()}` });
    assert.match(url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/dashboard#key=[0-9a-f]{48}$`));

    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1440, height: 1000 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
    });
    const page = browser.pages()[0] || await browser.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    const resp = await page.goto(url);
    assert.equal(resp.status(), 200);

    const shown = () => page.evaluate(() => {
      const a = (id, k) => document.querySelector(`[data-testid="${id}"]`)?.getAttribute(k);
      return {
        login: document.getElementById('login').classList.contains('on'),
        points: Number(a('charts', 'data-points')),
        local: Number(a('series-requests-local', 'data-sum')),
        cloud: Number(a('series-requests-cloud', 'data-sum')),
        spilled: Number(document.getElementById('chart-spill').dataset.spilled || 0),
        rejected: Number(a('series-rejections-model_not_found', 'data-sum') || 0),
      };
    });
    // The trickle is served locally; the first spike (10 s in) overflows to the cloud.
    let last;
    await waitFor(async () => {
      last = await shown();
      return !last.login && last.points === 900 && last.local > 0 && last.cloud > 0 && last.spilled > 0 && last.rejected > 0;
    }, { timeout: 60000, every: 500, what: 'the demo dashboard to chart local traffic and a spike' })
      .catch((e) => { throw new Error(`${e.message}; last seen ${JSON.stringify(last)}`); });
    assert.deepEqual(errors, []);

    // The picture: the 5-minute window; for the README's, a few spikes' worth of it.
    await page.click('[data-testid="window-300"]');
    await waitFor(() => page.evaluate(() => document.querySelector('[data-testid="charts"]').dataset.points === '300'),
      { timeout: 10000, what: 'the 5-minute window' });
    if (process.env.UPDATE_SCREENSHOT === '1') {
      const start = Date.now();
      await waitFor(() => Date.now() - start > 95000, { timeout: 100000, every: 1000, what: 'a few spikes' });
    }
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'demo.png') });
    if (process.env.UPDATE_SCREENSHOT === '1') copyFileSync(join(ARTIFACTS, 'demo.png'), join(ROOT, 'docs/dashboard.png'));
  } finally {
    if (browser) await browser.close();
    if (demo) await demo.stop();
    rmSync(profile, { recursive: true, force: true });
  }
  // Stopping the demo stops what it started: the gateway's port is free and no traffic generator is left.
  await waitFor(() => leftovers(port).length === 0, { timeout: 10000, what: `no process of the demo left: ${leftovers(port).join('; ')}` });
  await new Promise((res, rej) => { const s = createServer(); s.on('error', rej); s.listen(port, '127.0.0.1', () => s.close(res)); });
});
