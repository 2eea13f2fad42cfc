// A raw HTTP/1.1 client connection for tests where the connection itself is
// the point (keep-alive, connection limits, clients that stop reading):
// send requests by hand, read whole answers (Content-Length bodies), and see
// every byte that arrived.
import net from 'node:net';

// Connects to 127.0.0.1:port; resolves once the TCP handshake completed.
export async function rawConnect(port) {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((res, rej) => { sock.once('connect', res); sock.once('error', rej); });
  return rawConn(sock);
}

export function rawConn(sock) {
  let buf = Buffer.alloc(0);
  let bytes = 0;
  let closed = false;
  const waiters = [];
  const closedP = new Promise((r) => sock.on('close', () => { closed = true; pump(); r(); }));
  sock.on('error', () => {}); // a reset shows as 'close'
  sock.on('data', (d) => { bytes += d.length; buf = Buffer.concat([buf, d]); pump(); });

  function parse() {
    const i = buf.indexOf('\r\n\r\n');
    if (i < 0) return null;
    const head = buf.subarray(0, i).toString();
    const m = head.match(/\r\ncontent-length:\s*(\d+)/i);
    const len = m ? Number(m[1]) : 0;
    if (buf.length < i + 4 + len) return null;
    const body = buf.subarray(i + 4, i + 4 + len).toString();
    buf = buf.subarray(i + 4 + len);
    return { status: Number(head.split(' ')[1]), head, body };
  }
  function pump() {
    while (waiters.length) {
      const r = parse();
      if (r) waiters.shift().res(r);
      else if (closed) waiters.shift().rej(new Error('connection closed before a whole answer'));
      else break;
    }
  }
  return {
    sock,
    closed: closedP,
    get bytes() { return bytes; },
    get isClosed() { return closed; },
    // Sends one request and resolves with its answer { status, head, body }.
    request(method, path, { headers = {}, body = '' } = {}) {
      const h = { host: '127.0.0.1', ...headers, ...(body ? { 'content-length': Buffer.byteLength(body) } : {}) };
      const text = `${method} ${path} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`;
      return new Promise((res, rej) => { waiters.push({ res, rej }); sock.write(text); pump(); });
    },
    destroy() { sock.destroy(); },
  };
}
