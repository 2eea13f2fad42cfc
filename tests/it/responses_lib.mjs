// Validation of Responses API answers and streamed events against the
// official spec's schemas (tests/spec/openai_responses.json, extracted from
// github.com/openai/openai-openapi at the commit it names), with a small
// JSON Schema validator of the keywords that file uses (type, enum, const,
// properties, required, additionalProperties, items, min/maxItems,
// min/maxLength, minimum/maximum, pattern, allOf, anyOf, oneOf, $ref), and
// the helpers the responses*.test.mjs files share.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export const SPEC = JSON.parse(readFileSync(new URL('../spec/openai_responses.json', import.meta.url)));
export const SPEC_COMMIT = 'f85dbe223d40e1a31cba812ab2d755c7e98a92a3';
const schemas = SPEC.components.schemas;

const resolve = (ref) => {
  const name = ref.split('/').at(-1);
  const s = schemas[name];
  if (!s) throw new Error(`unknown schema ${ref}`);
  return s;
};

const typeOk = (t, v) => {
  switch (t) {
    case 'null': return v === null;
    case 'object': return v !== null && typeof v === 'object' && !Array.isArray(v);
    case 'array': return Array.isArray(v);
    case 'string': return typeof v === 'string';
    case 'boolean': return typeof v === 'boolean';
    case 'integer': return Number.isInteger(v);
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    default: return true;
  }
};

// The errors of value v against schema s ([] when valid), each "path: why".
export function validate(s, v, path = '$', depth = 0) {
  if (depth > 64) return [];
  if (s === true || s === undefined) return [];
  if (s === false) return [`${path}: no value allowed`];
  if (s.$ref) return validate(resolve(s.$ref), v, path, depth + 1);
  if (s.$recursiveRef) return [];
  const errs = [];
  if (s.type !== undefined) {
    const ts = Array.isArray(s.type) ? s.type : [s.type];
    if (!ts.some((t) => typeOk(t, v)) && !(s.nullable && v === null)) return [`${path}: not of type ${ts.join('|')}`];
  }
  if (s.enum && !s.enum.some((e) => e === v) && !(s.nullable && v === null)) errs.push(`${path}: ${JSON.stringify(v)} not in enum`);
  if ('const' in s && s.const !== v) errs.push(`${path}: not ${JSON.stringify(s.const)}`);
  if (typeof v === 'string') {
    if (s.minLength !== undefined && [...v].length < s.minLength) errs.push(`${path}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && [...v].length > s.maxLength) errs.push(`${path}: longer than ${s.maxLength}`);
    if (s.pattern && !new RegExp(s.pattern, 'u').test(v)) errs.push(`${path}: does not match ${s.pattern}`);
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) errs.push(`${path}: below ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) errs.push(`${path}: above ${s.maximum}`);
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) errs.push(`${path}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && v.length > s.maxItems) errs.push(`${path}: more than ${s.maxItems} items`);
    if (s.items) v.forEach((x, i) => errs.push(...validate(s.items, x, `${path}[${i}]`, depth + 1)));
  }
  if (typeOk('object', v)) {
    for (const r of s.required || []) if (!(r in v)) errs.push(`${path}: lacks ${r}`);
    const props = s.properties || {};
    for (const [k, x] of Object.entries(v)) {
      if (k in props) errs.push(...validate(props[k], x, `${path}.${k}`, depth + 1));
      else if (s.additionalProperties === false) errs.push(`${path}: unexpected ${k}`);
      else if (typeof s.additionalProperties === 'object') errs.push(...validate(s.additionalProperties, x, `${path}.${k}`, depth + 1));
    }
  }
  for (const p of s.allOf || []) errs.push(...validate(p, v, path, depth + 1));
  if (s.anyOf && !s.anyOf.some((p) => validate(p, v, path, depth + 1).length === 0)) errs.push(`${path}: matches none of anyOf`);
  if (s.oneOf) {
    const n = s.oneOf.filter((p) => validate(p, v, path, depth + 1).length === 0).length;
    if (n !== 1) errs.push(`${path}: matches ${n} of oneOf`);
  }
  return errs;
}

export function assertSchema(name, v) {
  const errs = validate({ $ref: `#/components/schemas/${name}` }, v);
  assert.deepEqual(errs, [], `${name} invalid: ${JSON.stringify(v).slice(0, 400)}`);
}

export const EVENT_SCHEMA = {
  'response.created': 'ResponseCreatedEvent',
  'response.in_progress': 'ResponseInProgressEvent',
  'response.output_item.added': 'ResponseOutputItemAddedEvent',
  'response.content_part.added': 'ResponseContentPartAddedEvent',
  'response.output_text.delta': 'ResponseTextDeltaEvent',
  'response.output_text.done': 'ResponseTextDoneEvent',
  'response.content_part.done': 'ResponseContentPartDoneEvent',
  'response.refusal.delta': 'ResponseRefusalDeltaEvent',
  'response.refusal.done': 'ResponseRefusalDoneEvent',
  'response.reasoning_text.delta': 'ResponseReasoningTextDeltaEvent',
  'response.reasoning_text.done': 'ResponseReasoningTextDoneEvent',
  'response.function_call_arguments.delta': 'ResponseFunctionCallArgumentsDeltaEvent',
  'response.function_call_arguments.done': 'ResponseFunctionCallArgumentsDoneEvent',
  'response.output_item.done': 'ResponseOutputItemDoneEvent',
  'response.completed': 'ResponseCompletedEvent',
  'response.incomplete': 'ResponseIncompleteEvent',
  'response.failed': 'ResponseFailedEvent',
  error: 'ResponseErrorEvent',
};

// A whole answer: the Response schema.
export const assertResponse = (r) => assertSchema('Response', r);

// A stream's events, in order: each valid against its event's schema,
// numbered from 0 by one, one terminal event, last.
export function assertEvents(events) {
  assert.ok(events.length > 0, 'no events');
  events.forEach((e, i) => {
    assert.equal(e.sequence_number, i, `sequence_number of event ${i} (${e.type})`);
    const name = EVENT_SCHEMA[e.type];
    assert.ok(name, `unexpected event ${e.type}`);
    assertSchema(name, e);
  });
  const terminal = ['response.completed', 'response.incomplete', 'response.failed', 'error'];
  assert.equal(events.filter((e) => terminal.includes(e.type)).length, 1, 'one terminal event');
  assert.ok(terminal.includes(events.at(-1).type), `last event ${events.at(-1).type}`);
}

// The events of a raw SSE answer (fetch Response), `event:` checked against
// the data's type.
export async function rawEvents(res) {
  const text = await res.text();
  const events = [];
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    let name = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    const e = JSON.parse(data.join('\n'));
    assert.equal(name, e.type, 'event: names the data\'s type');
    events.push(e);
  }
  return events;
}

// The text of a stream's output_text deltas, and of its function call
// arguments deltas.
export const deltaText = (events, type = 'response.output_text.delta') =>
  events.filter((e) => e.type === type).map((e) => e.delta).join('');
