//! MCP servers for the tests of upstream MCP servers (`upstreams`): the official
//! @modelcontextprotocol/server-everything, run from node_modules, and a minimal server of the
//! harness's own whose calls behave as a test needs.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { root } from './harness.mjs';

/** A free port on loopback. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** server-everything on `port`, over Streamable HTTP (`/mcp`) or, with `transport` `sse`, the
 *  2024-11-05 HTTP+SSE transport (`/sse`); resolves once it listens. */
export async function startEverything(port, transport = 'streamableHttp') {
  const child = spawn(process.execPath, [join(root, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js'), transport], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' }).then(() => true, () => false);
    if (up) return { port, url: `http://127.0.0.1:${port}/${transport === 'sse' ? 'sse' : 'mcp'}`, close: async () => { child.kill(); await exited; } };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('server-everything did not start');
}

/**
 * A minimal MCP server of the harness's own: initialize and tools/list answer properly;
 * `tools/call` does what `mode` says: `echo` and `sessions` answer "done" (`sessions` also names
 * a session per initialize), `nonsense` answers HTML, `silent` never answers, `growing` adds the
 * tool `grown` to its list and says so (`notifications/tools/list_changed`) on the call's SSE
 * stream before its answer, `leaky` echoes the X-Secret it was sent in a log message and a
 * progress notification before its answer, and in its answer (a call with `fail` in its
 * arguments: HTTP 500, the secret after `pad` dots), and `unlisted` fails `tools/list` the same
 * way. Each lists one prompt, `brief`, and completes nothing (-32601). Every message it got is in `received`, with its headers and HTTP
 * method (`http`; a DELETE's message is `{}`).
 */
export async function startOwn(mode) {
  const held = [];
  const received = [];
  let grown = false;
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body || '{}');
    message.headers = req.headers;
    message.http = req.method;
    received.push(message);
    if (!('id' in message)) return res.writeHead(req.method === 'DELETE' ? 200 : 202).end();
    const answer = (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    if (message.method === 'initialize') {
      // `sessions`: each initialize opens a session of its own, named in Mcp-Session-Id.
      if (mode === 'sessions') res.setHeader('mcp-session-id', `session-${received.filter((m) => m.method === 'initialize').length}`);
      return answer({ protocolVersion: '2025-06-18', capabilities: { tools: { listChanged: mode === 'growing' }, prompts: {}, logging: {} }, serverInfo: { name: mode, version: '1' } });
    }
    // One prompt, and no completions: what a server that offers none answers.
    if (message.method === 'logging/setLevel') return answer({});
    if (message.method === 'prompts/list') return answer({ prompts: [{ name: 'brief', arguments: [{ name: 'topic', required: true }] }] });
    if (message.method === 'completion/complete') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
    const secret = req.headers['x-secret'];
    if (mode === 'unlisted' && message.method === 'tools/list') return res.writeHead(500, { 'content-type': 'text/plain' }).end(`no list for ${secret}`);
    if (mode === 'leaky' && message.method === 'tools/call') {
      const args = message.params?.arguments ?? {};
      if (args.fail) return res.writeHead(500, { 'content-type': 'text/plain' }).end(`${'.'.repeat(args.pad ?? 0)}${secret}${'.'.repeat(300)}`);
      const event = (m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(event({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', logger: 'leaky', data: `logged ${secret}` } }));
      const token = message.params?._meta?.progressToken;
      if (token !== undefined) res.write(event({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2, message: `progress ${secret}` } }));
      return res.end(event({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: `done ${secret}` }] } }));
    }
    if (message.method === 'tools/list') return answer({ tools: [{ name: 'work', inputSchema: { type: 'object' } }, ...(grown ? [{ name: 'grown', inputSchema: { type: 'object' } }] : [])] });
    if (mode === 'growing') {
      grown = true;
      const event = (m) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(event({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
      return res.end(event({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'grew' }] } }));
    }
    if (mode === 'echo' || mode === 'sessions') return answer({ content: [{ type: 'text', text: 'done' }] });
    if (mode === 'nonsense') return res.writeHead(200, { 'content-type': 'application/json' }).end('<html>not JSON</html>');
    held.push(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { received, url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => { held.forEach((r) => r.destroy()); server.closeAllConnections(); return new Promise((r) => server.close(r)); } };
}

