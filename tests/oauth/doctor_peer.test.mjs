// `mcp-edge doctor` against a peer: an MCP server built on the TypeScript SDK (1.32.2) with the
// SDK's own OAuth parts: `mcpAuthRouter` (authorization server, RFC 8414 and RFC 9728 metadata,
// DCR) with the SDK examples' in-memory provider, `requireBearerAuth` in front of a Streamable
// HTTP transport. Its sign-in has no page (the demo provider approves at once), so the headless
// mode just follows its redirects. The doctor must find it healthy, say what it cannot check
// (an opaque token, no RFC 9207 iss), and name the fault when the app leaves CORS out.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import express from 'express';
import cors from 'cors';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { runDoctor } from './doctor_proxy.mjs';

const servers = [];
after(async () => {
  for (const s of servers) {
    s.closeAllConnections?.();
    await new Promise((r) => s.close(r));
  }
});

/** The peer on 127.0.0.1; `withCors: false` leaves the SDK examples' cors() middleware out. */
async function startPeer({ withCors = true } = {}) {
  const server = createServer();
  servers.push(server);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const mcpUrl = new URL('/mcp', origin);
  const provider = new DemoInMemoryAuthProvider();
  const app = express();
  // As the SDK's examples do for browser clients.
  if (withCors) app.use(cors({ origin: '*', exposedHeaders: ['Mcp-Session-Id'] }));
  app.use(express.json());
  app.use(mcpAuthRouter({ provider, issuerUrl: new URL(origin), resourceServerUrl: mcpUrl, scopesSupported: ['mcp:tools'] }));
  const auth = requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  const transports = new Map();
  const handle = async (req, res) => {
    const id = req.headers['mcp-session-id'];
    let transport = id ? transports.get(id) : undefined;
    if (!transport) {
      if (id || req.method !== 'POST') {
        res.status(id ? 404 : 400).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } });
        return;
      }
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => transports.set(sid, transport) });
      const mcp = new McpServer({ name: 'sdk-peer', version: '1.0.0' });
      mcp.registerTool('ping', { description: 'Answers pong.' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
      await mcp.connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  };
  app.post('/mcp', auth, handle);
  app.get('/mcp', auth, handle);
  app.delete('/mcp', auth, handle);
  server.on('request', app);
  return { origin, mcpUrl: mcpUrl.href };
}

const HEADLESS = ['--user', 'demo', '--password-env', 'DOCTOR_PASSWORD', '--sse-wait', '1', '--json'];
const ENV = { DOCTOR_PASSWORD: 'unused by the demo provider' };

test('a TypeScript SDK server with the SDK\'s OAuth: healthy, with what cannot be checked said so', async () => {
  const peer = await startPeer();
  const r = await runDoctor([peer.mcpUrl, ...HEADLESS], ENV);
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 0, r.stdout);
  assert.deepEqual(report.faults, []);
  const by = Object.fromEntries(report.steps.map((s) => [s.id, s]));
  for (const id of ['challenge', 'resource-metadata', 'resource', 'authorization-servers', 'authorization-server-metadata', 'issuer', 'pkce', 'registration', 'authorization', 'token', 'initialize', 'tools-list', 'call', 'cors-preflight', 'cors-expose']) {
    assert.equal(by[id].ok, true, `${id}: ${by[id].detail}`);
  }
  // The SDK's metadata does not advertise RFC 9207, and its demo tokens are opaque UUIDs.
  assert.equal(by['iss-parameter'].ok, null);
  assert.match(by['iss-parameter'].detail, /not advertised/);
  assert.equal(by['token-claims'].ok, null);
  assert.match(by['token-claims'].detail, /opaque/);
  assert.match(by.call.detail, /^ping: answered/);
  assert.match(by.initialize.detail, /server sdk-peer 1\.0\.0/);
  // It exposes Mcp-Session-Id only: a note, since its well-known metadata answers.
  assert.match(by['cors-expose'].warning, /WWW-Authenticate is not exposed/);
  // Its 401 names no scope: a note too.
  assert.match(by.challenge.warning, /no scope/);
});

test('the same server without CORS: the refused preflight is named, exit 1', async () => {
  const peer = await startPeer({ withCors: false });
  const r = await runDoctor([peer.mcpUrl, ...HEADLESS], ENV);
  const report = JSON.parse(r.stdout);
  assert.equal(r.code, 1, r.stdout);
  assert.deepEqual(report.faults, ['cors-refused']);
  const step = report.steps.find((s) => s.id === 'cors-preflight');
  assert.match(step.detail, /https:\/\/claude\.ai: .*Access-Control-Allow-Origin missing/);
  assert.match(step.words, /CORS preflight from a connector origin is refused/);
});
