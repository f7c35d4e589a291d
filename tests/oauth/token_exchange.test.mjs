// Token exchange (RFC 8693, issue 42): a server whose callers bring an identity provider's JWT
// (`auth.jwt`) has a tool whose connection trades that JWT at a security token service,
// oidc-provider with a token-exchange grant registered through its documented extension point
// (`registerGrantType`). Two users get two different audience-bound tokens; many calls make one
// exchange per user (counted at the STS); an expired token is exchanged anew; the caller's JWT
// goes to the STS and nowhere else, and no token reaches a reply.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import * as jose from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startAuthorizationServer, lookUp, STS_CLIENT } from './protected_mcp.mjs';
import { readConfig, startOAuthWorker } from './worker.mjs';

const IDP = 'https://idp.test';
const AUDIENCE = 'https://api.test';

let keys;
let as;
let api;
let worker;

/** The API the tool calls: it keeps every request's Authorization header, and answers "ok". */
async function startApi() {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url, authorization: req.headers.authorization ?? null });
    // JWKS of the identity provider, served here too.
    if (req.url === '/jwks') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(keys.jwks));
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, seen, close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }) };
}

const jwtOf = (sub) => new jose.SignJWT({ scope: 'mcp' }).setProtectedHeader({ alg: 'RS256', kid: 'idp-1' }).setSubject(sub).setIssuer(IDP).setAudience(worker.mcpUrl.href).setIssuedAt().setExpirationTime('10m').sign(keys.privateKey);

before(async () => {
  const { publicKey, privateKey } = await jose.generateKeyPair('RS256');
  keys = { privateKey, jwks: { keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' }] } };
  as = await startAuthorizationServer({ subjectKey: publicKey, subjectIssuer: IDP });
  api = await startApi();
  worker = await startOAuthWorker({
    config: {
      // Per-user connections need the top-level sign-in (`check` says so), though this one
      // needs no connect page.
      oauth: readConfig().oauth,
      connections: [
        {
          name: 'sts',
          title: 'Security token service',
          grant: 'token_exchange',
          tokenEndpoint: `${as.issuer}/token`,
          clientId: STS_CLIENT.id,
          clientSecret: 'STS_SECRET',
          scopes: ['api:read'],
          privateHosts: ['127.0.0.1'],
          exchange: { subjectToken: 'caller', audience: AUDIENCE, requestedTokenType: 'urn:ietf:params:oauth:token-type:access_token' },
        },
      ],
      servers: [
        {
          route: '/mcp',
          name: 'exchanging',
          version: '1',
          privateUpstreams: ['127.0.0.1'],
          auth: { jwt: { jwks: { url: `${api.origin}/jwks` }, issuer: IDP } },
          tools: [{ name: 'call_api', description: 'Calls the API as the caller', inputSchema: { type: 'object', properties: {} }, http: { url: `${api.origin}/data` }, auth: { connection: 'sts' } }],
        },
      ],
    },
    bindings: { STS_SECRET: STS_CLIENT.secret },
  });
});

after(async () => {
  await worker?.close();
  await api?.close();
  await as?.close();
});

async function as_(user) {
  const jwt = await jwtOf(user);
  const client = new Client({ name: `te-${user}`, version: '1' });
  await client.connect(new StreamableHTTPClientTransport(worker.mcpUrl, { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
  return { client, jwt };
}

const calls = () => api.seen.filter((s) => s.path === '/data');

test('two users get two audience-bound tokens, one exchange each for many calls; neither JWT nor token goes anywhere else', async () => {
  const alice = await as_('alice');
  const bob = await as_('bob');
  try {
    const replies = [];
    for (let i = 0; i < 3; i++) {
      for (const { client } of [alice, bob]) {
        const result = await client.callTool({ name: 'call_api', arguments: {} });
        assert.equal(result.isError, undefined, JSON.stringify(result));
        replies.push(JSON.stringify(result));
      }
    }
    const bearers = calls().map((s) => s.authorization.replace(/^Bearer /, ''));
    assert.equal(bearers.length, 6);
    const [aliceToken, bobToken] = bearers;
    assert.notEqual(aliceToken, bobToken);
    assert.deepEqual(bearers, [aliceToken, bobToken, aliceToken, bobToken, aliceToken, bobToken], 'each user keeps their own token');
    assert.equal((await lookUp(as.provider, aliceToken)).accountId, 'alice');
    assert.equal((await lookUp(as.provider, bobToken)).accountId, 'bob');
    assert.equal((await lookUp(as.provider, aliceToken)).aud, AUDIENCE, 'bound to the audience asked for');
    assert.equal(as.exchanges.get('alice'), 1, 'one exchange for alice at the STS');
    assert.equal(as.exchanges.get('bob'), 1, 'one exchange for bob at the STS');
    // The callers' JWTs went to the STS only; the exchanged tokens reach no reply.
    for (const { jwt } of [alice, bob]) assert.ok(!api.seen.some((s) => s.authorization?.includes(jwt)), 'no passthrough');
    for (const reply of replies) for (const token of [aliceToken, bobToken]) assert.ok(!reply.includes(token));
    assert.ok(!worker.logs.join('\n').includes(aliceToken), 'no token in the logs');
  } finally {
    await alice.client.close();
    await bob.client.close();
  }
});

test('an exchanged token is used until shortly before it expires, then exchanged anew', async () => {
  // 31 s: usable for 1 s, as mcp-edge stops 30 s before expiry.
  as.settings.exchangeTtl = 31;
  const carol = await as_('carol');
  try {
    await carol.client.callTool({ name: 'call_api', arguments: {} });
    assert.equal(as.exchanges.get('carol'), 1);
    await new Promise((r) => setTimeout(r, 1500));
    as.settings.exchangeTtl = 600;
    const result = await carol.client.callTool({ name: 'call_api', arguments: {} });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    assert.equal(as.exchanges.get('carol'), 2, 'exchanged again after expiry');
    const [first, second] = calls().slice(-2).map((s) => s.authorization);
    assert.notEqual(first, second);
  } finally {
    await carol.client.close();
  }
});

test('a forged caller JWT is refused before any exchange, and the API is not called', async () => {
  const before = calls().length;
  // A JWT of another issuer's key: mcp-edge refuses it before any exchange.
  const { privateKey } = await jose.generateKeyPair('RS256');
  const forged = await new jose.SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'idp-1' }).setSubject('mallory').setIssuer(IDP).setExpirationTime('10m').sign(privateKey);
  const res = await fetch(worker.mcpUrl, { method: 'POST', headers: { authorization: `Bearer ${forged}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }) });
  assert.equal(res.status, 401);
  assert.equal(as.exchanges.get('mallory'), undefined);
  assert.equal(calls().length, before);
});
