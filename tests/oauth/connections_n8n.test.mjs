// n8n's MCP Client node (n8n-nodes-mcp, run by its own `execute` as n8n would, with a bearer
// token from mcp-edge's sign-in in its credential) calling a tool whose connection its user has
// not made: the execution succeeds with a tool result that gives the connect link in words, which
// an n8n agent passes on. Once the person connects (headlessly: the same pages Chromium fills in
// tests/oauth/connections.test.mjs), the next execution reaches the upstream with that person's
// own token from the provider, and the node's output shows it redacted, never in clear; nor does
// any span exported to the tests' OTLP collector, with the tool's arguments and results opted in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { root, run } from '../e2e/harness.mjs';
import { n8nNode } from '../e2e/clients.mjs';
import { IDP_CLIENT_SECRET, startIdp } from './idp.mjs';
import { connectHeadless, connectLink } from './headless.mjs';
import { startCollector } from '../telemetry/collector.mjs';
import { PASSWORDS, startOAuthWorker, userToken } from './worker.mjs';

let idp;
let echo;
let collector;
let worker;
const seen = [];
before(async () => {
  idp = await startIdp();
  collector = await startCollector();
  echo = createServer((req, res) => {
    seen.push(req.headers.authorization ?? null);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }));
  });
  await new Promise((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const config = {
    admission: { requests: 100000 },
    telemetry: { otlp: { endpoint: collector.endpoint }, traces: { sampleRatio: 1 } },
    oauth: { signIn: { users: [{ username: 'alice', passwordSecret: 'ALICE_PASSWORD' }] }, registration: 'open', privateHosts: ['127.0.0.1'] },
    connections: [{ name: 'idp', title: 'Test Provider', issuer: idp.issuer, clientId: 'mcp-edge', clientSecret: 'IDP_CONNECTION_SECRET', scopes: ['openid'], privateHosts: ['127.0.0.1'] }],
    servers: [{
      route: '/mcp',
      name: 'n8n-connections',
      version: '1.0.0',
      privateUpstreams: ['127.0.0.1'],
      auth: { oauth: true },
      tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, auth: { connection: 'idp' }, trace: { arguments: true, results: true }, http: { method: 'GET', url: `http://127.0.0.1:${echo.address().port}/me` } }],
    }],
  };
  worker = await startOAuthWorker({ config, bindings: { IDP_CONNECTION_SECRET: IDP_CLIENT_SECRET } });
  idp.configure({ redirectUris: [`${worker.origin}/connections/callback`] });
});
after(async () => {
  await worker?.close();
  await new Promise((resolve) => echo?.close(resolve));
  await idp?.close();
  await collector?.close();
});


test('n8n-nodes-mcp: the link in words before the user connects, then the call as that user', { timeout: 180_000 }, async () => {
  // An access token of mcp-edge's own for alice, as n8n's credential would hold it.
  const token = await userToken(worker, 'alice', PASSWORDS.ALICE_PASSWORD);
  process.env.N8N_HEADERS = `Authorization=Bearer ${token}`;
  const dir = n8nNode(undefined);
  const execute = () => run(process.execPath, [join(root, 'tests', 'e2e', 'n8n_node.cjs'), dir, 'http', 'executeTool', worker.mcpUrl.href]);

  const first = await execute();
  assert.equal(first.status, 0, first.stderr);
  const before = JSON.parse(first.stdout).output[0][0].json.result;
  assert.equal(before.isError, true);
  const link = connectLink(before.content[0].text);
  assert.ok(link, before.content[0].text);
  assert.match(before.content[0].text, /Test Provider/);
  assert.equal(seen.length, 0, 'nothing went upstream before the connection');

  await connectHeadless(link, { username: 'alice', password: PASSWORDS.ALICE_PASSWORD });

  const second = await execute();
  assert.equal(second.status, 0, second.stderr);
  const after = JSON.parse(second.stdout).output[0][0].json.result;
  assert.notEqual(after.isError, true, JSON.stringify(after));
  // The upstream got alice's own token from the provider, not mcp-edge's token for n8n.
  assert.equal(seen.length, 1);
  assert.match(seen[0], /^Bearer /);
  assert.notEqual(seen[0], `Bearer ${token}`);
  assert.equal((await idp.provider.AccessToken.find(seen[0].slice('Bearer '.length)))?.accountId, 'alice');
  // What n8n shows has the token redacted.
  assert.ok(!second.stdout.includes(seen[0].slice('Bearer '.length)), 'the provider token is not in the node output');
  assert.match(second.stdout, /\[redacted\]/);
  // Nor in the traces: the call's spans, its result opted in, hold no byte of it.
  const result = await collector.waitForSpans((spans) => spans.map((sp) => sp.attributes['gen_ai.tool.call.result']).find((r) => typeof r === 'string' && r.includes('authorization')), { what: "the echo call's span with its result", timeoutMs: 20_000 });
  assert.match(result, /\[redacted\]/);
  // The call's upstream request is in its trace too, as any tool's is.
  assert.ok((await collector.spans()).some((sp) => sp.kind === 'CLIENT' && sp.attributes['url.full']?.includes('/me')), 'the upstream request has its client span');
  const provider = seen[0].slice('Bearer '.length);
  const bodies = await collector.bodies();
  assert.ok(bodies.length > 0);
  for (const body of bodies) assert.ok(!body.includes(provider) && !body.includes(token), 'no token in an export');
});
