//! How a connector gets a client id: a Client ID Metadata Document (what Claude and ChatGPT
//! use), else Dynamic Client Registration (RFC 7591). The doctor cannot serve a CIMD at an https
//! URL of its own, so it registers by DCR (a public client with a loopback redirect URI, as a
//! desktop client would) and reports a refused redirect URI.
import { failed, passed } from './faults.mjs';
import { json, send, text } from './http.mjs';
import { clip } from './challenge.mjs';

const TITLE = 'Client registration (CIMD or DCR)';

/** Returns `{ step, client? }`: `client` is `{ id, secret?, authMethod }`. */
export async function register(ctx, metadata, redirectUri) {
  const cimd = metadata.client_id_metadata_document_supported === true;
  const endpoint = metadata.registration_endpoint;
  if (ctx.clientId) {
    return { step: passed('registration', TITLE, `client id given (${ctx.clientId})${cimd ? '; the server also takes CIMD' : ''}`), client: { id: ctx.clientId, authMethod: 'none' } };
  }
  if (!endpoint) {
    if (cimd) return { step: passed('registration', TITLE, 'CIMD supported (Claude and ChatGPT use it); no registration endpoint, and the doctor has no https URL for a document of its own: pass --client-id of a client registered for the redirect URI below, or --token, to go on') };
    return { step: failed('registration', TITLE, 'no-registration', 'neither client_id_metadata_document_supported nor registration_endpoint in the metadata') };
  }
  const request = {
    client_name: 'mcp-edge doctor',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  if (ctx.scope) request.scope = ctx.scope;
  const { res, error } = await send(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(request) }, ctx.timeoutMs);
  if (error) return { step: failed('registration', TITLE, 'registration-failed', `POST ${endpoint}: ${error}`) };
  const body = await text(res);
  const answer = json(body) ?? {};
  if ((res.status === 201 || res.status === 200) && typeof answer.client_id === 'string') {
    const client = { id: answer.client_id, secret: answer.client_secret, authMethod: answer.token_endpoint_auth_method ?? (answer.client_secret ? 'client_secret_basic' : 'none') };
    return { step: passed('registration', TITLE, `${cimd ? 'CIMD supported; ' : ''}registered by DCR: client ${answer.client_id}, redirect URI ${redirectUri}`), client };
  }
  const refused = answer.error === 'invalid_redirect_uri' || /redirect/i.test(`${answer.error_description ?? ''}`);
  const said = answer.error ? `${answer.error}${answer.error_description ? `: ${answer.error_description}` : ''}` : clip(body);
  return { step: failed('registration', TITLE, refused ? 'redirect-uri-refused' : 'registration-failed', `POST ${endpoint} with redirect URI ${redirectUri}: HTTP ${res.status}, ${said}`) };
}
