// The live dashboard (GET /dashboard) in headless Chromium: Debian's
// /usr/bin/chromium driven by playwright-core. Real spillway in front of two
// llmsim processes: a slow one-slot local box held busy by restricted
// requests (so it has a request in flight and a queue) and a priced cloud
// that takes the overflow (so there is a spill ratio and spend). The page
// must render values equal to what /admin/state and /metrics say, update
// live, list the latest decisions, load nothing from outside the gateway,
// and a screenshot goes to tests/it/artifacts/dashboard.png.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';

const ADMIN = 'sk-admin-dashboard';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = resolve(new URL('.', import.meta.url).pathname, 'artifacts');
const auth = { authorization: `Bearer ${ADMIN}` };

// Prometheus text format -> [{ name, labels, value }] (what the page does too).
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || line.startsWith('#')) continue;
    const labels = {};
    for (const lm of (m[2] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
    out.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return out;
}
const metric = (samples, name, labels = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

function chat(gw, { maxTokens = 8, restricted = false, signal } = {}) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', ...(restricted ? { 'x-spillway-allow-cloud': 'false' } : {}) },
    body: JSON.stringify({ model: 'chat', max_tokens: maxTokens, messages: [{ role: 'user', content: 'hello dashboard' }] }),
  }).then(async (r) => ({ status: r.status, backend: r.headers.get('x-spillway-backend'), text: await r.text() }));
}

test('the dashboard renders live values that match /metrics and /admin/state', { timeout: 90000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: scripts/deps.sh test installs Debian's chromium`);
  const procs = [];
  const hold = new AbortController();
  const profile = mkdtempSync(join(tmpdir(), 'spillway-chromium-'));
  let browser;
  try {
    // 20 tokens/s and 400 max tokens: a held request keeps the one slot ~20 s.
    const edge = await startLlmsim(['--model', 'edge-model', '--slots', '1', '--decode-tps', '20']);
    procs.push(edge);
    const cloud = await startLlmsim(['--model', 'cloud-model']);
    procs.push(cloud);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin:
  key: "${ADMIN}"
backends:
  - { name: "edge", tier: "local", url: "${edge.url}", model: "edge-model", slots: 1 }
  - { name: "cloud", tier: "cloud", url: "${cloud.url}", model: "cloud-model",
      price: { input_usd_per_mtok: 3, output_usd_per_mtok: 15 } }
models:
  - { name: "chat", backends: ["edge", "cloud"] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 500
  spend:
    cap_usd: 5
`);
    procs.push(gw);

    // One baseline request served locally, so the ratio is not trivially 1.
    const first = await chat(gw);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.backend, 'edge');

    // Restricted requests hold the local slot and queue behind it (they may
    // not spill); they are aborted at the end.
    const held = Array.from({ length: 3 }, () => chat(gw, { maxTokens: 400, restricted: true, signal: hold.signal }).catch(() => null));
    await waitFor(async () => {
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
      const b = st.backends.find((x) => x.name === 'edge');
      return b.in_flight === 1 && b.queued === 2;
    }, { timeout: 10000, what: 'edge busy with 1 in flight and 2 queued' });

    // Cloud-eligible requests now overflow to the priced cloud.
    const spilled = await Promise.all(Array.from({ length: 4 }, () => chat(gw)));
    for (const r of spilled) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.backend, 'cloud');
    }

    // A fresh profile: playwright takes the --user-data-dir as launchPersistentContext's first argument.
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 900 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
    });
    const page = browser.pages()[0] || await browser.newPage();
    const foreign = [];
    const consoleErrors = [];
    page.on('request', (req) => { if (!req.url().startsWith(gw.url)) foreign.push(req.url()); });
    page.on('console', (msg) => { if (msg.type() === 'error') consoleErrors.push(msg.text()); });
    page.on('pageerror', (err) => consoleErrors.push(String(err)));

    const resp = await page.goto(`${gw.url}/dashboard#key=${encodeURIComponent(ADMIN)}`);
    assert.equal(resp.status(), 200);
    assert.match(resp.headers()['content-type'] || '', /^text\/html/);

    // What the page shows, read from stable test ids (data-value: the raw number).
    const shown = () => page.evaluate(() => {
      const v = (id) => document.querySelector(`[data-testid="${id}"]`)?.dataset.value;
      return {
        polls: Number(document.querySelector('[data-testid="last-update"]').dataset.polls),
        edgeInFlight: v('backend-edge-inflight'), edgeQueue: v('backend-edge-queue'),
        edgeHealth: v('backend-edge-health'), edgeBreaker: v('backend-edge-breaker'),
        cloudBreaker: v('backend-cloud-breaker'),
        spill: v('spill-ratio'), spend: v('spend'), cap: v('spend-cap'),
        decisions: [...document.querySelectorAll('[data-testid="decision-row"]')].map((r) => r.dataset.requestId),
      };
    });

    // Poll until one rendering matches the gateway's own answers, read just
    // before and after it (so nothing moved in between).
    let last;
    await waitFor(async () => {
      const st = (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
      const samples = parseMetrics(await (await fetch(`${gw.url}/metrics`)).text());
      const dec = (await getJSON(`${gw.url}/admin/decisions?n=20`, { headers: auth })).body;
      const page1 = await shown();
      const st2 = (await getJSON(`${gw.url}/admin/state`, { headers: auth })).body;
      const edgeSt = st.backends.find((b) => b.name === 'edge');
      const spill = metric(samples, 'spillway_spill_ratio')?.value;
      const spend = metric(samples, 'spillway_cloud_spend_usd')?.value;
      const cap = metric(samples, 'spillway_cloud_spend_cap_usd')?.value;
      last = { page: page1, edgeSt, spill, spend, cap, nDecisions: dec.decisions?.length };
      return page1.polls >= 2 && JSON.stringify(st.backends) === JSON.stringify(st2.backends) &&
        Number(page1.edgeInFlight) === edgeSt.in_flight && Number(page1.edgeQueue) === edgeSt.queued &&
        edgeSt.in_flight === 1 && edgeSt.queued === 2 &&
        page1.edgeHealth === edgeSt.health && page1.edgeBreaker === edgeSt.breaker &&
        spill > 0 && Number(page1.spill) === spill &&
        spend > 0 && Number(page1.spend) === spend && Number(page1.cap) === cap &&
        page1.decisions.length === dec.decisions.length && page1.decisions[0] === dec.decisions[0].request_id;
    }, { timeout: 15000, every: 200, what: 'the dashboard to match the gateway' })
      .catch((e) => { throw new Error(`${e.message}; last seen: ${JSON.stringify(last)}`); });

    // /metrics and /admin/state agree with each other on what the page showed.
    assert.equal(last.cap, 5);
    assert.equal(last.nDecisions, 5, 'one baseline + four spilled requests have finished');
    assert.equal(last.spill, 4 / 5);

    // Live: a new decision shows up without reloading.
    const extra = await chat(gw);
    assert.equal(extra.status, 200, extra.text);
    await waitFor(async () => (await shown()).decisions.length === 6, { timeout: 5000, what: 'the new decision row' });

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    assert.deepEqual(foreign, [], 'the page loads nothing from outside the gateway');
    assert.deepEqual(consoleErrors, []);
  } finally {
    hold.abort();
    if (browser) await browser.close();
    for (const p of procs.reverse()) await p.stop();
    rmSync(profile, { recursive: true, force: true });
  }
});

test('the admin key from #key= lives in sessionStorage only and leaves the address bar', { timeout: 60000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: scripts/deps.sh test installs Debian's chromium`);
  const procs = [];
  const profile = mkdtempSync(join(tmpdir(), 'spillway-chromium-'));
  let browser;
  try {
    const edge = await startLlmsim(['--model', 'edge-model']);
    procs.push(edge);
    const gw = await startSpillway(`
listen: "127.0.0.1:0"
admin:
  key: "${ADMIN}"
backends:
  - { name: "edge", tier: "local", url: "${edge.url}", model: "edge-model", slots: 1 }
models:
  - { name: "chat", backends: ["edge"] }
routing:
  health_interval_ms: 100
`);
    procs.push(gw);

    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
    });
    const page = browser.pages()[0] || await browser.newPage();
    const resp = await page.goto(`${gw.url}/dashboard#key=${encodeURIComponent(ADMIN)}`);
    assert.equal(resp.status(), 200);

    // Data shown: at least one poll done with the key, and the backend row rendered from /admin/state.
    await waitFor(() => page.evaluate(() =>
      Number(document.querySelector('[data-testid="last-update"]')?.dataset.polls) >= 1 &&
      document.querySelector('[data-testid="backend-edge-health"]')?.dataset.value !== undefined),
    { timeout: 15000, every: 100, what: 'the dashboard to show data' });

    const seen = await page.evaluate(() => {
      const local = {};
      for (let i = 0; i < localStorage.length; i++) local[localStorage.key(i)] = localStorage.getItem(localStorage.key(i));
      const session = {};
      for (let i = 0; i < sessionStorage.length; i++) session[sessionStorage.key(i)] = sessionStorage.getItem(sessionStorage.key(i));
      return { href: location.href, hash: location.hash, local, session, cookie: document.cookie };
    });
    assert.ok(!seen.href.includes(ADMIN) && !seen.hash.includes('key='), `the key is still in the address bar: ${seen.href}`);
    assert.ok(Object.values(seen.session).includes(ADMIN), `sessionStorage holds the key: ${JSON.stringify(seen.session)}`);
    assert.ok(!JSON.stringify(seen.local).includes(ADMIN), `localStorage must not hold the key: ${JSON.stringify(seen.local)}`);
    assert.ok(!seen.cookie.includes(ADMIN), `no cookie with the key: ${seen.cookie}`);
    const cookies = await browser.cookies();
    assert.ok(!JSON.stringify(cookies).includes(ADMIN), `no cookie with the key: ${JSON.stringify(cookies)}`);
  } finally {
    if (browser) await browser.close();
    for (const p of procs.reverse()) await p.stop();
    rmSync(profile, { recursive: true, force: true });
  }
});
