// Peer: Cloudflare's `agents` McpAgent: a Durable Object per session serving the same `echo` tool
// through fetch. Bundled by bench/run.mjs with esbuild.
import { McpAgent } from 'agents/mcp';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';

export class EchoAgent extends McpAgent {
  server = new McpServer({ name: 'mcp-agent-bench', version: '1.0.0' });

  async init() {
    this.server.tool('echo', 'Echoes a message through the upstream.', { message: z.string() }, async ({ message }) => {
      const reply = await fetch(`${this.env.UPSTREAM_URL}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) });
      const result = await reply.json();
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    });
  }
}

export default EchoAgent.serve('/mcp', { binding: 'MCP_OBJECT' });
