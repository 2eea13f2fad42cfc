// Mixed load against the gateway for a bounded time: `concurrency` clients, each
// sending one chat request after another, streamed or not, some restricted
// (X-Spillway-Allow-Cloud: false, body marked with a canary string), some aborted
// by the client at a random moment. Every request is classified by what it got:
//
//   served      200, a complete answer (non-streamed: choices[0].message; streamed: a
//               chunk with finish_reason, then data: [DONE]); `tier` from X-Spillway-Tier
//   rejected    a non-200 answer whose body is JSON {"error":{"code":...}}
//   midstream   a stream whose last event before data: [DONE] is {"error":{"code":...}}
//   aborted     the client gave up on purpose before the answer was complete
//   refused     the connection was refused / closed before any answer, at a moment the
//               caller declared acceptable (refusedOk(t), e.g. after SIGTERM)
//   lost        anything else: no answer within clientTimeoutMs, a connection error, a
//               stream without [DONE], an unparsable event, an error without a code
//
// The seeded generator makes the mix (stream, restricted, abort moment) repeat.

export const CANARY = 'CANARY-RESTRICTED-7f3a';

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function classifyBody(status, ctype, text, stream) {
  if (status !== 200) {
    try {
      const j = JSON.parse(text);
      if (j && j.error && typeof j.error.code === 'string' && j.error.code) return { outcome: 'rejected', code: j.error.code, status };
    } catch { /* fall through */ }
    return { outcome: 'lost', detail: `status ${status} without a JSON error code: ${text.slice(0, 120)}` };
  }
  if (!stream || !/text\/event-stream/.test(ctype || '')) {
    if (stream) return { outcome: 'lost', detail: `stream answered with ${ctype}: ${text.slice(0, 120)}` };
    try {
      const j = JSON.parse(text);
      if (j?.choices?.[0]?.message && typeof j.choices[0].message.content === 'string') return { outcome: 'served' };
      return { outcome: 'lost', detail: `200 without choices[0].message: ${text.slice(0, 120)}` };
    } catch {
      return { outcome: 'lost', detail: `200 with a body that is not JSON: ${text.slice(0, 120)}` };
    }
  }
  const data = [];
  for (const ev of text.split(/\r?\n\r?\n/)) {
    const lines = ev.split(/\r?\n/).filter((l) => l.startsWith('data:'));
    if (lines.length) data.push(lines.map((l) => l.replace(/^data: ?/, '')).join('\n'));
  }
  if (data.at(-1) !== '[DONE]') return { outcome: 'lost', detail: `stream ended without [DONE] (${data.length} events, last: ${String(data.at(-1)).slice(0, 80)})` };
  let finished = false;
  for (let i = 0; i < data.length - 1; i++) {
    let j;
    try { j = JSON.parse(data[i]); } catch { return { outcome: 'lost', detail: `unparsable event ${i}: ${data[i].slice(0, 80)}` }; }
    if (j.error) {
      if (i !== data.length - 2) return { outcome: 'lost', detail: `error event ${i} is not the last before [DONE]` };
      if (typeof j.error.code !== 'string' || !j.error.code) return { outcome: 'lost', detail: `error event without a code: ${data[i]}` };
      return { outcome: 'midstream', code: j.error.code };
    }
    if (j.choices?.some((c) => c.finish_reason)) finished = true;
  }
  return finished ? { outcome: 'served' } : { outcome: 'lost', detail: 'stream with [DONE] but no finish_reason' };
}

// Runs the load; returns { results, counts(), wait } where results fill in as
// requests end. Options:
//   url, durationMs, concurrency (6), seed (1), model ('chat'), maxTokens [8, 24],
//   streamShare (0.5), restrictedShare (0.3), abortShare (0.1), abortWithinMs (400),
//   clientTimeoutMs (deadline + tolerance), refusedOk(startedAtMs) => bool
export async function mixload(o) {
  const {
    url, durationMs, concurrency = 6, seed = 1, model = 'chat', streamShare = 0.5, restrictedShare = 0.3,
    abortShare = 0.1, abortWithinMs = 400, clientTimeoutMs, refusedOk = () => false, maxTokens = [8, 24],
  } = o;
  const rnd = rng(seed);
  const results = [];
  const end = Date.now() + durationMs;
  let n = 0;
  const one = async () => {
    const id = ++n;
    const stream = rnd() < streamShare;
    const restricted = rnd() < restrictedShare;
    const abortAt = rnd() < abortShare ? Math.floor(rnd() * abortWithinMs) : null;
    const max_tokens = maxTokens[0] + Math.floor(rnd() * (maxTokens[1] - maxTokens[0] + 1));
    const content = restricted ? `restricted request ${id} ${CANARY}` : `open request ${id} please answer`;
    const r = { id, stream, restricted, startedAt: Date.now() };
    results.push(r);
    const ac = new AbortController();
    let why = null;
    const timers = [setTimeout(() => { why = 'timeout'; ac.abort(); }, clientTimeoutMs)];
    if (abortAt !== null) timers.push(setTimeout(() => { why ??= 'client'; ac.abort(); }, abortAt));
    let headersSeen = false;
    try {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(restricted ? { 'x-spillway-allow-cloud': 'false' } : {}) },
        body: JSON.stringify({ model, stream, max_tokens, messages: [{ role: 'user', content }] }),
        signal: ac.signal,
      });
      headersSeen = true;
      r.tier = res.headers.get('x-spillway-tier');
      const text = await res.text();
      Object.assign(r, classifyBody(res.status, res.headers.get('content-type'), text, stream));
    } catch (e) {
      const code = e.cause?.code || e.code || e.name;
      if (why === 'client') r.outcome = 'aborted';
      else if (why === 'timeout') Object.assign(r, { outcome: 'lost', detail: `no complete answer within ${clientTimeoutMs} ms${headersSeen ? ' (headers came)' : ''}` });
      else if (!headersSeen && refusedOk(r.startedAt)) Object.assign(r, { outcome: 'refused', code });
      else Object.assign(r, { outcome: 'lost', detail: `connection error ${headersSeen ? 'after' : 'before'} the headers: ${code} ${e.cause?.message || e.message}` });
    } finally {
      for (const t of timers) clearTimeout(t);
      r.endedAt = Date.now();
    }
  };
  const worker = async () => { while (Date.now() < end) await one(); };
  const wait = Promise.all(Array.from({ length: concurrency }, worker));
  return { results, wait, counts: () => countResults(results) };
}

// { sent, local, cloud, rejected: {code: n}, midstream: {code: n}, aborted, refused, lost, lostDetails }
export function countResults(results) {
  const c = { sent: results.length, local: 0, cloud: 0, rejected: {}, midstream: {}, aborted: 0, refused: 0, lost: 0, lostDetails: [] };
  for (const r of results) {
    if (r.outcome === 'served') {
      if (r.tier === 'local') c.local++;
      else if (r.tier === 'cloud') c.cloud++;
      else { c.lost++; c.lostDetails.push(`#${r.id} served without X-Spillway-Tier`); }
    } else if (r.outcome === 'rejected') c.rejected[r.code] = (c.rejected[r.code] || 0) + 1;
    else if (r.outcome === 'midstream') c.midstream[r.code] = (c.midstream[r.code] || 0) + 1;
    else if (r.outcome === 'aborted') c.aborted++;
    else if (r.outcome === 'refused') c.refused++;
    else {
      c.lost++;
      c.lostDetails.push(`#${r.id} ${r.stream ? 'stream' : 'plain'}${r.restricted ? ' restricted' : ''}: ${r.detail ?? 'never ended'}`);
    }
  }
  return c;
}
