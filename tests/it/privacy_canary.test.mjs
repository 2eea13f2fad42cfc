// The privacy canary at scale: generated values in every format people type
// them in (lib/piigen.mjs), placed in every field of every API surface (OpenAI
// chat, Anthropic Messages to an Anthropic-speaking cloud and to an
// OpenAI-speaking one, embeddings), sent through every path where the cloud
// is chosen for a request without them (local up for what the local box
// cannot serve, local saturated, local down, a declared emergency, policy
// mask under overflow, a cloud-only model). What the cloud simulator received
// (/admin/received: bodies, and the Anthropic headers) must never contain a
// fragment of one of them (the rule of lib/leak.mjs, after undoing zero-width
// characters, no-break spaces, full-width forms, other scripts' digits,
// Unicode dashes, line breaks, `%40`/`&#64;` and JSON escapes), and masked
// answers that echo the placeholders come back restored.
//
// A cell is (format, field, variant) on one surface. Under `local_only` one
// value found makes the whole request stay local, so each request carries one
// cell (a leak there says exactly which cell is not caught); under masking
// each value is masked on its own, so requests carry many cells (the fields
// that refuse or keep a request local on their own, binary parts, structural
// fields, keys, headers and fields only the Anthropic dialect carries, go one
// cell per request there too). A request refused with a structured error (400
// naming a field, 422, 503 privacy_restricted) leaked nothing; a 5xx, a
// crash or an error in the wrong shape fails. On failure a test prints the
// matrix format x field of leaked values for its surface and path, and the
// suite prints class x surface/path, never the bodies.
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { startLlmsim, startSpillway, waitFor, getJSON } from './lib/harness.mjs';
import { holdLocal } from './lib/hold.mjs';
import { fragments, stripPlaceholders } from './lib/leak.mjs';
import {
  rng, FORMATS, NEW_FORMATS, NUMBER_FORMATS, BINARY_FORMATS, NEW_VARIANTS, generate, variantsFor, render, normalise,
  luhnOk, ibanOk, elfproefOk,
} from './lib/piigen.mjs';


const ADMIN = 'sk-admin-canary';
const SEED = Number(process.env.CANARY_SEED || 20261130);
// Under local_only each request carries one cell, 3 values of it on the chat
// surface; the two local_only chat paths share the cells (alternate ones
// each: the decision to keep a request local is the same on both, the route
// after it is not). Masked paths take every cell, 2 values of each, 64 values
// per request. The other surfaces and paths take one value of each cell, in
// fewer variants (see LEAN).
const LOCAL_PER_CELL = 3;
const MASK_PER_CELL = 2;
const PER_REQUEST = 64;
const DOWN = 'http://127.0.0.1:9';
const ALL_FORMATS = [...FORMATS, ...NUMBER_FORMATS, ...BINARY_FORMATS];
const TEXTUAL = (f) => !f.startsWith('number/') && !f.startsWith('binary/');
// A structural field (an enum, an id, a function name) holding free text is
// refused: one value of each type is enough to show it.
const STRUCT_FORMATS = ['email/plain', 'email/idn-local', 'phone/NL/plus', 'phone/DE/nat', 'card/grouped', 'iban/compact', 'bsn/context', 'ssn/dashed', 'ipv4', 'secret/sk', 'secret/env'];
const ASCII_LINE = /^[\x20-\x7e]*$/;
// A header value is Latin-1 on one line: the formats that are.
const HEADER_FORMATS = ['email/plain', 'phone/NL/plus', 'phone/UK/nat', 'card/grouped', 'iban/compact', 'ssn/dashed', 'ipv4', 'secret/sk', 'secret/github', 'secret/basic', 'secret/stripe'];

// ---- Fields, per surface ----
// name: the cell's field; short: its column in the matrix; formats: what it
// takes (default: every text format); solo: one cell per request on masked
// paths too; native: only the Anthropic dialect carries it (the OpenAI
// translation refuses it); unmaskable: a key, which masking cannot rename;
// variants: the variants it takes (default: all of the format's); cls: the
// class it stands for in the suite's summary.
const F = (name, short, o = {}) => ({ name, short, ...o });
const STRUCT = (name, short) => F(name, short, { formats: STRUCT_FORMATS, solo: true, variants: ['plain', 'text'], cls: 'structural field' });
const CHAT_FIELDS = [
  F('content', 'cont'), F('part', 'part'), F('name', 'name'), F('args', 'args'), F('tool', 'tool'), F('tooldesc', 'tdsc'),
  F('toolparam', 'tprm'), F('prediction', 'pred'), F('user', 'user'), F('stop', 'stop'), F('metadata', 'meta'), F('schema', 'schm'),
  F('unknown', 'unkn'), F('nested', 'nest'), F('key', 'key', { unmaskable: true, solo: true }),
  F('split', 'splt', { cls: 'split across parts' }),
  F('number', 'num', { formats: NUMBER_FORMATS, cls: 'bare JSON number' }),
  F('image', 'img', { formats: ['binary/png'], solo: true, cls: 'binary part' }),
  F('file', 'file', { formats: ['binary/pdf'], solo: true, variants: ['plain', 'space', 'upper'], cls: 'binary part' }),
  STRUCT('s.tool_choice', 'tcho'), STRUCT('s.reasoning', 'reas'), STRUCT('s.tier', 'tier'), STRUCT('s.modalities', 'moda'),
  STRUCT('s.voice', 'voic'), STRUCT('s.rftype', 'rfty'), STRUCT('s.detail', 'detl'), STRUCT('s.file_id', 'fid'),
  STRUCT('s.call_id', 'cid'), STRUCT('s.fname', 'fnam'),
];
const NATIVE = (name, short, o = {}) => F(name, short, { native: true, solo: true, cls: 'Anthropic-only field', ...o });
const DROPPED = (name, short) => F(name, short, { solo: true, cls: 'field the translation drops' });
const MESSAGES_FIELDS = [
  F('system', 'sys'), F('content', 'cont'), F('block', 'blk'), F('split', 'splt', { cls: 'split across parts' }), F('assistant', 'asst'),
  F('input', 'inpt'), F('number', 'num', { formats: NUMBER_FORMATS, cls: 'bare JSON number' }), F('result', 'rslt'), F('resblock', 'rblk'),
  F('tooldesc', 'tdsc'), F('toolparam', 'tprm'), F('stop', 'stop'), F('user', 'user'),
  DROPPED('blockkey', 'bkey'), DROPPED('msgkey', 'mkey'), DROPPED('toolkey', 'tkey'), DROPPED('citations', 'cite'),
  DROPPED('cache', 'cach'), DROPPED('descobj', 'dobj'),
  NATIVE('unknown', 'unkn'), NATIVE('nested', 'nest'), NATIVE('key', 'key', { unmaskable: true }),
  NATIVE('numx', 'numx', { formats: NUMBER_FORMATS, cls: 'bare JSON number' }),
  NATIVE('document', 'doc'), NATIVE('thinking', 'thnk'),
  NATIVE('b.document', 'bdoc', { formats: ['binary/pdf'], variants: ['plain', 'space', 'upper'], cls: 'binary part' }),
  F('b.image', 'bimg', { formats: ['binary/png'], solo: true, variants: ['plain', 'space', 'upper'], cls: 'binary part' }),
  F('b.resimage', 'rimg', { formats: ['binary/png'], solo: true, variants: ['plain', 'space', 'upper'], cls: 'binary part' }),
  NATIVE('b.resdoc', 'rdoc', { formats: ['binary/pdf'], variants: ['plain', 'space'], cls: 'binary part' }),
  STRUCT('a.tool_use_id', 'tuid'), STRUCT('a.tool_name', 'tnam'),
  F('h.beta', 'hbet', { formats: HEADER_FORMATS, solo: true, variants: ['plain'], cls: 'header' }),
  F('h.version', 'hver', { formats: HEADER_FORMATS, solo: true, variants: ['plain'], cls: 'header' }),
];
const EMBED_FIELDS = [
  F('input', 'inpt'), F('user', 'user'), F('metadata', 'meta'), F('unknown', 'unkn'), F('nested', 'nest'),
  F('key', 'key', { unmaskable: true, solo: true }), F('number', 'num', { formats: NUMBER_FORMATS, cls: 'bare JSON number' }),
  STRUCT('e.encoding', 'enc'),
];
const accepts = (field, format) => (field.formats ? field.formats.includes(format) : TEXTUAL(format));

// The surface's cells. `lean`: the text variant and one more of each
// (format, field), in turn, rather than every variant (the detection is the
// chat surface's; what these surfaces add is where the text sits).
// CANARY_CELLS=REGEX runs only the cells whose "format|field|variant|surface"
// matches (e.g. 'phone/DE/.*\|content\|' while working on one detector); the
// scale floor applies to the full run only.
// CANARY_DUMP=file: each leaked value, with the body sent and the body the
// cloud received, one JSON line each (bodies hold the values: debugging only).
const DUMP = process.env.CANARY_DUMP;
const ONLY = process.env.CANARY_CELLS ? new RegExp(process.env.CANARY_CELLS) : null;
function cells(surface, { lean = false } = {}) {
  const out = [];
  let turn = 0;
  for (const format of ALL_FORMATS) {
    for (const field of surface.fields) {
      if (!accepts(field, format)) continue;
      let vs = variantsFor(format, field.name).filter((v) => !field.variants || field.variants.includes(v));
      if (lean && vs.length > 2) {
        const rest = vs.filter((v) => v !== 'text');
        vs = [vs.includes('text') ? 'text' : rest.shift(), rest[turn++ % rest.length]];
      }
      for (const variant of vs) out.push({ format, field: field.name, variant, surface: surface.name });
    }
  }
  return ONLY ? out.filter((c) => ONLY.test(`${c.format}|${c.field}|${c.variant}|${c.surface}`)) : out;
}

// perCell values for every cell (or every other one, half 0 or 1; without
// the fields in exclude, or only those in only):
// { cell, value (canonical, normalised), protect (its pieces), cut, before, raw, after }.
function slotsFor(surface, seed, perCell, { half = null, exclude = [], only = null, lean = false } = {}) {
  const r = rng(seed);
  const out = [];
  const field = Object.fromEntries(surface.fields.map((f) => [f.name, f]));
  for (const [i, cell] of cells(surface, { lean }).entries()) {
    if ((half !== null && i % 2 !== half) || exclude.includes(cell.field) || (only && !only.includes(cell.field))) continue;
    for (let k = 0; k < perCell; k++) {
      let v;
      let rend;
      // A header carries Latin-1 on one line: the values that fit.
      for (let tries = 0; ; tries++) {
        v = generate(r, cell.format);
        rend = render(r, v, cell.variant);
        if (!cell.field.startsWith('h.') || ASCII_LINE.test(rend.before + rend.raw + rend.after) || tries > 50) break;
      }
      if (cell.field.startsWith('h.') && !ASCII_LINE.test(rend.before + rend.raw + rend.after)) break;
      const value = normalise(rend.value ?? v.value);
      if (normalise(rend.raw) !== value) throw new Error(`variant ${cell.variant} of ${JSON.stringify(v.value)} does not normalise back: ${JSON.stringify(rend.raw)}`);
      const protect = v.protect ? v.protect.map(normalise) : [value];
      out.push({ cell, spec: field[cell.field], value, protect, cut: 1 + r.int(Math.max(1, rend.raw.length - 1)), ...rend });
    }
  }
  return out;
}

// ---- The request bodies: every field of each surface ----
const jsonInner = (s) => JSON.stringify(s).slice(1, -1);
const txt = (s, fill) => s.before + (fill ?? s.raw) + s.after;
// A value cut in two, across two content parts of one message.
const halves = (s, fill) => (fill !== null ? [s.before + fill, fill + s.after] : [s.before + s.raw.slice(0, s.cut), s.raw.slice(s.cut) + s.after]);
const kindOf = (s) => s.cell.format.split('/')[1];
const num = (s, fill) => (fill !== null ? 0 : Number(s.raw));
function group(slots, fields) {
  const by = Object.fromEntries(fields.map((f) => [f.name, []]));
  for (const s of slots) by[s.cell.field].push(s);
  return by;
}
function helpers(by, fill) {
  const t = (f) => by[f].map((s) => txt(s, fill));
  return {
    t,
    lines: (f, empty) => (by[f].length ? t(f).join('\n') : empty),
    half: (f, i) => t(f).filter((_, j) => j % 2 === i),
    has: (f) => by[f].length > 0,
    one: (f, dflt) => (by[f].length ? t(f).join(' ') : dflt),
  };
}

// OpenAI chat. `needCloud` adds an https image, which a local box without
// image support cannot take (so the cloud is chosen while local is up).
function chatBody(tag, slots, { stream, n, fill = null, model = 'chat', needCloud = false }) {
  const by = group(slots, CHAT_FIELDS);
  const { t, lines, half, has, one } = helpers(by, fill);
  const args = by.args.map((s) => (s.cell.variant === 'esc' ? txt(s, fill) : jsonInner(txt(s, fill))));
  const parts = [{ type: 'text', text: 'Records:' }, ...t('part').map((text) => ({ type: 'text', text })),
    ...by.split.flatMap((s) => halves(s, fill).map((text) => ({ type: 'text', text })))];
  const partsLast = n % 2 === 1;
  const lastUser = partsLast ? parts.map((p) => p.text).join('') : lines('content', 'Nothing to add.');
  const attached = [
    ...by.image.map((s) => ({ type: 'image_url', image_url: { url: txt(s, fill) } })),
    ...by.file.map((s) => ({ type: 'file', file: { filename: 'scan.pdf', file_data: txt(s, fill) } })),
    ...(needCloud || has('s.detail') ? [{ type: 'image_url', image_url: { url: 'https://example.org/chart.png', detail: one('s.detail', 'low') } }] : []),
    ...(has('s.file_id') ? [{ type: 'file', file: { file_id: one('s.file_id') } }] : []),
  ];
  const callId = one('s.call_id', 'call_1');
  const fname = one('s.fname', 'save_records');
  const body = {
    model,
    stream,
    max_tokens: 8000,
    user: by.user.length ? t('user').join(' ') : 'client-7',
    messages: [
      { role: 'system', content: `Records assistant, ref ${tag}.` },
      { role: 'user', name: by.name.length ? t('name').join(' ') : 'client', content: partsLast ? lines('content', 'Nothing to add.') : parts },
      { role: 'assistant', content: null, tool_calls: [{ id: callId, type: 'function', function: { name: fname, arguments: `{"records":["${args.join('","')}"]}` } }] },
      { role: 'tool', tool_call_id: callId, content: lines('tool', 'saved') },
      ...(attached.length ? [{ role: 'user', content: [{ type: 'text', text: 'Attached.' }, ...attached] }] : []),
      { role: 'user', content: partsLast ? parts : lastUser },
    ],
    tools: [{
      type: 'function',
      function: {
        name: fname,
        description: `Saves records. ${lines('tooldesc', '')}`,
        parameters: {
          type: 'object',
          properties: {
            records: { type: 'array', items: { type: 'string' }, description: half('toolparam', 0).join('\n') || 'the records' },
            kind: { type: 'string', enum: [...half('toolparam', 1), 'other'] },
          },
        },
      },
    }],
    prediction: { type: 'content', content: lines('prediction', 'Records:') },
    stop: n % 2 === 0 ? lines('stop', 'END') : [...t('stop'), 'END'],
    metadata: { source: 'canary', ...Object.fromEntries(t('metadata').map((s, i) => [`note_${i}`, s])) },
    response_format: has('s.rftype') ? { type: one('s.rftype') } : {
      type: 'json_schema',
      json_schema: {
        name: 'records',
        schema: { type: 'object', description: half('schema', 0).join('\n') || 'records', properties: { kind: { type: 'string', enum: [...half('schema', 1), 'other'] } } },
      },
    },
    x_note: lines('unknown', 'none'),
    x_context: { trace: { items: t('nested').map((note) => ({ note })) } },
    x_index: Object.fromEntries(t('key').map((k, i) => [k, i])),
    ...(has('number') ? { x_record: by.number.map((s) => ({ [kindOf(s)]: num(s, fill) })) } : {}),
    ...(has('s.tool_choice') ? { tool_choice: one('s.tool_choice') } : {}),
    ...(has('s.reasoning') ? { reasoning_effort: one('s.reasoning') } : {}),
    ...(has('s.tier') ? { service_tier: one('s.tier') } : {}),
    ...(has('s.modalities') ? { modalities: ['text', one('s.modalities')] } : {}),
    ...(has('s.voice') ? { audio: { voice: one('s.voice'), format: 'wav' } } : {}),
  };
  return { body, headers: {}, lastUser };
}

// Anthropic Messages: system blocks, a string message, an assistant turn
// with text (and citations, thinking) and a tool call, the tool's result and
// the last user message's blocks (text, a value split over two of them,
// documents, images), tools, metadata, stop sequences, fields only the
// Anthropic dialect has, unknown keys at every level, two headers.
// The fields only the Anthropic dialect carries are there only when a cell
// is in them.
function messagesBody(tag, slots, { stream, fill = null, model = 'chat', needCloud = false }) {
  const by = group(slots, MESSAGES_FIELDS);
  const { t, lines, half, has, one } = helpers(by, fill);
  const src = (s, { pdf }) => ({ type: 'base64', media_type: s.cell.variant === 'upper' ? s.media.toUpperCase() : (pdf ? 'application/pdf' : s.media), data: s.lead + (fill ?? s.raw) });
  const note = (f) => (has(f) ? { x_note: lines(f) } : {});
  const records = { type: 'text', text: 'Records:', ...note('blockkey'), ...(has('cache') ? { cache_control: { type: 'ephemeral', x_note: lines('cache') } } : {}) };
  const texts = [records, ...t('block').map((text) => ({ type: 'text', text })), ...by.split.flatMap((s) => halves(s, fill).map((text) => ({ type: 'text', text })))];
  const lastUser = texts.map((b) => b.text).join('');
  const useId = one('a.tool_use_id', 'toolu_1');
  const toolName = one('a.tool_name', 'save_records');
  const resultParts = [
    ...t('resblock').map((text) => ({ type: 'text', text })),
    ...by['b.resimage'].map((s) => ({ type: 'image', source: src(s, { pdf: false }) })),
    ...by['b.resdoc'].map((s) => ({ type: 'document', source: src(s, { pdf: true }) })),
  ];
  const resultContent = resultParts.length ? [{ type: 'text', text: lines('result', 'saved') }, ...resultParts] : lines('result', 'saved');
  const documents = [
    ...t('document').map((data) => ({ type: 'document', source: { type: 'text', media_type: 'text/plain', data }, title: 'notes' })),
    ...by['b.document'].map((s) => ({ type: 'document', source: src(s, { pdf: true }), title: 'scan' })),
    ...(needCloud ? [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The notes of the meeting.' }, title: 'notes' }] : []),
  ];
  const body = {
    model,
    max_tokens: 8000,
    stream,
    // (the tag's block ends its line: the blocks of a run are also read
    // joined, and a value at the next block's start, an address, may take
    // the tag's last word as its own; the tag is the harness's, not data)
    system: [{ type: 'text', text: `Records assistant, ref ${tag}.\n` }, ...(has('system') ? [{ type: 'text', text: lines('system') }] : [])],
    metadata: { user_id: one('user', 'client-7') },
    stop_sequences: [...t('stop'), 'END'],
    tools: [
      {
        name: toolName,
        description: `Saves records. ${lines('tooldesc', '')}`,
        input_schema: {
          type: 'object',
          properties: {
            records: { type: 'array', items: { type: 'string' }, description: half('toolparam', 0).join('\n') || 'the records' },
            kind: { type: 'string', enum: [...half('toolparam', 1), 'other'] },
          },
        },
        ...(has('toolkey') ? { x_owner: lines('toolkey') } : {}),
      },
      ...(has('descobj') ? [{ name: 'note_records', description: { text: lines('descobj') }, input_schema: { type: 'object' } }] : []),
    ],
    messages: [
      { role: 'user', content: lines('content', 'Please save the records.'), ...note('msgkey') },
      {
        role: 'assistant',
        content: [
          ...(has('thinking') ? [{ type: 'thinking', thinking: lines('thinking'), signature: 'c2lnbmF0dXJlLWNhbmFyeQ==' }] : []),
          {
            type: 'text',
            text: lines('assistant', 'Saving them.'),
            ...(has('citations') ? { citations: t('citations').map((cited) => ({ type: 'char_location', cited_text: cited, document_index: 0, document_title: 'notes', start_char_index: 0, end_char_index: 12 })) } : {}),
          },
          { type: 'tool_use', id: useId, name: toolName, input: { records: t('input'), ...(has('number') ? { numbers: by.number.map((s) => ({ [kindOf(s)]: num(s, fill) })) } : {}) } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: useId, content: resultContent },
          ...texts,
          ...documents,
          ...by['b.image'].map((s) => ({ type: 'image', source: src(s, { pdf: false }) })),
        ],
      },
    ],
    ...(has('unknown') ? { x_note: lines('unknown') } : {}),
    ...(has('nested') ? { x_context: { trace: { items: t('nested').map((note) => ({ note })) } } } : {}),
    ...(has('key') ? { x_index: Object.fromEntries(t('key').map((k, i) => [k, i])) } : {}),
    ...(has('numx') ? { x_record: by.numx.map((s) => ({ [kindOf(s)]: num(s, fill) })) } : {}),
  };
  const headers = {
    ...(has('h.beta') ? { 'anthropic-beta': one('h.beta') } : {}),
    ...(has('h.version') ? { 'anthropic-version': one('h.version') } : {}),
  };
  return { body, headers, lastUser };
}

// Embeddings: every input string, user, metadata, unknown fields and keys,
// numbers, the encoding.
function embeddingsBody(tag, slots, { fill = null, model = 'chat' }) {
  const by = group(slots, EMBED_FIELDS);
  const { t, has, one } = helpers(by, fill);
  const body = {
    model,
    input: [`Records, ref ${tag}.`, ...t('input')],
    user: one('user', 'client-7'),
    metadata: { source: 'canary', ...Object.fromEntries(t('metadata').map((s, i) => [`note_${i}`, s])) },
    x_note: t('unknown').join('\n') || 'none',
    x_context: { trace: { items: t('nested').map((note) => ({ note })) } },
    ...(has('key') ? { x_index: Object.fromEntries(t('key').map((k, i) => [k, i])) } : {}),
    ...(has('number') ? { x_record: by.number.map((s) => ({ [kindOf(s)]: num(s, fill) })) } : {}),
    ...(has('e.encoding') ? { encoding_format: one('e.encoding') } : {}),
  };
  return { body, headers: {}, lastUser: null };
}

const SURFACES = {
  chat: { name: 'chat', path: '/v1/chat/completions', fields: CHAT_FIELDS, build: chatBody, cloud: 'openai', api: 'openai' },
  messages: { name: 'messages', path: '/v1/messages', fields: MESSAGES_FIELDS, build: messagesBody, cloud: 'anthropic', api: 'anthropic' },
  translated: { name: 'messages>openai', path: '/v1/messages', fields: MESSAGES_FIELDS, build: messagesBody, cloud: 'openai', api: 'anthropic', translated: true },
  embeddings: { name: 'embeddings', path: '/v1/embeddings', fields: EMBED_FIELDS, build: embeddingsBody, cloud: 'openai', api: 'openai', embeddings: true },
};

// A text of a clean request, in every form a field takes (so the structure of
// the bodies is baseline for the leak rule). Only the fields that take text
// and that every request of the surface may carry.
function cleanSlots(surface) {
  const r = rng(7);
  const out = [];
  for (const field of surface.fields) {
    if (field.formats || field.cls === 'header' || (surface.translated && field.native)) continue;
    for (const variant of ['plain', 'text', 'esc']) {
      if (variant === 'esc' && field.name !== 'args') continue;
      out.push({ cell: { field: field.name, variant }, spec: field, value: null, cut: 3, ...render(r, { type: 'note', pre: '', value: `nothing personal ${field.name}` }, variant) });
    }
  }
  return out;
}

// groups: [slots, perRequest] lists; one request per perRequest slots.
function makeRequests(surface, groups, { prefix, model, needCloud }) {
  const out = [];
  let i = 0;
  for (const [slots, perRequest] of groups) {
    for (let j = 0; j * perRequest < slots.length; j++, i++) {
      const mine = slots.slice(j * perRequest, (j + 1) * perRequest);
      const tag = `${prefix}${String(i).padStart(5, '0')}`;
      const stream = i % 2 === 1 && !surface.embeddings;
      const opts = { stream, n: i, model, needCloud };
      const built = surface.build(tag, mine, opts);
      out.push({ tag, slots: mine, ...built, skeleton: surface.build(tag, mine, { ...opts, fill: '\u0000' }) });
    }
  }
  return out;
}

// Deterministic shuffle, so one masked request carries many formats and fields.
function shuffled(arr, seed) {
  const r = rng(seed);
  const a = [...arr];
  for (let i = a.length - 1; i > 0; i--) { const j = r.int(i + 1); [a[i], a[j]] = [a[j], a[i]]; }
  return a;
}

// ---- Sending ----
function parseSSE(raw, surface) {
  let content = '';
  let json = null;
  for (const ev of raw.split('\n\n')) {
    const line = ev.split('\n').find((l) => l.startsWith('data: '));
    if (!line) continue;
    const data = line.slice(6);
    if (data === '[DONE]') continue;
    let chunk;
    try { chunk = JSON.parse(data); } catch { return { content, json: { raw } }; }
    if (chunk.error || chunk.type === 'error') { json = chunk; break; }
    if (surface.api === 'anthropic') { if (chunk.type === 'content_block_delta') content += chunk.delta?.text ?? ''; }
    else content += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return { content, json };
}
// Requests sent to gateways in this run, per surface (the run time is theirs).
const SENT = {};
async function send(gw, surface, q, headers = {}) {
  SENT[surface.name] = (SENT[surface.name] || 0) + 1;
  const r = await fetch(`${gw.url}${surface.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...q.headers, ...headers },
    body: JSON.stringify(q.body),
  });
  const raw = await r.text();
  let content = null;
  let json = null;
  if (q.body.stream && r.status === 200 && (r.headers.get('content-type') || '').includes('event-stream')) {
    ({ content, json } = parseSSE(raw, surface));
  } else {
    try { json = JSON.parse(raw); } catch { json = { raw: raw.slice(0, 200) }; }
    content = surface.api === 'anthropic' ? (Array.isArray(json.content) ? json.content.filter((b) => b.type === 'text').map((b) => b.text).join('') : null)
      : (json.choices?.[0]?.message?.content ?? null);
  }
  return { status: r.status, json, content, backend: r.headers.get('x-spillway-backend'), reason: r.headers.get('x-spillway-reason') };
}

// Sends every request, `concurrency` at a time; returns the answers in order.
async function sendAll(gw, surface, reqs, { concurrency = 1, headers = {} } = {}) {
  const out = new Array(reqs.length);
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const i = next++;
      out[i] = await send(gw, surface, reqs[i], headers);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

// The error shape of the surface's API, with a message and a type.
const structured = (surface, a) => (surface.api === 'anthropic'
  ? a.json?.type === 'error' && typeof a.json.error?.type === 'string' && typeof a.json.error?.message === 'string'
  : typeof a.json?.error?.message === 'string' && typeof a.json.error?.type === 'string');
// What became of a request: served by the cloud or the local box, refused
// with a structured error (a field that may not hold this, a request that may
// not leave and cannot stay), or something else (a 5xx, a crash, the wrong
// error shape), which fails the test.
function outcome(surface, a) {
  if (a.status === 200 && !a.json?.error && a.json?.type !== 'error') {
    if (a.backend === 'cloud') return 'cloud';
    if (a.backend === 'edge') return 'local';
  }
  if ([400, 413, 415, 422].includes(a.status) && structured(surface, a)) return 'refused';
  // 503 privacy_restricted or masking failed (on /v1/messages Anthropic's
  // 529 overloaded_error, its status for no backend able to serve).
  const unavailable = a.status === 503 || (surface.api === 'anthropic' && a.status === 529);
  if (unavailable && structured(surface, a) && /privacy_restricted|may not leave|masking|local/i.test(JSON.stringify(a.json))) return 'refused';
  return 'odd';
}

const received = async (sim) => (await getJSON(`${sim.url}/admin/received?n=100000`)).body.requests;
const countReceived = async (sim) => (await received(sim)).length;
// A later promise's outcome, without an unhandled rejection if a test ends first.
const later = (promise) => promise.then((v) => ({ v }), (e) => ({ e }));
const settle = async (p) => { const r = await p; if (r.e) throw r.e; return r.v; };
// With the local slot held, the cloud takes what may leave as `overflow`; on
// a loaded machine the held box may miss a health check, and the same request
// goes as `fallback`: either way the cloud was chosen.
const SPILL = ['overflow', 'fallback'];
const WAVE = 60;
const gwBackend = async (gw, name) => (await getJSON(`${gw.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } }))
  .body.backends.find((b) => b.name === name);

// With the only local slot held: in waves that fit the local queue (queue_max
// 64), each request of a wave either reaches the cloud (may leave), is
// refused, or waits in the local queue; once every one is in one of these,
// the slot is freed, the queue drains locally, and the slot is held again
// for the next wave. No deadline decides the outcome.
async function sendWaves(gw, edge, surface, reqs, hold) {
  const answers = [];
  for (let i = 0; i < reqs.length; i += WAVE) {
    const wave = reqs.slice(i, i + WAVE);
    if (!hold) hold = await holdLocal(gw, edge, { admin: ADMIN });
    // Answered or waiting in the local queue: a request is never both (a
    // queued request that moves on to the cloud leaves the queue first), so
    // the sum reaches the wave's size only once every request was routed.
    const done = [];
    const pending = wave.map((q) => later(send(gw, surface, q).then((a) => { done.push(a); return a; })));
    await waitFor(async () => (await gwBackend(gw, 'edge')).queued + done.length === wave.length,
      { timeout: 30000, what: 'every request of the wave answered or in the local queue' });
    await hold.release();
    hold = null;
    answers.push(...await Promise.all(pending.map(settle)));
    await waitFor(async () => { const e = await gwBackend(gw, 'edge'); return e.in_flight === 0 && e.queued === 0 && (await getJSON(`${edge.url}/admin/stats`)).body.hanging === 0; },
      { timeout: 10000, what: 'the local box idle again' });
  }
  return { answers, hold };
}

// Clean requests (every field filled with text that carries nothing) must
// reach the cloud on this path: else "the cloud saw nothing" would prove
// nothing. Returns what the cloud received (baseline for the leak rule).
async function proveCloudChosen(gw, cloud, surface, { reason, model = 'chat', needCloud = false }) {
  const reqs = [0, 1].map((i) => ({ ...surface.build(`rclean${i}`, cleanSlots(surface), { stream: i === 1 && !surface.embeddings, n: i, model, needCloud }) }));
  const before = await countReceived(cloud);
  for (const q of reqs) {
    const r = await send(gw, surface, q);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.backend, 'cloud', `a clean request must go to the cloud on this path (reason ${r.reason})`);
    if (reason) assert.ok([reason].flat().includes(r.reason), `reason ${r.reason}, expected ${reason}`);
  }
  const got = (await received(cloud)).slice(before);
  assert.equal(got.length, reqs.length, 'the cloud received the clean requests');
  return got;
}

// ---- The leak check ----
// Every string (and key, and number) of a body, with the tricks undone and
// placeholders replaced by a separator; and the Anthropic headers, which
// carry client text.
const HEADERS = ['anthropic-beta', 'anthropic-version'];
function texts(x, out = []) {
  if (typeof x === 'string') out.push(x);
  else if (typeof x === 'number' || typeof x === 'boolean') out.push(String(x));
  else if (Array.isArray(x)) for (const e of x) texts(e, out);
  else if (x && typeof x === 'object') for (const [k, v] of Object.entries(x)) { out.push(k); texts(v, out); }
  return out;
}
const headerTexts = (h = {}) => Object.entries(h).filter(([k]) => HEADERS.includes(k.toLowerCase())).map(([, v]) => String(v));
const seen = ({ body, headers }) => stripPlaceholders(normalise([...texts(body), ...headerTexts(headers)].join('\u0001')));
function grams(text, set = new Set()) {
  for (let i = 0; i + 4 <= text.length; i++) set.add(text.slice(i, i + 4));
  return set;
}

// The text a slot's raw form carries besides its protected values (the JSON
// between an AWS key id and its secret, a PGP block's armour): not evidence.
// Nothing when a protected value cannot be found in it as it is.
function rawContext(s) {
  const raw = normalise(s.raw);
  if (!s.protect.every((v) => raw.includes(v))) return [];
  return s.protect.reduce((parts, v) => parts.flatMap((x) => x.split(v)), [raw]);
}

// Checks what the cloud received against the values of the requests it came
// from (matched by the request's ref tag). A value leaks when one of its
// fragments not in the baseline (clean bodies, the request's own text without
// its values) is in the body. For the matrix a value is attributed by the
// fragments no other value of the same request has, so one leaked phone
// number does not make its neighbours look leaked too.
function checkLeaks(reqs, got, cleanGot) {
  const cleanGrams = new Set();
  for (const b of cleanGot) grams(seen(b), cleanGrams);
  const byTag = new Map(reqs.map((q) => [q.tag, q]));
  const result = { leaked: [], vacuous: [], untagged: 0, bodies: 0 };
  for (const g of got) {
    const tag = JSON.stringify(g.body).match(/ref ([a-z]+\d+)\./)?.[1];
    if (tag?.startsWith('rclean')) continue;
    result.bodies++;
    const q = byTag.get(tag);
    if (!q) {
      result.untagged++;
      if (DUMP) appendFileSync(DUMP, `${JSON.stringify({ untagged: true, got: g.body })}\n`);
      continue;
    }
    const hay = grams(seen(g));
    const base = grams(seen(q.skeleton));
    for (const s of q.slots) for (const part of rawContext(s)) grams(part, base);
    const checked = q.slots.map((s) => [...new Set(s.protect.flatMap(fragments))].filter((f) => !cleanGrams.has(f) && !base.has(f)));
    const uses = new Map();
    for (const fs of checked) for (const f of new Set(fs)) uses.set(f, (uses.get(f) || 0) + 1);
    q.slots.forEach((s, i) => {
      const fs = checked[i];
      if (fs.length === 0) { result.vacuous.push(s); return; }
      const hits = fs.filter((f) => hay.has(f));
      if (hits.length === 0) return;
      const own = fs.filter((f) => uses.get(f) === 1);
      const attributed = own.length === 0 || own.some((f) => hay.has(f));
      result.leaked.push({ slot: s, attributed, fragment: hits[0], whole: hits.length === fs.length });
      if (DUMP) appendFileSync(DUMP, `${JSON.stringify({ value: s.value, field: s.cell.field, fragment: hits[0], sent: q.body, got: g.body })}\n`);
    });
  }
  return result;
}

// ---- The report: leaked values per format x field (and per variant) ----
// The classes a value stands for, for the suite's summary: its field's (a
// binary part, a structural field, ...), its format's when the format is one
// of the later ones, its variant's when the variant is; else the base set.
function classes(s) {
  const out = [];
  if (s.spec.cls) out.push(s.spec.cls);
  if (NEW_FORMATS.includes(s.cell.format)) out.push(s.cell.format);
  if (NEW_VARIANTS.includes(s.cell.variant)) out.push(`variant ${s.cell.variant}`);
  if (s.cell.format.startsWith('binary/')) out.push(`binary ${s.cell.variant}`);
  return out.length ? out : ['base formats and variants'];
}
const SUMMARY = [];
const cut = (s, n = 120) => (s.length > n ? `${s.slice(0, n)}...(${s.length} chars)` : s);
function matrix(surface, path, sent, res, answers) {
  const total = new Map();
  const leak = new Map();
  const inc = (m, k) => m.set(k, (m.get(k) || 0) + 1);
  for (const s of sent) { inc(total, `${s.cell.format}|${s.cell.field}`); inc(total, `v|${s.cell.variant}`); inc(total, `f|${s.cell.format}`); }
  const attributed = res.leaked.filter((l) => l.attributed);
  for (const { slot: s } of attributed) { inc(leak, `${s.cell.format}|${s.cell.field}`); inc(leak, `v|${s.cell.variant}`); inc(leak, `f|${s.cell.format}`); }
  const fields = surface.fields;
  const lines = [`${surface.name}, ${path}: ${res.leaked.length} of ${sent.length} values leaked (${attributed.length} attributed below; a cell is the values of that format leaked from that field, '.' none)`];
  if (answers) lines.push(`answers: ${Object.entries(answers).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  lines.push(`${'format'.padEnd(16)} ${fields.map((f) => f.short.padStart(4)).join(' ')}   leaked/sent`);
  for (const format of ALL_FORMATS) {
    if (!total.get(`f|${format}`)) continue;
    const row = fields.map((field) => String(leak.get(`${format}|${field.name}`) || '.').padStart(4)).join(' ');
    lines.push(`${format.padEnd(16)} ${row}   ${leak.get(`f|${format}`) || 0}/${total.get(`f|${format}`) || 0}`);
  }
  const variants = [...new Set(sent.map((s) => s.cell.variant))];
  lines.push(`by variant: ${variants.map((v) => `${v} ${leak.get(`v|${v}`) || 0}/${total.get(`v|${v}`) || 0}`).join(', ')}`);
  // The values themselves are generated (no real person's), so some are
  // listed: what leaked, where, and what was written around it.
  for (const l of res.leaked.slice(0, 40)) {
    const s = l.slot;
    lines.push(`  leaked ${s.cell.format} in ${s.cell.field} (${s.cell.variant}${l.attributed ? '' : ', not attributed'}): ${cut(JSON.stringify(s.before + s.raw + s.after))}`);
  }
  if (res.leaked.length > 40) lines.push(`  ... and ${res.leaked.length - 40} more`);
  if (res.vacuous.length) lines.push(`${res.vacuous.length} value(s) had no fragment to check (all in the baseline): ${res.vacuous.slice(0, 3).map((s) => s.cell.format).join(', ')}`);
  if (res.untagged) lines.push(`${res.untagged} body/bodies the cloud received carried no request tag`);
  return lines.join('\n');
}

function assertNoLeaks(surface, path, reqs, got, clean, { floor, answers } = {}) {
  const sent = reqs.flatMap((q) => q.slots);
  const res = checkLeaks(reqs, got, clean);
  const leakedSlots = new Set(res.leaked.filter((l) => l.attributed).map((l) => l.slot));
  for (const s of sent) {
    for (const c of classes(s)) {
      const key = `${c}\u0000${surface.name}, ${path}`;
      const e = SUMMARY.find((x) => x.key === key) ?? SUMMARY[SUMMARY.push({ key, cls: c, col: `${surface.name}, ${path}`, sent: 0, leaked: 0, cells: new Set() }) - 1];
      e.sent++;
      if (leakedSlots.has(s)) { e.leaked++; e.cells.add(`${s.cell.format} in ${s.cell.field} (${s.cell.variant})`); }
    }
  }
  const report = matrix(surface, path, sent, res, answers);
  if (process.env.CANARY_REPORT) console.log(report);
  assert.ok(ONLY || sent.length >= floor, `${sent.length} values on this path`);
  assert.ok(sent.length > 0, 'no values sent');
  assert.ok(res.leaked.length === 0 && res.vacuous.length === 0 && res.untagged === 0, `\n${report}`);
}

// The suite's summary: leaked/sent per class and surface/path, and the cells
// that leaked (format in field (variant)), when anything leaked or asked for.
function printSummary() {
  if (process.env.CANARY_REPORT) console.log(`privacy canary: requests sent ${Object.entries(SENT).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  if (!SUMMARY.length || !(process.env.CANARY_REPORT || SUMMARY.some((e) => e.leaked))) return;
  const cols = [...new Set(SUMMARY.map((e) => e.col))];
  const rows = [...new Set(SUMMARY.map((e) => e.cls))];
  const lines = ['privacy canary: leaked/sent values per class and surface, path'];
  cols.forEach((c, i) => lines.push(`  [${i + 1}] ${c}`));
  lines.push(`${'class'.padEnd(30)} ${cols.map((_, i) => `[${i + 1}]`.padStart(9)).join(' ')}`);
  for (const r of rows) {
    lines.push(`${r.padEnd(30)} ${cols.map((c) => { const e = SUMMARY.find((x) => x.cls === r && x.col === c); return (e ? (e.leaked ? `${e.leaked}/${e.sent}` : `./${e.sent}`) : '-').padStart(9); }).join(' ')}`);
  }
  for (const e of SUMMARY.filter((x) => x.leaked)) lines.push(`  ${e.cls} on ${e.col}: ${[...e.cells].slice(0, 12).join('; ')}${e.cells.size > 12 ? `; ... (${e.cells.size} cells)` : ''}`);
  console.log(lines.join('\n'));
}

// ---- Gateways and paths ----
function config({ edgeUrl, cloudUrl, cloudDialect = 'openai', policy = 'local_only', emergency = false, images = true, ttft = 300 }) {
  return `
listen: "127.0.0.1:0"
admin: { key: "${ADMIN}" }
backends:
  - { name: edge, tier: local, url: "${edgeUrl}", model: edge-model, slots: 1, supports_images: ${images} }
  - { name: cloud, tier: cloud, url: "${cloudUrl}", model: cloud-model, dialect: ${cloudDialect}, supports_images: true }
models:
  - { name: chat, backends: [edge, cloud] }
  - { name: cloud-only, backends: [cloud] }
routing:
  health_interval_ms: 100
  ttft_budget_ms: ${ttft}
  emergency: ${emergency}
pii:
  policy: ${policy}
`;
}

const startCloud = (dialect = 'openai') => startLlmsim(['--model', 'cloud-model', '--dialect', dialect, '--reply', 'echo', '--decode-tps', '0', '--keep-received', '100000']);
const startEdge = () => startLlmsim(['--model', 'edge-model', '--reply', 'echo', '--decode-tps', '0', '--slots', '1']);

// Masked paths: every answer is the echo of the last user message, restored.
// With the local slot held, a spilled attempt whose cloud first byte misses
// the TTFT budget is abandoned once the slot frees (a loaded machine): the
// local box answers it (reason fallback) with the text unmasked. That answer
// is checked like the others; at least half must still come from the cloud.
function assertRestored(surface, reqs, answers, reasons, culprits = [], { fallbackOk = false } = {}) {
  const bad = [];
  const local = (a) => fallbackOk && a.status === 200 && a.backend === 'edge' && a.reason === 'fallback';
  const fellBack = answers.filter(local).length;
  assert.ok(fellBack * 2 <= answers.length, `${fellBack} of ${answers.length} masked requests fell back to the local box`);
  answers.forEach((a, i) => {
    if (local(a)) { if (!surface.embeddings && a.content !== reqs[i].lastUser) bad.push(`${reqs[i].tag}: the local fallback's answer is not the text sent`); }
    else if (a.status !== 200 || a.backend !== 'cloud' || (reasons && !reasons.includes(a.reason))) bad.push(`${reqs[i].tag}: ${a.status} ${a.backend} ${a.reason} ${JSON.stringify(a.json?.error ?? '').slice(0, 200)}`);
    else if (surface.embeddings) { if (a.json?.data?.length !== reqs[i].body.input.length) bad.push(`${reqs[i].tag}: ${a.json?.data?.length} vectors for ${reqs[i].body.input.length} inputs`); }
    else if (a.content !== reqs[i].lastUser) bad.push(`${reqs[i].tag}: the echoed answer is not the text sent (${a.content?.length} vs ${reqs[i].lastUser.length} characters)`);
  });
  assert.deepEqual(bad.slice(0, 5), [], `${bad.length} of ${answers.length} masked answers wrong${culprits.length ? `; sent alone, these values are not served masked: ${culprits.slice(0, 20).join('; ')}` : (bad.length ? '; each of their values sent alone was served masked (it is the values together, e.g. on consecutive lines of one field)' : '')}`);
}

// The paths. edge: the local box up or down; hold: its only slot held (the
// cloud takes what may leave as overflow); masked: what goes to the cloud is
// masked (a declared emergency, or policy mask); reason: why the cloud takes a
// clean request; model: the gateway model asked; needCloud: every request
// carries what the local box cannot serve (so the cloud is chosen while local
// is up).
const PATHS = {
  'local up': { edge: true, policy: 'local_only', needCloud: true },
  // Nothing of the surface needs the cloud while local is up (embeddings):
  // clean and not, everything is served locally.
  'local up, nothing needs the cloud': { edge: true, policy: 'local_only', served: 'local' },
  'local saturated': { edge: true, hold: true, policy: 'local_only', reason: SPILL },
  'local down': { edge: false, policy: 'local_only', reason: 'fallback' },
  emergency: { edge: false, policy: 'local_only', emergency: true, reason: 'fallback', masked: true, reasons: ['emergency', 'fallback'] },
  'mask under overflow': { edge: true, hold: true, policy: 'mask', reason: SPILL, masked: true, reasons: SPILL },
  'cloud-only model': { edge: true, policy: 'local_only', model: 'cloud-only' },
  'cloud-only model, mask': { edge: true, policy: 'mask', model: 'cloud-only', masked: true },
};

// One surface on one path: the clean requests reach the cloud, then every
// cell's values are sent; answers are the cloud, the local box or a
// structured refusal; masked answers come back restored; the cloud saw no
// fragment. Returns the answers' outcomes.
async function runPath(surface, pathName, { seed, prefix, perCell = 1, half = null, lean = true, floor, concurrency = 4 }) {
  const path = PATHS[pathName];
  const slots = slotsFor(surface, seed, perCell, { half, lean });
  // A CANARY_CELLS filter that leaves this surface nothing: nothing to run.
  if (ONLY && slots.length === 0) return {};
  const edge = path.edge ? await startEdge() : null;
  const cloud = await startCloud(surface.cloud);
  const gw = await startSpillway(config({ edgeUrl: edge ? edge.url : DOWN, cloudUrl: cloud.url, cloudDialect: surface.cloud, policy: path.policy, images: !path.needCloud, ttft: path.needCloud ? 10000 : 300 }));
  const model = path.model ?? 'chat';
  try {
    let hold = path.hold ? await holdLocal(gw, edge, { admin: ADMIN }) : null;
    if (path.needCloud || path.served === 'local') {
      // Clean traffic the local box can serve still goes there.
      const q = surface.build('rclean9', cleanSlots(surface).filter((s) => !s.spec.native), { stream: false, n: 0, model });
      const r = await send(gw, surface, q);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.backend, 'edge', `a clean request the local box can serve goes local (reason ${r.reason})`);
    }
    if (path.emergency) {
      const declared = await getJSON(`${gw.url}/admin/emergency`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ declared: true, reason: 'canary' }),
      });
      assert.equal(declared.status, 200);
    }
    const clean = path.served === 'local' ? [] : await proveCloudChosen(gw, cloud, surface, { reason: path.reason, model, needCloud: path.needCloud });
    let groups;
    if (path.masked) {
      const mixed = shuffled(slots, seed);
      groups = [[mixed.filter((s) => !s.spec.solo), PER_REQUEST], [mixed.filter((s) => s.spec.solo), 1]];
    } else {
      groups = [[slots, perCell]];
    }
    const reqs = makeRequests(surface, groups, { prefix, model, needCloud: path.needCloud });
    let answers;
    if (path.hold) ({ answers, hold } = await sendWaves(gw, edge, surface, reqs, hold));
    // One at a time where everything should be local: the only slot is free
    // for each request, so none overflows.
    else answers = await sendAll(gw, surface, reqs, { concurrency: path.served === 'local' ? 1 : path.masked ? 2 : concurrency });
    if (hold) await hold.release();
    const outcomes = answers.map((a) => outcome(surface, a));
    const count = {};
    for (const o of outcomes) count[o] = (count[o] || 0) + 1;
    const odd = answers.map((a, i) => [a, reqs[i]]).filter((_, i) => outcomes[i] === 'odd')
      .map(([a, q]) => `${q.slots.length === 1 ? `${q.slots[0].cell.format} in ${q.slots[0].cell.field} (${q.slots[0].cell.variant})` : q.tag}: ${a.status} ${a.backend} ${cut(JSON.stringify(a.json), 200)}`);
    let culprits = [];
    if (path.masked && !path.hold) {
      // A request of many values that was not served masked: each of its
      // values again on its own, to name the ones that fail (these requests
      // are checked for leaks too).
      const n = Math.ceil(groups[0][0].length / PER_REQUEST);
      const failed = reqs.slice(0, n).filter((q, i) => outcomes[i] !== 'cloud');
      if (failed.length) {
        const again = makeRequests(surface, [[failed.flatMap((q) => q.slots), 1]], { prefix: `${prefix}r`, model, needCloud: path.needCloud });
        const res = await sendAll(gw, surface, again, { concurrency: 2 });
        culprits = again.filter((_, i) => outcome(surface, res[i]) !== 'cloud')
          .map((q, i) => `${q.slots[0].cell.format} in ${q.slots[0].cell.field} (${q.slots[0].cell.variant}): ${res[i].status} ${cut(JSON.stringify(res[i].json?.error?.message ?? ''), 100)}`);
        reqs.push(...again);
      }
    }
    // Every check runs (the leak matrix goes to the summary whatever else
    // failed); the test fails with all that failed.
    const errors = [];
    const check = (f) => { try { f(); } catch (e) { errors.push(e.message); } };
    const got = await received(cloud);
    check(() => assertNoLeaks(surface, pathName, reqs, got, clean, { floor, answers: count }));
    if (path.masked) {
      const n = Math.ceil(groups[0][0].length / PER_REQUEST);
      check(() => assertRestored(surface, reqs.slice(0, n), answers.slice(0, n), path.reasons, culprits, { fallbackOk: !!path.hold }));
    }
    check(() => assert.deepEqual(odd.slice(0, 5), [], `${odd.length} answers neither the cloud, the local box nor a structured refusal`));
    if (errors.length) throw new assert.AssertionError({ message: errors.join('\n\n') });
    return count;
  } finally {
    await gw.stop(); if (edge) await edge.stop(); await cloud.stop();
  }
}

const CHAT = SURFACES.chat;
after(printSummary);

describe('privacy canary at scale', () => {
  test('local down, local_only: a request with a value is refused, never sent; one cell per request', async () => {
    await runPath(CHAT, 'local down', { seed: SEED, prefix: 'd', perCell: LOCAL_PER_CELL, half: 0, lean: false, floor: 5000, concurrency: 6 });
  });

  test('local saturated, local_only: a request with a value waits for local and is served there, never by the cloud; one cell per request', async () => {
    const count = await runPath(CHAT, 'local saturated', { seed: SEED + 1, prefix: 's', perCell: LOCAL_PER_CELL, half: 1, lean: false, floor: 5000 });
    assert.ok(ONLY || count.local > 0, 'requests with a value were served locally');
  });

  test('emergency (local down, local_only): what goes to the cloud is masked and comes back restored, streamed and not', async () => {
    await runPath(CHAT, 'emergency', { seed: SEED + 2, prefix: 'e', perCell: MASK_PER_CELL, lean: false, floor: 5000 });
  });

  test('policy mask under overflow (local saturated): what spills is masked and comes back restored, streamed and not', async () => {
    await runPath(CHAT, 'mask under overflow', { seed: SEED + 3, prefix: 'm', perCell: MASK_PER_CELL, lean: false, floor: 5000 });
  });

  test('local up: what the local box cannot serve goes to the cloud, and a request with a value does not; one cell per request', async () => {
    await runPath(CHAT, 'local up', { seed: SEED + 4, prefix: 'u', half: 0, floor: 1000 });
  });

  test('cloud-only model, local_only: a request with a value is refused, never sent; one cell per request', async () => {
    await runPath(CHAT, 'cloud-only model', { seed: SEED + 5, prefix: 'c', half: 1, floor: 1000 });
  });
});

describe('privacy canary: Anthropic Messages to an Anthropic-speaking cloud (the body goes as it is)', () => {
  const S = SURFACES.messages;
  test('local up (the examples/claude-code.yaml route): what cannot be translated goes to the cloud whole, a request with a value does not', async () => {
    await runPath(S, 'local up', { seed: SEED + 10, prefix: 'au', half: 0, floor: 1000 });
  });
  test('local saturated, local_only: a request with a value waits for local, never the cloud', async () => {
    const count = await runPath(S, 'local saturated', { seed: SEED + 11, prefix: 'as', half: 1, floor: 1000 });
    assert.ok(ONLY || count.local > 0, 'requests with a value were served locally');
  });
  test('local down, local_only: a request with a value is refused, never sent', async () => {
    await runPath(S, 'local down', { seed: SEED + 12, prefix: 'ad', half: 0, floor: 1000 });
  });
  test('emergency: what goes to the cloud is masked and comes back restored', async () => {
    await runPath(S, 'emergency', { seed: SEED + 13, prefix: 'ae', floor: 1000 });
  });
  test('policy mask under overflow: what spills is masked and comes back restored', async () => {
    await runPath(S, 'mask under overflow', { seed: SEED + 14, prefix: 'am', floor: 1000 });
  });
  test('cloud-only model, local_only: a request with a value is refused, never sent', async () => {
    await runPath(S, 'cloud-only model', { seed: SEED + 15, prefix: 'ac', half: 1, floor: 1000 });
  });
  test('cloud-only model, policy mask: masked, restored', async () => {
    await runPath(S, 'cloud-only model, mask', { seed: SEED + 16, prefix: 'ak', floor: 1000 });
  });
});

describe('privacy canary: Anthropic Messages to an OpenAI-speaking cloud (translated)', () => {
  const S = SURFACES.translated;
  test('local saturated, local_only: a request with a value waits for local, never the cloud', async () => {
    const count = await runPath(S, 'local saturated', { seed: SEED + 21, prefix: 'ts', half: 0, floor: 1000 });
    assert.ok(ONLY || count.local > 0, 'requests with a value were served locally');
  });
  test('local down, local_only: a request with a value is refused, never sent', async () => {
    await runPath(S, 'local down', { seed: SEED + 22, prefix: 'td', half: 1, floor: 1000 });
  });
  test('emergency: what goes to the cloud is masked and comes back restored', async () => {
    await runPath(S, 'emergency', { seed: SEED + 23, prefix: 'te', floor: 1000 });
  });
  test('policy mask under overflow: what spills is masked and comes back restored', async () => {
    await runPath(S, 'mask under overflow', { seed: SEED + 24, prefix: 'tm', floor: 1000 });
  });
  test('cloud-only model, local_only: a request with a value is refused, never sent', async () => {
    await runPath(S, 'cloud-only model', { seed: SEED + 25, prefix: 'tc', half: 0, floor: 1000 });
  });
});

describe('privacy canary: embeddings', () => {
  const S = SURFACES.embeddings;
  test('local up: every input is embedded locally, the cloud sees none', async () => {
    const count = await runPath(S, 'local up, nothing needs the cloud', { seed: SEED + 30, prefix: 'eu', half: 1, lean: false, floor: 1000 });
    assert.ok(ONLY || !count.cloud, 'nothing went to the cloud');
  });
  test('local saturated, local_only: an input with a value waits for local, never the cloud', async () => {
    const count = await runPath(S, 'local saturated', { seed: SEED + 31, prefix: 'es', half: 0, lean: false, floor: 1000 });
    assert.ok(ONLY || count.local > 0, 'inputs with a value were embedded locally');
  });
  test('local down, local_only: an input with a value is refused, never sent', async () => {
    await runPath(S, 'local down', { seed: SEED + 32, prefix: 'ed', half: 1, lean: false, floor: 1000 });
  });
  test('emergency: what goes to the cloud is masked', async () => {
    await runPath(S, 'emergency', { seed: SEED + 33, prefix: 'ee', lean: false, floor: 1000 });
  });
  test('policy mask under overflow: what spills is masked', async () => {
    await runPath(S, 'mask under overflow', { seed: SEED + 34, prefix: 'em', lean: false, floor: 1000 });
  });
  test('cloud-only model, local_only: an input with a value is refused, never sent', async () => {
    await runPath(S, 'cloud-only model', { seed: SEED + 35, prefix: 'ec', half: 0, lean: false, floor: 1000 });
  });
});

// ---- Privacy flags: the client says "not to the cloud" ----
// On a path where a clean request goes to the cloud (local down), a request
// that says it may not leave (header, metadata; on every surface) is refused,
// and one that says it in a near-miss spelling (case, `_`/`-`, a trailing
// space, a space before the header's colon, null or a string for the
// boolean, the header twice with conflicting values) is refused as a 400: it
// never reaches the cloud either way.
const FLAG_HEADERS = [
  ['header', [['x-spillway-allow-cloud', 'false']]],
  ['header X_Spillway_Allow_Cloud', [['X_Spillway_Allow_Cloud', 'false']]],
  ['header x-spillway-allow_cloud', [['x-spillway-allow_cloud', 'false']]],
  ['header twice, false and true', [['x-spillway-allow-cloud', 'false'], ['x-spillway-allow-cloud', 'true']]],
  ['header twice, true and false', [['x-spillway-allow-cloud', 'true'], ['x-spillway-allow-cloud', 'false']]],
];
const FLAG_METADATA = [
  ['metadata allow_cloud false', { allow_cloud: false }],
  ['metadata allow_cloud null', { allow_cloud: null }],
  ['metadata allow_cloud "false"', { allow_cloud: 'false' }],
  ['metadata Allow_Cloud', { Allow_Cloud: false }],
  ['metadata allow-cloud', { 'allow-cloud': false }],
  ['metadata "allow_cloud "', { 'allow_cloud ': false }],
  ['metadata ALLOW_CLOUD', { ALLOW_CLOUD: false }],
];
function flagBody(surface, marker, metadata) {
  if (surface.embeddings) return { model: 'chat', input: [marker], ...(metadata ? { metadata } : {}) };
  if (surface.api === 'anthropic') return { model: 'chat', max_tokens: 50, messages: [{ role: 'user', content: marker }], ...(metadata ? { metadata } : {}) };
  return { model: 'chat', messages: [{ role: 'user', content: marker }], ...(metadata ? { metadata } : {}) };
}
describe('privacy canary: privacy flags and their near misses, every surface', () => {
  for (const surface of [SURFACES.chat, SURFACES.messages, SURFACES.embeddings]) {
    test(`${surface.name}: a request that may not leave, or says so misspelt, never reaches the cloud (local down)`, async () => {
      const cloud = await startCloud(surface.cloud);
      const gw = await startSpillway(config({ edgeUrl: DOWN, cloudUrl: cloud.url, cloudDialect: surface.cloud }));
      try {
        const r = rng(SEED + 40);
        const clean = await send(gw, surface, { body: flagBody(surface, 'A clean note about the weather.', null), headers: {} });
        assert.equal(clean.status, 200, JSON.stringify(clean.json));
        assert.equal(clean.backend, 'cloud', 'a clean request goes to the cloud on this path');
        const cases = [
          ...FLAG_HEADERS.map(([name, hs]) => ({ name, hs, metadata: null })),
          ...FLAG_METADATA.map(([name, metadata]) => ({ name, hs: [], metadata })),
        ];
        const bad = [];
        const markers = [];
        for (const c of cases) {
          const marker = `Quarterly plan ${r.chars(6, 'abcdefghijklmnopqrstuvwxyz')} ${r.chars(8, 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789')}`;
          markers.push({ c, marker });
          const h = new Headers({ 'content-type': 'application/json' });
          for (const [k, v] of c.hs) h.append(k, v);
          const res = await fetch(`${gw.url}${surface.path}`, { method: 'POST', headers: h, body: JSON.stringify(flagBody(surface, marker, c.metadata)) });
          const text = await res.text();
          let json = null;
          try { json = JSON.parse(text); } catch { /* checked below */ }
          const a = { status: res.status, json, backend: res.headers.get('x-spillway-backend') };
          if (outcome(surface, a) !== 'refused') bad.push(`${c.name}: ${a.status} ${a.backend} ${cut(text, 160)}`);
        }
        // A space between the header's name and its colon (RFC 9112: 400).
        const { rawConnect } = await import('./lib/rawhttp.mjs');
        const conn = await rawConnect(gw.port);
        const marker = `Quarterly plan ${r.chars(6, 'abcdefghijklmnopqrstuvwxyz')} ${r.chars(8, 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789')}`;
        markers.push({ c: { name: 'header with a space before the colon' }, marker });
        const raw = await conn.request('POST', surface.path, { headers: { 'content-type': 'application/json', 'x-spillway-allow-cloud ': 'false' }, body: JSON.stringify(flagBody(surface, marker, null)) });
        conn.destroy();
        if (raw.status !== 400) bad.push(`header with a space before the colon: ${raw.status} ${cut(raw.body, 160)}`);
        const got = (await received(cloud)).map((q) => normalise(JSON.stringify(q.body))).join('\n');
        const leaked = markers.filter(({ marker }) => fragments(marker.split(' ').at(-1)).some((f) => got.includes(f))).map(({ c }) => c.name);
        for (const name of leaked) {
          const e = { key: `flag ${name}\u0000${surface.name}, local down`, cls: `flag: ${name}`, col: `${surface.name}, local down`, sent: 1, leaked: 1, cells: new Set([name]) };
          SUMMARY.push(e);
        }
        assert.deepEqual({ leaked, bad }, { leaked: [], bad: [] });
      } finally {
        await gw.stop(); await cloud.stop();
      }
    });
  }
});

describe("the canary's own tools", () => {
  test('the generator: seeded, every value valid for its kind, every variant normalises back to the value', () => {
    const a = slotsFor(CHAT, 1, 1);
    const b = slotsFor(CHAT, 1, 1);
    assert.deepEqual(a.map((s) => s.raw), b.map((s) => s.raw), 'the same seed gives the same values');
    assert.notDeepEqual(slotsFor(CHAT, 2, 1).map((s) => s.raw), a.map((s) => s.raw));
    const r = rng(3);
    const digits = (v) => v.replace(/\D/g, '');
    for (let i = 0; i < 300; i++) {
      const card = generate(r, FORMATS.filter((f) => f.startsWith('card/'))[i % 6]).value;
      assert.ok(luhnOk(digits(card)), `card ${card} is Luhn valid`);
      assert.ok(luhnOk(generate(r, 'number/card').value), 'a card as a number is Luhn valid');
      assert.ok(Number(generate(r, 'number/card').value) < 2 ** 53, 'a card as a number survives JSON.parse');
      const iban = generate(r, 'iban/grouped').value;
      assert.ok(ibanOk(iban.replace(/ /g, '')), `IBAN ${iban} passes mod 97`);
      const bsn = generate(r, FORMATS.filter((f) => f.startsWith('bsn/'))[i % 3]).value;
      assert.ok(elfproefOk(digits(bsn)), `BSN ${bsn} passes the 11-proef`);
      assert.ok(elfproefOk(generate(r, 'number/bsn').value));
      const dni = generate(r, i % 2 ? 'dni/dni' : 'dni/nie').value.replace(/[-. ]/g, '');
      const number = Number(dni.slice(0, -1).replace(/^[XYZ]/, (c) => String('XYZ'.indexOf(c))));
      assert.equal(dni.at(-1), 'TRWAGMYFPDXBNJZSQVHLCKE'[number % 23], `DNI/NIE ${dni} check letter`);
      const ssn = generate(r, 'ssn/dashed').value;
      assert.match(ssn, /^(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}$/, `SSN ${ssn}`);
      assert.match(generate(r, 'email/idn-local').value, /[^\x00-\x7f].*@|@.*\./u, 'an internationalised local part');
      assert.match(generate(r, 'ipv4/zeros').value, /(^|\.)0\d/, 'an octet with a leading zero');
      const aws = generate(r, 'secret/aws-pair');
      assert.equal(aws.protect.length, 2);
      assert.match(aws.protect[0], /^A[KS]IA[A-Z2-7]{16}$/);
      assert.match(aws.protect[1], /^[A-Za-z0-9+/]{40}$/);
      assert.match(generate(r, 'secret/pem').pre, /^-----BEGIN [A-Z ]*PRIVATE KEY-----\n$/);
    }
    for (const s of a) assert.equal(normalise(s.raw), s.value, `${s.cell.variant} of ${s.cell.format}`);
    // Every class the canary covers has cells on the chat surface (in a full run).
    const got = new Set(a.flatMap((s) => [s.cell.format, s.cell.variant, s.cell.field]));
    if (!ONLY) for (const want of [...NEW_FORMATS, ...NUMBER_FORMATS, ...BINARY_FORMATS, ...NEW_VARIANTS, 'split', 'number', 'image', 's.tool_choice']) assert.ok(got.has(want), want);
  });

  test('the leak check: a value split by zero-width characters, no-break spaced, full-width, in other digits, dashes or lines, %40, or JSON-escaped in arguments still counts', () => {
    const r = rng(4);
    const slot = (format, field, variant, tweak = (v) => v) => {
      const v = tweak(generate(r, format));
      const rend = render(r, v, variant);
      return { cell: { format, field, variant }, spec: CHAT_FIELDS.find((f) => f.name === field), value: normalise(rend.value ?? v.value), protect: v.protect ? v.protect.map(normalise) : [normalise(rend.value ?? v.value)], cut: 5, ...rend };
    };
    const nl = (v) => ({ ...v, value: v.value.replace(/^\+31\d/, '+31 6 ').replace(/-/g, ' ') }); // has a space for nbsp
    const slots = [
      ...['zw', 'nbsp', 'fullwidth', 'esc', 'plain', 'arabic', 'persian', 'devanagari', 'dash', 'wsplit'].map((variant) => slot('phone/NL/plus', 'args', variant, nl)),
      ...['pct40', 'ent64', 'text'].map((variant) => slot('email/idn-local', 'content', variant)),
      slot('secret/pem', 'content', 'litnl'), slot('secret/pem', 'args', 'plain'), slot('secret/aws-pair', 'tool', 'text'),
      slot('card/plain', 'split', 'text'), slot('number/card', 'number', 'json'), slot('binary/png', 'image', 'bom'),
    ];
    // One request per value, so no value's fragments show through another's.
    const reqs = makeRequests(CHAT, [[slots, 1]], { prefix: 't' });
    // The cloud got the bodies as they were sent: every value leaked...
    const all = checkLeaks(reqs, reqs.map((q) => ({ body: JSON.parse(JSON.stringify(q.body)) })), []);
    assert.equal(all.leaked.length, slots.length, JSON.stringify(all.leaked.map((l) => l.slot.cell.variant)));
    // ... and seen whole: every fragment of each, once the tricks are undone
    // (but for the value cut across two parts: the fragments across the cut).
    assert.deepEqual(all.leaked.filter((l) => !l.whole).map((l) => l.slot.cell.field), ['split']);
    // Half of it is still a leak.
    const halfOnly = reqs.map((q) => { const b = JSON.parse(JSON.stringify(q.body)); if (q.slots[0].cell.field === 'split') for (const m of b.messages) if (Array.isArray(m.content)) m.content = m.content.filter((p, i) => i !== m.content.length - 1 || p.type !== 'text'); return { body: b }; });
    assert.equal(checkLeaks(reqs, halfOnly, []).leaked.length, slots.length, 'the first half alone leaks');
    // The cloud got each value as a placeholder: nothing leaked.
    const masked = reqs.map((q, i) => ({ body: chatBody(q.tag, q.slots, { stream: false, n: i, fill: q.slots[0].cell.field === 'number' ? null : '[PHONE_1]' }).body }));
    masked.forEach((m, i) => { if (reqs[i].slots[0].cell.field === 'number') m.body.x_record = [{ card: '[CARD_1]' }]; });
    const none = checkLeaks(reqs, masked, []);
    assert.deepEqual(none.leaked, []);
    assert.deepEqual(none.vacuous, []);
  });
});
