// A minimal OpenAI-compatible backend that answers every chat request with
// one tool call whose arguments carry the last user message verbatim:
// {"records": "<text>"}. llmsim cannot emit tool calls; this can, streamed
// (the arguments cut into 3-character pieces, so a placeholder is split
// across chunks) or whole. Like llmsim it keeps what it received at
// GET /admin/received ({"requests":[{"headers","body"}]}).
import http from 'node:http';

export async function startToolsim({ model = 'tool-model' } = {}) {
  const received = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      if (req.method === 'GET' && req.url.startsWith('/admin/received')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ requests: received }));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not found","type":"invalid_request_error"}}');
        return;
      }
      let body;
      try { body = JSON.parse(raw); } catch { body = raw; }
      received.push({ headers: req.headers, body });
      const user = [...(body.messages || [])].reverse().find((m) => m.role === 'user');
      const args = JSON.stringify({ records: typeof user?.content === 'string' ? user.content : '' });
      const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'save_records', arguments: args } };
      const base = { id: 'chatcmpl-tool', created: 1, model: body.model };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          ...base, object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: call.type, function: call.function }] }, finish_reason: 'tool_calls' }],
          usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
        }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const ev = (delta, finish = null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      let out = ev({ role: 'assistant', content: null, tool_calls: [{ ...call, function: { name: call.function.name, arguments: '' } }] });
      for (let i = 0; i < args.length; i += 3) out += ev({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 3) } }] });
      out += ev({}, 'tool_calls');
      out += 'data: [DONE]\n\n';
      res.end(out);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    async stop() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
    },
  };
}
