// Validation of Responses API answers and streamed events against the
// official OpenAPI spec's schemas (tests/spec/openai_responses.json, extracted
// from github.com/openai/openai-openapi at the commit the file names; see
// docs/internals/responses.md). A JSON Schema validator for the keywords
// those schemas use: $ref (and the one $recursiveRef), type, enum, const,
// properties, required, additionalProperties, items, minItems, maxItems,
// minLength, maxLength, pattern, minimum, maximum, anyOf, oneOf, allOf.
// `format`, `discriminator` and descriptive keywords are not assertions.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export const SPEC = JSON.parse(readFileSync(new URL('../../spec/openai_responses.json', import.meta.url)));
const schemas = SPEC.components.schemas;

const typeOk = (t, v) => {
  switch (t) {
    case 'null': return v === null;
    case 'boolean': return typeof v === 'boolean';
    case 'string': return typeof v === 'string';
    case 'integer': return Number.isInteger(v);
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    case 'array': return Array.isArray(v);
    case 'object': return v !== null && typeof v === 'object' && !Array.isArray(v);
    default: throw new Error(`schema type ${t} not handled`);
  }
};

const KNOWN = new Set(['$ref', '$recursiveRef', '$recursiveAnchor', 'type', 'enum', 'const', 'properties', 'required',
  'additionalProperties', 'items', 'minItems', 'maxItems', 'minLength', 'maxLength', 'pattern', 'minimum',
  'maximum', 'anyOf', 'oneOf', 'allOf', 'format', 'discriminator', 'description', 'title', 'default',
  'example', 'examples', 'deprecated', 'nullable', 'x-oaiMeta', 'x-stainless-const', 'x-oaiTypeLabel',
  'x-oaiExpandable', 'readOnly', 'writeOnly', 'propertyNames', 'unevaluatedProperties']);

// Errors of value v against schema s, each "path: what" (empty when valid).
// `root` is the schema a $recursiveRef "#" names (the named schema being
// checked, as the extraction keeps each schema whole under its name).
function check(s, v, path, root, out) {
  if (s === true || s === undefined) return out;
  if (s === false) { out.push(`${path}: nothing is allowed here`); return out; }
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new Error(`schema keyword ${k} not handled (at ${path})`);
  if (s.$ref) {
    const name = s.$ref.split('/').at(-1);
    if (!schemas[name]) throw new Error(`unknown $ref ${s.$ref}`);
    check(schemas[name], v, path, schemas[name], out);
  }
  if (s.$recursiveRef) check(root, v, path, root, out);
  if (s.type !== undefined) {
    const ts = Array.isArray(s.type) ? s.type : [s.type];
    if (!ts.some((t) => typeOk(t, v) || (t === 'number' && Number.isInteger(v)))) {
      out.push(`${path}: ${JSON.stringify(v)?.slice(0, 80)} is not of type ${ts.join('|')}`);
      return out;
    }
  }
  if (s.nullable && v === null) return out;
  if (s.enum && !s.enum.some((e) => e === v)) out.push(`${path}: ${JSON.stringify(v)?.slice(0, 80)} is not one of ${JSON.stringify(s.enum).slice(0, 120)}`);
  if ('const' in s && s.const !== v) out.push(`${path}: is not ${JSON.stringify(s.const)}`);
  if (typeof v === 'string') {
    if (s.minLength !== undefined && [...v].length < s.minLength) out.push(`${path}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && [...v].length > s.maxLength) out.push(`${path}: longer than ${s.maxLength}`);
    if (s.pattern && !new RegExp(s.pattern, 'u').test(v)) out.push(`${path}: does not match ${s.pattern}`);
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) out.push(`${path}: below ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) out.push(`${path}: above ${s.maximum}`);
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) out.push(`${path}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && v.length > s.maxItems) out.push(`${path}: more than ${s.maxItems} items`);
    if (s.items) v.forEach((x, i) => check(s.items, x, `${path}[${i}]`, root, out));
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const r of s.required || []) if (!(r in v)) out.push(`${path}: lacks required ${r}`);
    const props = s.properties || {};
    for (const [k, x] of Object.entries(v)) {
      if (k in props) check(props[k], x, `${path}.${k}`, root, out);
      else if (s.additionalProperties === false) out.push(`${path}: has no property ${k} in the schema`);
      else if (typeof s.additionalProperties === 'object') check(s.additionalProperties, x, `${path}.${k}`, root, out);
    }
  }
  for (const p of s.allOf || []) check(p, v, path, root, out);
  const branches = (list) => list.map((b) => check(b, v, path, root, []));
  if (s.anyOf) {
    const errs = branches(s.anyOf);
    if (!errs.some((e) => e.length === 0)) out.push(`${path}: matches none of anyOf (${closest(errs)})`);
  }
  if (s.oneOf) {
    const errs = branches(s.oneOf);
    const n = errs.filter((e) => e.length === 0).length;
    if (n === 0) out.push(`${path}: matches none of oneOf (${closest(errs)})`);
    else if (n > 1) out.push(`${path}: matches ${n} branches of oneOf`);
  }
  return out;
}

// The errors of the branch that came closest, for the message.
function closest(errs) {
  const best = errs.reduce((a, b) => (b.length < a.length ? b : a));
  return best.slice(0, 3).join('; ');
}

// Errors of `value` against the spec's schema `name` ([] when valid).
export function validate(name, value) {
  if (!schemas[name]) throw new Error(`no schema ${name} in the spec file`);
  return check(schemas[name], value, name, schemas[name], []);
}

export function assertValid(name, value) {
  const errs = validate(name, value);
  assert.deepEqual(errs, [], `${name} invalid against the spec (${SPEC.commit}): ${errs.slice(0, 5).join(' | ')}`);
}

// The schema of each event the API streams, by its type.
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
  'response.function_call_arguments.delta': 'ResponseFunctionCallArgumentsDeltaEvent',
  'response.function_call_arguments.done': 'ResponseFunctionCallArgumentsDoneEvent',
  'response.output_item.done': 'ResponseOutputItemDoneEvent',
  'response.completed': 'ResponseCompletedEvent',
  'response.incomplete': 'ResponseIncompleteEvent',
  'response.failed': 'ResponseFailedEvent',
  error: 'ResponseErrorEvent',
};

// A Response object (a whole answer): valid against `Response`.
export function assertResponse(r) {
  assertValid('Response', r);
}

// A stream's events, in order: numbered from 0 with no gap, each a known
// event type valid against its own schema and against ResponseStreamEvent,
// the first response.created and the last a terminal event.
export function assertEvents(events) {
  assert.ok(events.length > 0, 'no events');
  events.forEach((e, i) => {
    assert.equal(e.sequence_number, i, `sequence_number of event ${i} (${e.type})`);
    const name = EVENT_SCHEMA[e.type];
    assert.ok(name, `unexpected event ${e.type}`);
    assertValid(name, e);
    assertValid('ResponseStreamEvent', e);
  });
  assert.equal(events[0].type, 'response.created');
  assert.ok(['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(events.at(-1).type),
    `the stream ends with ${events.at(-1).type}`);
}

// Parses a raw text/event-stream body of the Responses API into events
// (checking each block's `event:` line names the data's type).
export function parseEvents(text) {
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    let event = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    const e = JSON.parse(data.join('\n'));
    assert.equal(event, e.type, 'the event: line names the data\'s type');
    return e;
  });
}
