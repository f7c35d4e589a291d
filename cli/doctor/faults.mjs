//! The faults the doctor can name: for each, the words, the spec section it breaks and the fix.
//! One table, so the report, `--json` and docs/doctor.md say the same thing.

const MCP_AUTH = 'MCP authorization (2025-11-25)';
const MCP_HTTP = 'MCP Streamable HTTP transport (2025-11-25)';

/** id → { words, spec, fix } */
export const FAULTS = {
  unreachable: {
    words: 'the server cannot be reached',
    spec: `${MCP_HTTP}`,
    fix: 'Check the URL, DNS and TLS; the connectors reach the server from the internet, not from your network.',
  },
  'wrong-path': {
    words: 'wrong path: no MCP endpoint at this URL',
    spec: `${MCP_HTTP}, "Streamable HTTP": one MCP endpoint path answering POST`,
    fix: 'Use the URL of the MCP endpoint itself (with mcp-edge, the server\'s `route`, /mcp by default), exactly as the server serves it.',
  },
  redirected: {
    words: 'the MCP endpoint answers a redirect, which connectors do not follow for POST',
    spec: `${MCP_HTTP}; RFC 9110 §15.4`,
    fix: 'Give the connector the URL the redirect points to (often https, or with or without a trailing slash).',
  },
  'blocked-in-front': {
    words: 'something in front of the server (a WAF, proxy, or access gateway) answered instead of the MCP server',
    spec: `${MCP_AUTH}, "Protected Resource Metadata Discovery Requirements" (the 401 must come from the MCP server)`,
    fix: 'Let POST, GET, DELETE and OPTIONS on the MCP path through to the server unauthenticated (Cloudflare Access, bot protection and WAF rules often block them), and pass its 401 and headers as they are.',
  },
  'missing-www-authenticate': {
    words: 'a 401 without a WWW-Authenticate header',
    spec: `${MCP_AUTH}, "Protected Resource Metadata Discovery" / RFC 9728 §5.1; RFC 9110 §11.6.1 (a 401 MUST carry WWW-Authenticate)`,
    fix: 'Answer 401 with `WWW-Authenticate: Bearer resource_metadata="<URL of the protected-resource metadata>", scope="…"`; if a proxy strips it, let the header through.',
  },
  'not-bearer': {
    words: 'the 401\'s WWW-Authenticate does not offer the Bearer scheme',
    spec: `${MCP_AUTH}, "Access Token Usage"; RFC 6750 §3`,
    fix: 'Challenge with `WWW-Authenticate: Bearer …`: MCP clients send OAuth access tokens as Bearer tokens.',
  },
  'server-error': {
    words: 'the server failed (HTTP 5xx)',
    spec: `${MCP_HTTP}`,
    fix: 'Read the server\'s logs for this request.',
  },
  'unexpected-status': {
    words: 'an answer no MCP client expects',
    spec: `${MCP_HTTP}, "Sending Messages to the Server"`,
    fix: 'A POST of `initialize` without a token must get 401 with WWW-Authenticate (or 200 when the server needs no sign-in).',
  },
  'resource-metadata-missing': {
    words: 'no protected-resource metadata: neither the header\'s resource_metadata URL nor the well-known URLs answer it',
    spec: `${MCP_AUTH}, "Protected Resource Metadata Discovery Requirements"; RFC 9728 §3`,
    fix: 'Serve RFC 9728 metadata at /.well-known/oauth-protected-resource<path of the MCP endpoint> and name it in the 401\'s resource_metadata.',
  },
  'resource-mismatch': {
    words: 'aud/resource mismatch: the protected-resource metadata\'s `resource` is not this server\'s URL',
    spec: 'RFC 9728 §3.3 (the client MUST NOT use metadata whose resource differs); RFC 8707 §2; MCP authorization, "Canonical Server URI"',
    fix: 'Set `resource` to the exact public URL of the MCP endpoint (scheme, host, port and path, no trailing slash), the same URL connectors are given. Behind a proxy, make the server see its public host.',
  },
  'no-authorization-servers': {
    words: 'the protected-resource metadata names no authorization server',
    spec: `${MCP_AUTH}, "Authorization Server Location"; RFC 9728 §2`,
    fix: 'List the issuer in `authorization_servers`.',
  },
  'as-metadata-missing': {
    words: 'no authorization-server metadata at the RFC 8414 or OpenID Connect discovery URLs',
    spec: `${MCP_AUTH}, "Authorization Server Metadata Discovery"; RFC 8414 §3`,
    fix: 'Serve /.well-known/oauth-authorization-server (with the issuer\'s path inserted after it) or /.well-known/openid-configuration.',
  },
  'issuer-mismatch': {
    words: 'iss mismatch: the authorization-server metadata\'s `issuer` is not the identifier it was fetched for',
    spec: 'RFC 8414 §3.3 (the issuer MUST be identical; clients MUST NOT use the metadata otherwise)',
    fix: 'Make `issuer` the exact URL listed in `authorization_servers` (the public origin, and path if any, without a trailing slash unless both have it). Behind a proxy, make the authorization server see its public host.',
  },
  'no-pkce': {
    words: 'the authorization server does not advertise PKCE with S256',
    spec: `${MCP_AUTH}, "Authorization Code Protection" (clients MUST refuse an authorization server without S256); RFC 7636`,
    fix: 'Support PKCE and list `code_challenge_methods_supported: ["S256"]` in the metadata.',
  },
  'no-registration': {
    words: 'no way for a connector to get a client id: neither a Client ID Metadata Document nor Dynamic Client Registration',
    spec: `${MCP_AUTH}, "Client Registration Approaches"`,
    fix: 'Advertise `client_id_metadata_document_supported: true` (Claude and ChatGPT use it) or a `registration_endpoint` (RFC 7591).',
  },
  'redirect-uri-refused': {
    words: 'the redirect URI was refused',
    spec: 'RFC 7591 §3.2.2 (invalid_redirect_uri); RFC 8252 §7.3 (loopback redirects); MCP authorization, "Open Redirection"',
    fix: 'Allow the connectors\' redirect URIs: https://claude.ai/api/mcp/auth_callback, https://claude.com/api/mcp/auth_callback, https://chatgpt.com/connector_platform_oauth_redirect, and loopback http://127.0.0.1:<any port>/… for local clients.',
  },
  'registration-failed': {
    words: 'Dynamic Client Registration failed',
    spec: 'RFC 7591 §3',
    fix: 'Accept a public client (`token_endpoint_auth_method: "none"`) with the authorization_code and refresh_token grants.',
  },
  'authorization-failed': {
    words: 'the authorization step did not return a code',
    spec: `${MCP_AUTH}, "Authorization Flow Steps"; RFC 6749 §4.1.2`,
    fix: 'Read the error above; a sign-in page that is not a plain HTML form needs the browser mode (drop --user).',
  },
  'state-mismatch': {
    words: 'the authorization response\'s `state` is not the one sent',
    spec: 'RFC 6749 §10.12',
    fix: 'Return `state` unchanged on the redirect.',
  },
  'iss-parameter-mismatch': {
    words: 'iss mismatch: the authorization response\'s `iss` is not the authorization server\'s issuer',
    spec: 'RFC 9207 §2.4 (the client MUST reject the response)',
    fix: 'Send `iss` equal to the metadata\'s `issuer`, or stop advertising `authorization_response_iss_parameter_supported`.',
  },
  'token-failed': {
    words: 'the token endpoint refused the code',
    spec: 'RFC 6749 §5.2; RFC 8707 §2 (resource); RFC 7636 §4.5 (code_verifier)',
    fix: 'Read the error above: a refused `resource` means the server does not accept its own URL as a resource indicator.',
  },
  'aud-mismatch': {
    words: 'aud/resource mismatch: the access token\'s `aud` does not contain this server\'s URL',
    spec: `${MCP_AUTH}, "Token Audience Binding and Validation"; RFC 8707 §2; RFC 9068 §3`,
    fix: 'Issue tokens for the `resource` the client asked for (RFC 8707), and have the server accept exactly that audience.',
  },
  'token-issuer-mismatch': {
    words: 'iss mismatch: the access token\'s `iss` is not the authorization server\'s issuer',
    spec: 'RFC 9068 §4; RFC 8414 §3.3',
    fix: 'The token\'s `iss` must equal the metadata\'s `issuer` (and the server must expect that issuer).',
  },
  'token-rejected': {
    words: 'OAuth succeeded, but the server refuses the token it issued (the connector\'s "authorization failed" after sign-in)',
    spec: `${MCP_AUTH}, "Token Audience Binding and Validation"; RFC 6750 §3.1`,
    fix: 'Usually an audience or issuer the server does not expect (see the token\'s claims above), a proxy dropping the Authorization header, or a clock skew.',
  },
  'initialize-failed': {
    words: 'initialize failed',
    spec: 'MCP lifecycle (2025-11-25), "Initialization"',
    fix: 'Read the error above.',
  },
  'tools-list-failed': {
    words: 'tools/list failed',
    spec: 'MCP tools (2025-11-25), "Listing Tools"',
    fix: 'Read the error above; check the session id and MCP-Protocol-Version handling.',
  },
  'call-failed': {
    words: 'the tool call failed at the protocol level',
    spec: 'MCP tools (2025-11-25), "Calling Tools"',
    fix: 'Read the error above.',
  },
  'cors-refused': {
    words: 'the CORS preflight from a connector origin is refused',
    spec: 'Fetch standard, "CORS protocol" (§3.2); MCP Streamable HTTP, "Security Warning" (Origin)',
    fix: 'Answer OPTIONS with Access-Control-Allow-Origin for the origin, Allow-Methods POST, GET, DELETE and Allow-Headers authorization, content-type, mcp-protocol-version, mcp-session-id (a `*` does not cover authorization). With mcp-edge: the server\'s `allowedOrigins`.',
  },
  'cors-expose': {
    words: 'the response does not expose Mcp-Session-Id to browser clients',
    spec: 'Fetch standard, Access-Control-Expose-Headers; MCP Streamable HTTP, "Session Management"',
    fix: 'Send `Access-Control-Expose-Headers: Mcp-Session-Id, WWW-Authenticate` (and Mcp-Protocol-Version) on MCP responses.',
  },
  'sse-buffered': {
    words: 'SSE buffered: the events of a stream arrive only when it ends',
    spec: `${MCP_HTTP}, "Sending Messages to the Server" (SSE stream) and "Resumability and Redelivery"`,
    fix: 'Turn off response buffering for text/event-stream on every proxy in front (nginx: `proxy_buffering off` or `X-Accel-Buffering: no`; no compression of text/event-stream).',
  },
};

/** A failed step: `{ id, title, ok: false, fault, spec, detail, fix, words }`. */
export function failed(id, title, fault, detail) {
  const f = FAULTS[fault];
  if (!f) throw new Error(`unknown fault ${fault}`);
  return { id, title, ok: false, fault, words: f.words, spec: f.spec, detail, fix: f.fix };
}

/** A passed step; `warning` is a note that is not a fault. */
export function passed(id, title, detail, extra = {}) {
  return { id, title, ok: true, fault: null, spec: null, detail, ...extra };
}

/** A step not run (why in `detail`). */
export function skipped(id, title, detail) {
  return { id, title, ok: null, fault: null, spec: null, detail };
}
