// Peer: Cloudflare's `agents` createMcpHandler, as its documentation shows it: an McpServer per
// request serving the same `echo` tool through fetch. Bundled by bench/run.mjs with esbuild.
import { createMcpHandler } from 'agents/mcp';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

function echoServer(env) {
  const server = new McpServer({ name: 'create-mcp-handler-bench', version: '1.0.0' });
  server.tool('echo', 'Echoes a message through the upstream.', { message: z.string() }, async ({ message }) => {
    const reply = await fetch(`${env.UPSTREAM_URL}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) });
    const result = await reply.json();
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  });
  return server;
}

export default {
  fetch(request, env, ctx) {
    return createMcpHandler(echoServer(env))(request, env, ctx);
  },
};
