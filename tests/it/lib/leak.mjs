// Leak checks for the privacy tests: did any piece of a protected value reach
// a place it must not (a cloud backend's received bodies, the decision log)?
//
// The rule, in full:
//  1. A value leaks when any of its fragments occurs in the haystack. The
//     fragments of a value are all its substrings of FRAGMENT (4) characters,
//     so a value masked in part ("jane.doe@[EMAIL_1]", "4111 **** 1111") or
//     cut up and re-joined differently still shows.
//  2. Placeholders are not evidence: every `[TYPE_N]` in the haystack is
//     replaced by one separator before searching, so neither placeholder text
//     nor a fragment spanning a placeholder's edge can match.
//  3. A fragment with fewer than two letters or digits of any script
//     (". - ", "@.co" counts as two, "ü.mü" three) says nothing about the
//     value and is skipped.
//  4. A fragment that also occurs in the baseline is skipped: text that
//     certainly carries no protected value (the clean requests the same
//     backend received in the same test, the prompt's template), so shared
//     structure such as `"max_tokens":4000` or a label cannot be a false alarm.
//  5. A value left with no fragment to check would make the check vacuous:
//     that is an error, not a pass.
import assert from 'node:assert/strict';

export const FRAGMENT = 4;
const PLACEHOLDER = /\[[A-Z][A-Z0-9_]*_\d+\]/g;

export function stripPlaceholders(text) {
  return text.replace(PLACEHOLDER, '\u0000');
}

// All substrings of length FRAGMENT of `value` that mean something (rule 3).
export function fragments(value) {
  const out = new Set();
  for (let i = 0; i + FRAGMENT <= value.length; i++) {
    const f = value.slice(i, i + FRAGMENT);
    if ((f.match(/[\p{L}\p{N}]/gu) || []).length >= 2) out.add(f);
  }
  if (value.length < FRAGMENT) out.add(value);
  return [...out];
}

// The values (with the fragment that betrayed each) found in `haystack`.
export function findLeaks(haystack, values, { baseline = '' } = {}) {
  const hay = stripPlaceholders(haystack);
  const base = stripPlaceholders(baseline);
  const leaks = [];
  for (const v of values) {
    const checked = fragments(v).filter((f) => !base.includes(f));
    if (checked.length === 0) throw new Error(`leak check for ${JSON.stringify(v)} would be vacuous: every fragment is in the baseline`);
    const hit = checked.find((f) => hay.includes(f));
    if (hit !== undefined) leaks.push({ value: v, fragment: hit });
  }
  return leaks;
}

export function assertNoLeak(haystack, values, { baseline = '', where = 'the cloud' } = {}) {
  assert.ok(values.length > 0, 'no values to check');
  const leaks = findLeaks(haystack, values, { baseline });
  assert.deepEqual(leaks.slice(0, 5), [], `${leaks.length} of ${values.length} value(s) reached ${where} (in whole or in part)`);
}

// The bodies a llmsim (or the fake backend in toolsim.mjs) received, as text:
// bodies only, not headers (ports and content lengths are digits that would
// collide with numeric fragments by chance).
export async function receivedBodies(sim, { since = 0 } = {}) {
  const r = await fetch(`${sim.url}/admin/received?n=100000`);
  const reqs = (await r.json()).requests;
  return reqs.slice(since).map((q) => q.body);
}
export const bodiesText = (bodies) => bodies.map((b) => JSON.stringify(b)).join('\n');
