// Holding a gateway's only local slot with a request the local box accepts
// and never answers (llmsim's hang fault, on only while that one request
// arrives). The request may not leave for the cloud, so it stays on the box.
import { getJSON, waitFor } from './harness.mjs';

// Its max_tokens bounds how long the router expects it to hold the slot:
// 4000 tokens keep that far beyond any TTFT budget a test sets, however fast
// the box has been learned to be and however late the next request comes,
// so while it is held a request that may leave overflows to the cloud and
// one that may not waits in Spillway's local queue.
export const HOLD_MAX_TOKENS = 4000;

// Holds the slot of llmsim `edge` (the gateway's backend named `backend`)
// through gateway `gw` (whose admin key is `admin`) and returns once Spillway
// sees the slot busy. `model` is the gateway model to ask, `headers` go with
// the request (e.g. a client key). release() lets the holder's client go
// away, which frees the slot for the queue.
export async function holdLocal(gw, edge, { admin, model = 'chat', headers = {}, backend = 'edge' } = {}) {
  const edgeState = async () => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${admin}` } }))
    .body.backends.find((b) => b.name === backend);
  // On a loaded machine the box may have missed a health check just now: a
  // request that may not leave is then refused at once instead of reaching
  // it. Such a hold is tried again once Spillway sees the box usable.
  const refused = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    await waitFor(async () => { const e = await edgeState(); return e.health !== 'down' && e.breaker !== 'open' && e.in_flight === 0; },
      { timeout: 10000, what: 'spillway sees the local box usable and idle' });
    await getJSON(`${edge.url}/admin/faults`, { method: 'POST', body: JSON.stringify({ hang: true }) });
    const ac = new AbortController();
    let answered = null;
    const held = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', signal: ac.signal,
      headers: { 'content-type': 'application/json', 'x-spillway-allow-cloud': 'false', ...headers },
      body: JSON.stringify({ model, max_tokens: HOLD_MAX_TOKENS, messages: [{ role: 'user', content: 'hold the only local slot' }] }),
    }).then(async (r) => { answered = `${r.status} ${(await r.text()).slice(0, 200)}`; }).catch(() => null);
    await waitFor(async () => answered !== null || (await getJSON(`${edge.url}/admin/stats`)).body.hanging === 1,
      { timeout: 10000, what: 'the local slot held' });
    await fetch(`${edge.url}/admin/faults`, { method: 'DELETE' });
    if (answered !== null) { refused.push(answered); continue; }
    await waitFor(async () => (await edgeState()).in_flight === 1, { timeout: 10000, what: 'spillway sees the slot busy' });
    return {
      async release() { ac.abort(); await held; },
    };
  }
  throw new Error(`the hold request was answered instead of held, ${refused.length} times: ${refused.join(' | ')}`);
}
