// The floor for any fetch-backed tool: a worker that only forwards the call's arguments to the
// upstream and wraps its reply in a JSON-RPC result. No MCP, no sessions, no validation.
export default {
  async fetch(request, env) {
    const { id, params } = await request.json();
    const reply = await fetch(`${env.UPSTREAM_URL}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(params?.arguments ?? {}) });
    const result = await reply.json();
    return Response.json({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result } });
  },
};
