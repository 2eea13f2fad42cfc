// An OTLP/HTTP trace receiver for the tests: POST /v1/traces in http/json
// or http/protobuf. Protobuf is decoded with the official OpenTelemetry
// definitions (./otlp-proto, loaded by protobufjs), JSON with the OTLP JSON
// mapping; both become one shape: { spans: [{ traceId, spanId, parentSpanId,
// name, kind, flags, start, end, attrs: {key: value}, events: [{ name, attrs }],
// status, resource: {key: value}, scope }] }, ids as lower-case hex.
// mode(): 'ok' (200), 'slow' (holds each request without answering),
// 'fail' (503 with Retry-After: 0). Every raw body is kept for canary checks.
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = dirname(fileURLToPath(import.meta.url));
let requestType;
function protoRequest() {
  if (!requestType) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => join(here, 'otlp-proto', target);
    root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
    requestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  }
  return requestType;
}

const hex = (b) => Buffer.from(b ?? []).toString('hex');

function anyValue(v) {
  if (v == null) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(anyValue);
  return undefined;
}
const attrsOf = (list) => Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValue(kv.value)]));

// Both decodings as one plain object tree (protobufjs' toObject with
// longs as strings and bytes as base64 is the JSON mapping but for ids).
function normalise(req, ids) {
  const out = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = attrsOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: ids(s.traceId), spanId: ids(s.spanId), parentSpanId: ids(s.parentSpanId),
          traceState: s.traceState ?? '', name: s.name, kind: Number(s.kind ?? 0), flags: Number(s.flags ?? 0),
          start: BigInt(s.startTimeUnixNano ?? 0), end: BigInt(s.endTimeUnixNano ?? 0),
          attrs: attrsOf(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, time: BigInt(e.timeUnixNano ?? 0), attrs: attrsOf(e.attributes) })),
          status: { code: Number(s.status?.code ?? 0), message: s.status?.message ?? '' },
          resource, scope: ss.scope,
        });
      }
    }
  }
  return out;
}

export function decodeProtobuf(buf) {
  const T = protoRequest();
  const msg = T.decode(buf);
  const obj = T.toObject(msg, { longs: String, enums: Number, bytes: Array, defaults: false, oneofs: false });
  return normalise(obj, (b) => hex(b));
}

export function decodeJson(text) {
  const obj = JSON.parse(text);
  return normalise(obj, (h) => h ?? '');
}

export async function startCollector() {
  let mode = 'ok';
  const spans = [];
  const bodies = [];
  const requests = [];       // { contentType, headers, status }
  const held = new Set();
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const ct = req.headers['content-type'] ?? '';
      requests.push({ path: req.url, contentType: ct, headers: req.headers, mode });
      if (mode === 'slow') { held.add(res); res.on('close', () => held.delete(res)); return; }
      if (mode === 'fail') {
        res.writeHead(503, { 'retry-after': '0', 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      bodies.push(body);
      try {
        spans.push(...(ct.includes('protobuf') ? decodeProtobuf(body) : decodeJson(body.toString('utf8'))));
      } catch (e) {
        res.writeHead(400); res.end(String(e)); return;
      }
      res.writeHead(200, { 'content-type': ct.includes('protobuf') ? 'application/x-protobuf' : 'application/json' });
      res.end(ct.includes('protobuf') ? '' : '{}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    spans,
    bodies,
    requests,
    setMode(m) {
      mode = m;
      if (m !== 'slow') for (const r of held) r.destroy();
    },
    reset() { spans.length = 0; bodies.length = 0; requests.length = 0; },
    async close() {
      for (const r of held) r.destroy();
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
    },
  };
}
