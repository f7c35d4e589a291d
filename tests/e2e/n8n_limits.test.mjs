// n8n's MCP Client node (n8n-nodes-mcp, run by its own `execute` as n8n would) against a rate
// limit (issue 41): the call within the limit runs; the one over it fails the node's execution
// with the refusal's message (the 429's JSON-RPC error: which limit, when to retry; this node's
// SDK leaves the status out of its message), the way an n8n workflow shows a failed node, and
// the next execution after the wait runs again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, run, startMiniflare } from './harness.mjs';
import { n8nNode } from './clients.mjs';
import { startTestUpstream } from './upstream.mjs';

let upstream;
let worker;
before(async () => {
  upstream = await startTestUpstream();
  const config = {
    servers: [{
      route: '/mcp',
      name: 'n8n-limited',
      version: '1',
      privateUpstreams: ['127.0.0.1'],
      tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }, http: { url: '{+env.UPSTREAM_URL}/echo', method: 'POST' } }],
      // One call, then one every 10 s: longer than two executions of the node take on a loaded
      // host (each starts a Node process), so the second is always refused.
      rateLimits: [{ name: 'n8n calls', per: ['server'], rate: { perSecond: 0.1, burst: 1 } }],
    }],
  };
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-n8n-limits-'));
  writeFileSync(join(dir, 'mcp-edge.json'), JSON.stringify(config));
  worker = await startMiniflare({ config: join(dir, 'mcp-edge.json'), upstreamUrl: upstream.url });
});
after(async () => {
  await worker?.mf.dispose();
  await upstream?.close();
});

test('n8n-nodes-mcp: a call over the rate fails the execution with the limit and its wait; after the wait the next one runs', { timeout: 180_000 }, async () => {
  const dir = n8nNode(undefined);
  const execute = () => run(process.execPath, [join(root, 'tests', 'e2e', 'n8n_node.cjs'), dir, 'http', 'executeTool', new URL('/mcp', worker.url).href]);
  const first = await execute();
  assert.equal(first.status, 0, first.stderr);
  assert.deepEqual(JSON.parse(first.stdout).output[0][0].json.result.content, [{ type: 'text', text: JSON.stringify({ message: 'n8n http' }) }]);
  const refused = await execute();
  assert.equal(refused.status, 1, `the node's execution fails: ${refused.stdout}`);
  // The node shows the refusal's JSON-RPC error: what is spent and how long to wait.
  assert.match(refused.stderr, /Failed to execute tool 'echo': .*"code":-32000,"message":"Too Many Requests: the limit \\"n8n calls\\" is spent; retry after \d+ s","data":\{"retryAfterMs":\d+,"limit":"n8n calls"/);
  // The wait the refusal named, and a little more.
  await new Promise((r) => setTimeout(r, Number(/"retryAfterMs":(\d+)/.exec(refused.stderr)[1]) + 300));
  const again = await execute();
  assert.equal(again.status, 0, again.stderr);
});
