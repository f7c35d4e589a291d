//! An OAuth-protected upstream MCP server and its authorization server, for the tests of mcp-edge
//! as the MCP authorization spec's client (tests/oauth/connections_mcp*.test.mjs) and as an RFC
//! 8693 client (tests/oauth/token_exchange*.test.mjs).
//!
//! - The authorization server is panva's `oidc-provider` (8.8.1) on 127.0.0.1: client
//!   credentials, open Dynamic Client Registration, resource indicators (every token bound to
//!   the one resource it was asked for), PKCE S256, its development login and consent pages, and
//!   token exchange through its documented extension point (`registerGrantType`), which counts
//!   the exchanges per subject.
//! - The MCP server is the TypeScript SDK's own: `McpServer` over Streamable HTTP behind the SDK's
//!   `requireBearerAuth`, its protected-resource metadata served by `mcpAuthMetadataRouter`.
//!   Its verifier looks each token up in the provider's own store, so only tokens that provider
//!   issued for this server's URL pass. Its tool `whoami` says which account or client the
//!   token is for; every bearer token it was sent is in `bearers`.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import express from 'express';
import Provider from 'oidc-provider';
import * as jose from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';

export const CC_CLIENT = { id: 'edge-cc', secret: 'edge-cc-secret-7b1f09e2' };
export const STS_CLIENT = { id: 'edge-sts', secret: 'edge-sts-secret-41aa6c3d' };
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

async function listen(handler) {
  const server = createServer(handler);
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: server.address().port,
    async close() {
      server.closeAllConnections?.();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The authorization server. `subjectKey`: the key callers' JWTs are signed with (their `sub` is
 * the account), verified by the token exchange; `exchangeTtl`: the exchanged tokens' lifetime in
 * seconds (`settings.exchangeTtl` changes it). Returns `{ issuer, provider, requests,
 * exchanges, settings, registrations, close }`.
 */
export async function startAuthorizationServer({ subjectKey, subjectIssuer, exchangeTtl = 600, ccTtl = 600 } = {}) {
  let handler = null;
  const requests = [];
  const listening = await listen((req, res) => {
    requests.push({ method: req.method, path: req.url.split('?')[0] });
    if (handler) return handler(req, res);
    res.writeHead(503).end();
  });
  const issuer = `http://127.0.0.1:${listening.port}`;
  const exchanges = new Map();
  // Changed by a test to make the next exchanged tokens short-lived.
  const settings = { exchangeTtl };
  const provider = new Provider(issuer, {
    clients: [
      { client_id: CC_CLIENT.id, client_secret: CC_CLIENT.secret, grant_types: ['client_credentials'], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic' },
      { client_id: STS_CLIENT.id, client_secret: STS_CLIENT.secret, grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic' },
    ],
    scopes: ['openid', 'offline_access', 'mcp:tools', 'api:read'],
    async findAccount(_ctx, sub) {
      return { accountId: sub, claims: async () => ({ sub }) };
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({ scope: 'mcp:tools api:read', audience: resource, accessTokenFormat: 'opaque', accessTokenTTL: ccTtl }),
      },
    },
    pkce: { methods: ['S256'] },
    cookies: { keys: ['protected-mcp-cookie-key'] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, ClientCredentials: ccTtl, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 3600, IdToken: 600 },
    clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
  });
  provider.proxy = false;

  // RFC 8693 through the documented extension point: the subject token is a JWT of the callers'
  // issuer (or an access token this provider issued); the answer an opaque access token bound
  // to the audience asked for, kept in the provider's own store.
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx, next) => {
    const { subject_token: subject, subject_token_type: type, audience, scope } = ctx.oidc.params;
    let sub;
    if (type === 'urn:ietf:params:oauth:token-type:jwt' && subjectKey) {
      try {
        ({ payload: { sub } } = await jose.jwtVerify(subject, subjectKey, { issuer: subjectIssuer }));
      } catch {
        sub = undefined;
      }
    } else {
      const known = await ctx.oidc.provider.AccessToken.find(subject);
      sub = known?.accountId;
    }
    if (!sub || !audience) {
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant', error_description: 'the subject token is not valid, or no audience' };
      return next();
    }
    exchanges.set(sub, (exchanges.get(sub) ?? 0) + 1);
    const token = new ctx.oidc.provider.AccessToken({ accountId: sub, client: ctx.oidc.client, grantId: randomUUID(), gty: 'token-exchange', scope: scope || undefined });
    token.resourceServer = { audience, scope: scope || '', accessTokenFormat: 'opaque', accessTokenTTL: settings.exchangeTtl };
    const value = await token.save();
    ctx.body = { access_token: value, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: settings.exchangeTtl, scope: scope || undefined };
    return next();
  }, ['subject_token', 'subject_token_type', 'audience', 'resource', 'scope', 'requested_token_type', 'actor_token', 'actor_token_type']);

  handler = provider.callback();
  const registrations = () => requests.filter((r) => r.method === 'POST' && r.path === '/reg').length;
  return { issuer, port: listening.port, provider, requests, exchanges, settings, registrations, close: listening.close };
}

/** The account or client an access token this provider issued is for, or undefined. */
export async function lookUp(provider, token) {
  return (await provider.AccessToken.find(token)) ?? (await provider.ClientCredentials.find(token));
}

/**
 * The SDK's MCP server behind the SDK's bearer middleware, at `http://127.0.0.1:<port>/mcp`,
 * trusting `as`. `resource`: what its metadata names (default: its own URL).
 */
export async function startProtectedMcp(as, { resource } = {}) {
  const bearers = [];
  const app = express();
  let url;
  let metadata;
  app.use((req, res, next) => {
    const auth = req.headers.authorization;
    if (auth) bearers.push(auth.replace(/^Bearer /i, ''));
    next();
  });
  app.use((req, res, next) => mcpAuthMetadataRouter({ oauthMetadata: metadata, resourceServerUrl: new URL(resource ?? url), scopesSupported: ['mcp:tools'] })(req, res, next));
  const verifier = {
    async verifyAccessToken(token) {
      const found = await lookUp(as.provider, token);
      if (!found) throw Object.assign(new (await import('@modelcontextprotocol/sdk/server/auth/errors.js')).InvalidTokenError('unknown token'));
      return { token, clientId: found.clientId, scopes: (found.scope ?? '').split(' ').filter(Boolean), expiresAt: found.exp, resource: new URL(found.aud), extra: { accountId: found.accountId } };
    },
  };
  const listening = await listen(app);
  url = `http://127.0.0.1:${listening.port}/mcp`;
  metadata = await fetch(`${as.issuer}/.well-known/openid-configuration`).then((r) => r.json());
  app.post('/mcp', express.json(), requireBearerAuth({ verifier, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url)), expectedResource: new URL(url) }), async (req, res) => {
    const server = new McpServer({ name: 'protected', version: '1' });
    server.registerTool('whoami', { description: 'Who the bearer token is for' }, async (extra) => ({ content: [{ type: 'text', text: JSON.stringify({ account: extra.authInfo?.extra?.accountId ?? null, client: extra.authInfo?.clientId }) }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  return { url, port: listening.port, bearers, close: listening.close };
}
