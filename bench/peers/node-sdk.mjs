// The TypeScript SDK on Node, as n8n's MCP Trigger runs it: McpServer with a Streamable HTTP
// transport per session, serving the same `echo` tool through fetch. Port and upstream come from
// the environment (PORT, UPSTREAM_URL), and the reply mode too: JSON_RESPONSE=1 answers each
// call with one JSON body (`enableJsonResponse`), otherwise with an SSE stream, the SDK's
// default. Prints "listening <port>" when ready.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const upstream = process.env.UPSTREAM_URL;
const enableJsonResponse = process.env.JSON_RESPONSE === '1';
const transports = new Map();

function newServer() {
  const server = new McpServer({ name: 'node-sdk-bench', version: '1.0.0' });
  server.tool('echo', 'Echoes a message through the upstream.', { message: z.string() }, async ({ message }) => {
    const reply = await fetch(`${upstream}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) });
    const result = await reply.json();
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  });
  return server;
}

const http = createServer(async (req, res) => {
  let body = '';
  for await (const chunk of req) body += chunk;
  const parsed = body ? JSON.parse(body) : undefined;
  const sid = req.headers['mcp-session-id'];
  let transport = sid && transports.get(sid);
  if (!transport) {
    transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse, onsessioninitialized: (id) => transports.set(id, transport) });
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, parsed);
});
http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.log(`listening ${http.address().port}`));
