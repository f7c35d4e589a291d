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
 * a session per initialize), `nonsense` answers HTML, `silent` never answers. Every message it
 * got is in `received`, with its headers.
 */
export async function startOwn(mode) {
  const held = [];
  const received = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const message = JSON.parse(body || '{}');
    message.headers = req.headers;
    received.push(message);
    if (!('id' in message)) return res.writeHead(202).end();
    const answer = (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    if (message.method === 'initialize') {
      // `sessions`: each initialize opens a session of its own, named in Mcp-Session-Id.
      if (mode === 'sessions') res.setHeader('mcp-session-id', `session-${received.filter((m) => m.method === 'initialize').length}`);
      return answer({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: mode, version: '1' } });
    }
    if (message.method === 'tools/list') return answer({ tools: [{ name: 'work', inputSchema: { type: 'object' } }] });
    if (mode === 'echo' || mode === 'sessions') return answer({ content: [{ type: 'text', text: 'done' }] });
    if (mode === 'nonsense') return res.writeHead(200, { 'content-type': 'application/json' }).end('<html>not JSON</html>');
    held.push(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { received, url: `http://127.0.0.1:${server.address().port}/mcp`, close: () => { held.forEach((r) => r.destroy()); server.closeAllConnections(); return new Promise((r) => server.close(r)); } };
}

