//! A real OpenID provider for the sign-in tests: panva's `oidc-provider` on 127.0.0.1 over plain
//! http (8.8.1, the last line that supports Node 20: 9.x names no `engines` but warns at start
//! that it needs Node 22), with one confidential client and a few accounts whose claims carry `email`,
//! `email_verified` and `groups`. Its development interactions (`features.devInteractions`) serve
//! the login and consent pages Chromium fills in: the login form's fields are `login` and
//! `password` (any password is accepted; the login is the account id), the consent form has one
//! submit button.
//!
//! The client's redirect URI is the Worker's `{origin}/oauth/callback`, known only once the Worker
//! listens, and the Worker's configuration needs the provider's issuer first. So `startIdp()`
//! listens on a free port at once and answers 503 until `configure({ redirectUris })` creates the
//! provider for that port.
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

export const IDP_CLIENT_ID = 'mcp-edge';
export const IDP_CLIENT_SECRET = 'idp-client-secret-5e1b0c7d';

/** The accounts the provider knows: the login typed on its login page is the account id. */
export const ACCOUNTS = {
  alice: { sub: 'alice', email: 'alice@example.com', email_verified: true, name: 'Alice Example', groups: ['admins', 'staff'] },
  bob: { sub: 'bob', email: 'bob@example.com', email_verified: false, name: 'Bob Example', groups: [] },
};

/** The login page's form, as the devInteractions render it (node_modules/oidc-provider/lib/views/login.js). */
export const LOGIN_FORM = { login: 'input[name="login"]', password: 'input[name="password"]', submit: 'button[type="submit"]' };
/** The consent page's one button (lib/views/interaction.js): "Continue". */
export const CONSENT_FORM = { submit: 'form input[name="prompt"][value="consent"] ~ button[type="submit"]' };

/**
 * Starts the server on 127.0.0.1:0. Returns `{ issuer, port, configure, requests, close }`:
 * `configure({ redirectUris, tokenEndpointAuthMethod })` creates the provider (call it once the
 * redirect URIs are known); `requests` lists the method and path of each request it served.
 */
export async function startIdp() {
  let handler = null;
  const requests = [];
  const server = createServer((req, res) => {
    requests.push({ method: req.method, path: req.url.split('?')[0] });
    if (handler) return handler(req, res);
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end('the OpenID provider is not configured yet');
  });
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  let provider = null;

  return {
    issuer,
    port,
    requests,
    get provider() {
      return provider;
    },
    /** Creates the provider with the client's redirect URIs; the client authenticates at the
     *  token endpoint with `tokenEndpointAuthMethod` (`client_secret_basic` by default, the one
     *  every OAuth server must support; oidc-provider allows one method per client); `options` are
     *  more of the provider's settings (`features` and `ttl` merged into the defaults). */
    configure({ redirectUris, tokenEndpointAuthMethod = 'client_secret_basic', clientId = IDP_CLIENT_ID, clientSecret = IDP_CLIENT_SECRET, options = {} }) {
      provider = new Provider(issuer, {
        ...options,
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: redirectUris,
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: tokenEndpointAuthMethod,
          },
        ],
        scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
        claims: {
          openid: ['sub'],
          email: ['email', 'email_verified'],
          profile: ['name'],
          groups: ['groups'],
        },
        async findAccount(_ctx, sub) {
          const account = ACCOUNTS[sub];
          if (!account) return undefined;
          return { accountId: sub, claims: async () => ({ ...account }) };
        },
        features: {
          devInteractions: { enabled: true },
          userinfo: { enabled: true },
          ...options.features,
        },
        // S256 only, as OAuth 2.1 asks; required for public clients (the provider's default),
        // checked for a confidential one whenever it sends a challenge.
        pkce: { methods: ['S256'] },
        // Fixed cookie keys: the signed interaction cookies survive nothing but this process anyway.
        cookies: { keys: ['oauth-tests-cookie-key'] },
        // Fixed lifetimes (seconds), which also keeps the provider from noting each default it used.
        ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 3600, ...options.ttl },
        // Userinfo and the id_token carry the claims the scopes grant (not only `sub`), whoever reads them.
        conformIdTokenClaims: false,
      });
      // Plain http on 127.0.0.1 with no proxy in front: cookies are set without `Secure` because
      // the request is not secure (ctx.secure), and `proxy` stays off so no X-Forwarded-* header counts.
      provider.proxy = false;
      handler = provider.callback();
      return provider;
    },
    async close() {
      server.closeAllConnections?.();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
