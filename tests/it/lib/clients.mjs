// Helpers for driving a server with real HTTP clients (curl, Python, ab) and
// with raw sockets, for tests/it/http_clients.test.mjs. Every wait is bounded.
import { execFile } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const PY = fileURLToPath(new URL('./clients.py', import.meta.url));

// Runs a program; resolves { code, stdout, stderr } (never rejects on a
// non-zero exit: the test asserts on it). `input` goes to its stdin.
export function run(cmd, args, { input, timeout = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout, maxBuffer: 64 << 20, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(new Error(`${cmd}: ${err.message}\n${stderr}`));
        resolve({ code: err ? err.code : 0, stdout, stderr });
      });
    if (input !== undefined) child.stdin.end(input);
  });
}

// Runs tests/it/lib/clients.py with a spec; returns its JSON answer.
export async function python(spec) {
  const r = await run('python3', [PY, JSON.stringify(spec)]);
  if (r.code !== 0) throw new Error(`python3 clients.py ${spec.mode} failed (${r.code}):\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

// Parses HTTP/1.x responses from `buf` (a latin1 string). `methods` gives the
// request method of each response in order (HEAD answers have no body).
// A body without Content-Length or chunked framing runs to the end of the
// connection: complete only when `closed`. Interim 1xx answers are returned
// in `interim`. Returns { responses, interim, rest }.
export function parseResponses(buf, methods = [], closed = false) {
  const responses = [];
  const interim = [];
  let pos = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', pos);
    if (end < 0) break;
    const lines = buf.slice(pos, end).split('\r\n');
    const m = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]);
    if (!m) throw new Error(`not a status line: ${JSON.stringify(lines[0])}`);
    const headers = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const status = Number(m[2]);
    let p = end + 4;
    if (status >= 100 && status < 200) {
      interim.push({ status, headers });
      pos = p;
      continue;
    }
    const res = { status, version: `1.${m[1]}`, headers, body: '' };
    if (methods[responses.length] === 'HEAD' || status === 204 || status === 304) {
      // no body
    } else if (/chunked/i.test(headers['transfer-encoding'] || '')) {
      let body = '';
      let done = false;
      for (;;) {
        const le = buf.indexOf('\r\n', p);
        if (le < 0) break;
        const size = parseInt(buf.slice(p, le), 16);
        if (size === 0) {
          const te = buf.indexOf('\r\n', le + 2); // no trailers expected
          if (te < 0) break;
          p = te + 2;
          done = true;
          break;
        }
        if (buf.length < le + 2 + size + 2) break;
        body += buf.slice(le + 2, le + 2 + size);
        p = le + 2 + size + 2;
      }
      if (!done) break;
      res.body = body;
      res.chunked = true;
    } else if (headers['content-length'] !== undefined) {
      const n = Number(headers['content-length']);
      if (buf.length < p + n) break;
      res.body = buf.slice(p, p + n);
      p += n;
    } else {
      if (!closed) break;
      res.body = buf.slice(p);
      p = buf.length;
    }
    responses.push(res);
    pos = p;
  }
  return { responses, interim, rest: buf.slice(pos) };
}

// A raw client connection. send() writes bytes; responses(n) waits until n
// responses are in; closed() waits until the server closed the connection.
export async function rawConnect(port) {
  const sock = net.connect(port, '127.0.0.1');
  sock.setEncoding('latin1');
  await new Promise((resolve, reject) => { sock.once('connect', resolve); sock.once('error', reject); });
  let buf = '';
  let isClosed = false;
  const methods = [];
  const waiters = new Set();
  const wake = () => { for (const w of waiters) w(); };
  sock.on('data', (d) => { buf += d; wake(); });
  sock.on('error', () => {}); // a reset shows as a close; the test asserts on what arrived
  sock.on('close', () => { isClosed = true; wake(); });
  const until = (pred, what, timeout) => new Promise((resolve, reject) => {
    const check = () => {
      const v = pred();
      if (v) { waiters.delete(check); clearTimeout(t); resolve(v); }
    };
    const t = setTimeout(() => {
      waiters.delete(check);
      reject(new Error(`timed out after ${timeout} ms waiting for ${what}; got ${JSON.stringify(buf.slice(0, 2000))}`));
    }, timeout);
    waiters.add(check);
    check();
  });
  return {
    sock,
    get data() { return buf; },
    get isClosed() { return isClosed; },
    // method of each request sent, for parsing HEAD answers
    send(text, ...reqMethods) { methods.push(...reqMethods); sock.write(text, 'latin1'); },
    responses(n, timeout = 20000) {
      return until(() => {
        const r = parseResponses(buf, methods, isClosed);
        return r.responses.length >= n ? r : null;
      }, `${n} response(s)`, timeout);
    },
    closed(timeout = 20000) { return until(() => isClosed, 'the server to close the connection', timeout); },
    destroy() { sock.destroy(); },
  };
}

// One request line + headers (+ body) as raw bytes.
export function rawRequest(method, path, { version = '1.1', headers = {}, body } = {}) {
  let s = `${method} ${path} HTTP/${version}\r\nHost: 127.0.0.1\r\n`;
  const h = { ...headers };
  if (body !== undefined && !Object.keys(h).some((k) => /^(content-length|transfer-encoding)$/i.test(k))) {
    h['Content-Length'] = Buffer.byteLength(body);
  }
  for (const [k, v] of Object.entries(h)) s += `${k}: ${v}\r\n`;
  return `${s}\r\n${body ?? ''}`;
}

// The "data: ..." payloads of an SSE body, in order.
export function sseData(text) {
  return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
}

// Parses ApacheBench's report.
export function abReport(out) {
  const num = (re) => { const m = re.exec(out); return m ? Number(m[1]) : undefined; };
  return {
    complete: num(/^Complete requests:\s+(\d+)/m),
    failed: num(/^Failed requests:\s+(\d+)/m),
    connect: num(/\(Connect: (\d+)/),
    receive: num(/Receive: (\d+)/),
    exceptions: num(/Exceptions: (\d+)\)/),
    non2xx: num(/^Non-2xx responses:\s+(\d+)/m) ?? 0,
    keepAlive: num(/^Keep-Alive requests:\s+(\d+)/m) ?? 0,
  };
}
