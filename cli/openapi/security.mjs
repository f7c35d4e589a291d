//! OpenAPI security schemes turned into request parts over secrets: the credentials live in the
//! Worker's secrets, named here, and never in the configuration. OAuth 2 schemes with a token
//! endpoint, and OpenID Connect ones, become connections instead: each user's own token (or the
//! deployment's, by client credentials), obtained and refreshed by mcp-edge.

/** `PETSTORE` + `api_key` → `PETSTORE_API_KEY`: a valid secret name (letters, digits, `_`). */
export function secretName(prefix, scheme) {
  const name = `${prefix ? `${prefix}_` : ''}${scheme}`.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '').toUpperCase();
  return /^[0-9]/.test(name) ? `_${name}` : name || 'API_SECRET';
}

/** A connection's name: letters, digits, `_` and `-`. */
export function connectionName(prefix, scheme) {
  return `${prefix ? `${prefix}_` : ''}${scheme}`.replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^[_-]+|[_-]+$/g, '').toLowerCase() || 'api';
}

/**
 * The connection an `oauth2` or `openIdConnect` scheme describes, without `scopes` (the import
 * adds the ones its operations require) and without `clientId` (the OAuth app's, which only the
 * user knows: the import asks for it). Undefined when no connection can serve it: an OAuth 2
 * scheme whose flows are only implicit or password has no code or client grant to run.
 */
function connectionOf(name, s, prefix, secret) {
  const base = { name: connectionName(prefix, name) };
  if (s.type === 'openIdConnect') {
    const url = String(s.openIdConnectUrl ?? '');
    const m = /^(https?:\/\/.+?)\/\.well-known\/openid-configuration$/.exec(url);
    if (!m) return undefined;
    return { ...base, grant: 'authorization_code', issuer: m[1], clientSecret: secret };
  }
  const flows = s.flows ?? {};
  const code = flows.authorizationCode;
  if (code?.authorizationUrl && code?.tokenUrl) {
    return { ...base, grant: 'authorization_code', authorizationEndpoint: code.authorizationUrl, tokenEndpoint: code.tokenUrl, clientSecret: secret };
  }
  const client = flows.clientCredentials;
  if (client?.tokenUrl) return { ...base, grant: 'client_credentials', tokenEndpoint: client.tokenUrl, clientSecret: secret };
  return undefined;
}

/**
 * Every declared scheme as `{ parts: {headers, query, cookies}, secret, how }` when mcp-edge can
 * send it, or `{ problem }`. OAuth2 with an authorization code or client credentials flow, and
 * OpenID Connect, as `{ parts: {}, connection, secret, how }`: the tool names the connection and
 * `secret` is the client secret's name. Other OAuth2 flows send a token the user obtains
 * elsewhere, as a bearer, as do all of them with `connections: false` (a token of the
 * deployment's, such as a personal access token); HTTP basic takes the base64 of
 * `user:password`, because templates do not encode.
 */
export function securitySchemes(doc, prefix, { connections = true } = {}) {
  const out = {};
  const taken = new Set();
  for (const [name, s] of Object.entries(doc.components?.securitySchemes ?? {})) {
    // Two schemes whose names differ only in punctuation (`api-key`, `api_key`) get two secrets.
    let secret = secretName(prefix, name);
    for (let i = 2; taken.has(secret); i++) secret = `${secretName(prefix, name)}_${i}`;
    taken.add(secret);
    const value = `{env.${secret}}`;
    const type = String(s?.type ?? '');
    if (s?.['x-amazon-apigateway-authtype']) {
      // AWS signs each request (SigV4); a fixed header can never carry that signature.
      out[name] = { problem: `security scheme "${name}" (AWS ${s['x-amazon-apigateway-authtype']}, a per-request signature) is not supported` };
    } else if (type === 'apiKey') {
      const where = { header: 'headers', query: 'query', cookie: 'cookies' }[s.in];
      if (!where || !s.name) out[name] = { problem: `security scheme "${name}": an API key in "${s.in}" is not supported` };
      else out[name] = { parts: { [where]: { [s.name]: value } }, secret, how: `API key, sent in the ${s.in} "${s.name}"` };
    } else if (type === 'http' && /^bearer$/i.test(s.scheme)) {
      out[name] = { parts: { headers: { Authorization: `Bearer ${value}` } }, secret, how: 'bearer token' };
    } else if (type === 'http' && /^basic$/i.test(s.scheme)) {
      out[name] = { parts: { headers: { Authorization: `Basic ${value}` } }, secret, how: 'HTTP basic: the base64 of user:password' };
    } else if ((type === 'oauth2' || type === 'openIdConnect') && connections && connectionOf(name, s, prefix, `${secret}_CLIENT_SECRET`)) {
      const connection = connectionOf(name, s, prefix, `${secret}_CLIENT_SECRET`);
      out[name] = { parts: {}, connection, secret: connection.clientSecret, how: `client secret of the OAuth app for connection "${connection.name}"` };
    } else if (type === 'oauth2' || type === 'openIdConnect') {
      out[name] = { parts: { headers: { Authorization: `Bearer ${value}` } }, secret, how: `${type === 'oauth2' ? 'OAuth 2' : 'OpenID Connect'} access token, sent as a bearer` };
    } else {
      const what = type === 'http' ? `HTTP ${s.scheme}` : type || 'an untyped scheme';
      out[name] = { problem: `security scheme "${name}" (${what}) is not supported` };
    }
  }
  return out;
}
