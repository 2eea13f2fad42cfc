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
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { startLlmsim, startSpillway, waitFor, getJSON, tempDir } from './lib/harness.mjs';

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
  const profile = tempDir('spillway-chromium-');
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
  const profile = tempDir('spillway-chromium-');
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

test('the charts plot what /admin/series and /metrics say, over a selectable window, with breaker and emergency markers', { timeout: 120000 }, async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: scripts/deps.sh test installs Debian's chromium`);
  const procs = [];
  const profile = tempDir('spillway-chromium-');
  let browser;
  try {
    // A one-slot local box at 20 tokens/s: a spike of 6 at once overflows to the priced cloud.
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
  - { name: "cloud-only", backends: ["cloud"] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: 500
  breaker: { failures: 2, cooldown_ms: 3600000 }
  spend:
    cap_usd: 5
`);
    procs.push(gw);

    // Baseline: three served locally one after another; then the spike, and one rejection.
    for (let i = 0; i < 3; i++) assert.equal((await chat(gw)).status, 200);
    const spike = await Promise.all(Array.from({ length: 6 }, () => chat(gw, { maxTokens: 30 })));
    for (const r of spike) assert.equal(r.status, 200, r.text);
    assert.ok(spike.some((r) => r.backend === 'cloud'), 'the spike spilled over');
    const bad = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }) });
    assert.equal(bad.status, 404);
    await bad.text();

    // The counters, once the traffic is over; the gateway is fresh, so they are the deltas of its life.
    const samples = parseMetrics(await (await fetch(`${gw.url}/metrics`)).text());
    const sum = (name, labels) => samples.filter((s) => s.name === name &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
    const want = {
      local: sum('spillway_requests_total', { tier: 'local' }),
      cloud: sum('spillway_requests_total', { tier: 'cloud' }),
      spilled: sum('spillway_spilled_requests_total', {}),
      rejected: sum('spillway_rejections_total', { code: 'model_not_found' }),
      spend: metric(samples, 'spillway_cloud_spend_usd').value,
    };
    assert.equal(want.local + want.cloud, 9);
    assert.ok(want.cloud > 0 && want.spilled > 0 && want.rejected === 1 && want.spend > 0, JSON.stringify(want));

    // /admin/series: the 1 s timer has sampled them all.
    const seriesSum = (a) => a.reduce((x, v) => x + (v || 0), 0);
    let sr;
    await waitFor(async () => {
      sr = (await getJSON(`${gw.url}/admin/series?window=900`, { headers: auth })).body;
      return seriesSum(sr.requests.local) === want.local && seriesSum(sr.requests.cloud) === want.cloud &&
        seriesSum(sr.rejections.model_not_found || []) === 1 && sr.spend_usd.at(-1) === want.spend;
    }, { timeout: 10000, every: 200, what: 'the series to hold every request' })
      .catch((e) => { throw new Error(`${e.message}; want ${JSON.stringify(want)}, got local ${sr && seriesSum(sr.requests.local)}, cloud ${sr && seriesSum(sr.requests.cloud)}`); });
    assert.equal(sr.t.length, 900);
    assert.equal(seriesSum(sr.spilled), want.spilled);
    assert.equal(sr.backends.edge.tier, 'local');
    assert.equal(sr.backends.edge.slots.at(-1), 1);
    assert.equal(sr.ttft_budget_ms.at(-1), 500);
    assert.ok(sr.ttft_ms.local.p50.some((v) => v > 0) && sr.ttft_ms.cloud.p99.some((v) => v > 0));
    assert.ok(sr.memory_bytes > 0 && sr.memory_bytes < 1 << 20, `memory bound: ${sr.memory_bytes}`);
    assert.equal((await getJSON(`${gw.url}/admin/series?window=0`, { headers: auth })).status, 400);
    assert.equal((await getJSON(`${gw.url}/admin/series`)).status, 401);

    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 1000 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
    });
    const page = browser.pages()[0] || await browser.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    await page.goto(`${gw.url}/dashboard#key=${encodeURIComponent(ADMIN)}`);

    // The plotted numbers, as each line states them (data-* and its aria-label).
    const plotted = () => page.evaluate(() => {
      const p = (id) => {
        const e = document.querySelector(`[data-testid="${id}"]`);
        return e ? { sum: Number(e.dataset.sum), last: e.dataset.last === '' ? null : Number(e.dataset.last), count: Number(e.dataset.count), aria: e.getAttribute('aria-label') } : null;
      };
      const c = document.querySelector('[data-testid="charts"]').dataset;
      return {
        window: Number(c.window), points: Number(c.points),
        local: p('series-requests-local'), cloud: p('series-requests-cloud'),
        spilled: Number(document.getElementById('chart-spill').dataset.spilled),
        rejected: p('series-rejections-model_not_found'),
        budget: p('series-ttft-budget'), spend: p('series-spend-spend'), cap: p('series-spend-cap'),
        slots: p('series-local-edge-slots'), localP50: p('series-ttft-local-p50'),
        markers: [...document.querySelectorAll('#chart-requests [data-testid="marker"]')].map((m) => `${m.dataset.kind}:${m.dataset.state}`),
      };
    });
    let got;
    const matches = (w) => async () => {
      got = await plotted();
      return got.window === w && got.points === w && got.local?.sum === want.local && got.cloud?.sum === want.cloud &&
        got.spilled === want.spilled && got.rejected?.sum === 1 && got.budget?.last === 500 &&
        got.spend?.last === want.spend && got.cap?.last === 5 && got.slots?.last === 1 && got.localP50?.count > 0;
    };
    const fail = (e) => { throw new Error(`${e.message}; want ${JSON.stringify(want)}, plotted ${JSON.stringify(got)}`); };
    await waitFor(matches(900), { timeout: 15000, every: 200, what: 'the 15-minute charts to plot the counters' }).catch(fail);
    assert.match(got.local.aria, new RegExp(`^local: sum ${want.local},`));

    // The window selector: 5 and 60 minutes plot the same requests over 300 and 3600 seconds.
    await page.click('[data-testid="window-300"]');
    await waitFor(matches(300), { timeout: 15000, every: 200, what: 'the 5-minute window' }).catch(fail);
    assert.equal(await page.getAttribute('[data-testid="window-300"]', 'aria-pressed'), 'true');
    await page.click('[data-testid="window-3600"]');
    await waitFor(matches(3600), { timeout: 15000, every: 200, what: 'the 60-minute window' }).catch(fail);

    // The cloud failing opens its breaker (a marker), the admin reset closes it (another).
    await fetch(`${cloud.url}/admin/faults`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error_rate: 1, error_status: 503 }) }).then((r) => r.text());
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'cloud-only', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }) });
      assert.ok(r.status >= 500, `cloud-only answered ${r.status}`);
      await r.text();
    }
    await fetch(`${cloud.url}/admin/faults`, { method: 'DELETE' }).then((r) => r.text());
    await waitFor(async () => (await getJSON(`${gw.url}/admin/series?window=60`, { headers: auth })).body.events.some((e) => e.state === 'open'),
      { timeout: 10000, what: 'the open breaker sampled' });
    const reset = await fetch(`${gw.url}/admin/breakers/cloud/reset`, { method: 'POST', headers: auth });
    assert.equal(reset.status, 200, await reset.text());
    await waitFor(async () => (got = await plotted()).markers.join() === 'breaker:open,breaker:closed',
      { timeout: 15000, every: 200, what: 'the breaker markers' }).catch(fail);

    // An emergency declared and cleared shows as two markers, as /admin/series lists them.
    const emergency = (declared) => fetch(`${gw.url}/admin/emergency`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ declared, reason: 'dashboard test' }) }).then((r) => r.text());
    await emergency(true);
    await waitFor(async () => (await getJSON(`${gw.url}/admin/series?window=60`, { headers: auth })).body.emergency.at(-1) === true,
      { timeout: 10000, what: 'the emergency sampled' });
    await emergency(false);
    await waitFor(async () => (got = await plotted()).markers.join() === 'breaker:open,breaker:closed,emergency:declared,emergency:cleared',
      { timeout: 15000, every: 200, what: 'the emergency markers' }).catch(fail);
    // Every chart carries them.
    assert.equal(await page.locator('[data-testid="marker"][data-kind="emergency"]').count(), 12);
    assert.equal(await page.locator('[data-testid="marker"][data-kind="breaker"]').count(), 12);
    const events = (await getJSON(`${gw.url}/admin/series?window=3600`, { headers: auth })).body.events;
    assert.deepEqual(events.map((e) => `${e.kind}:${e.state}`), ['breaker:open', 'breaker:closed', 'emergency:declared', 'emergency:cleared']);
    assert.ok(events.filter((e) => e.kind === 'breaker').every((e) => e.backend === 'cloud'));

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-charts.png'), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    if (browser) await browser.close();
    for (const p of procs.reverse()) await p.stop();
    rmSync(profile, { recursive: true, force: true });
  }
});
