// The authorization details of the 2026-07-28 line: RFC 9207's `iss` on every authorization
// response (a code, a refusal sent at once, a refusal the person follows, a denial), the metadata
// that says so, Client ID Metadata Documents advertised beside Dynamic Client Registration, and
// `application_type` in registration (SEP-837): kept, echoed, and a `web` client held to https
// redirect URIs off loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PASSWORDS, hidden, pkce, readConfig, registerClient, startOAuthWorker } from './worker.mjs';

const REDIRECT = 'http://127.0.0.1:9/callback';

let w;
before(async () => {
  const c = readConfig();
  c.oauth = { ...c.oauth, clients: [{ clientId: 'configured-public', redirectUris: [REDIRECT], name: 'Configured public app' }] };
  w = await startOAuthWorker({ config: c });
});
after(() => w?.close());

/** `GET /authorize` for `clientId`, a good request changed by `changes`. */
async function authorize(clientId, changes = {}) {
  const { challenge } = pkce();
  const params = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'st-1', resource: `${w.origin}/mcp`, ...changes };
  for (const [k, v] of Object.entries(params)) if (v === undefined) delete params[k];
  const res = await fetch(new URL(`/authorize?${new URLSearchParams(params)}`, w.origin), { redirect: 'manual' });
  const body = await res.text();
  return { res, body, cookie: res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ') };
}

function submit(page, decision) {
  const form = new URLSearchParams({ request: hidden(page.body, 'request'), csrf: hidden(page.body, 'csrf'), username: 'alice', password: PASSWORDS.ALICE_PASSWORD, decision });
  return fetch(new URL('/authorize', w.origin), { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie, origin: w.origin }, body: form });
}

/** The one `iss` of a redirect back to the client: the issuer, exactly, once. */
function assertIss(location, what) {
  const url = new URL(location);
  assert.equal(url.origin + url.pathname, REDIRECT, what);
  assert.deepEqual(url.searchParams.getAll('iss'), [w.origin], `${what}: ${location}`);
  assert.deepEqual(url.searchParams.getAll('state'), ['st-1'], what);
  return url;
}

test('metadata: iss in authorization responses, Client ID Metadata Documents beside registration', async () => {
  const doc = await (await fetch(new URL('/.well-known/oauth-authorization-server', w.origin))).json();
  assert.equal(doc.issuer, w.origin);
  assert.equal(doc.authorization_response_iss_parameter_supported, true);
  assert.equal(doc.client_id_metadata_document_supported, true);
  assert.equal(doc.registration_endpoint, `${w.origin}/register`);
});

test('every authorization response carries iss: a code, a denial, and each refusal sent back', async () => {
  const client = await registerClient(w.origin, { redirect_uris: [REDIRECT] });
  for (const id of [client.client_id, 'configured-public']) {
    const page = await authorize(id);
    assert.equal(page.res.status, 200, page.body);
    const allowed = await submit(page, 'allow');
    assert.equal(allowed.status, 302);
    assert.ok(assertIss(allowed.headers.get('location'), `${id}: the code`).searchParams.get('code'));
    const denied = await submit(await authorize(id), 'deny');
    assert.equal(assertIss(denied.headers.get('location'), `${id}: the denial`).searchParams.get('error'), 'access_denied');
  }
  const refusals = [
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ response_type: undefined }, 'invalid_request'],
    [{ code_challenge: undefined }, 'invalid_request'],
    [{ code_challenge_method: 'plain' }, 'invalid_request'],
    [{ code_challenge: 'short' }, 'invalid_request'],
    [{ resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
  ];
  for (const [changes, error] of refusals) {
    // A configured client's refusal goes back at once.
    const at = await authorize('configured-public', changes);
    assert.equal(at.res.status, 302, JSON.stringify(changes));
    assert.equal(assertIss(at.res.headers.get('location'), JSON.stringify(changes)).searchParams.get('error'), error);
    // A registered client's is a page whose link the person may follow: the same response, iss in it.
    const page = await authorize(client.client_id, changes);
    assert.equal(page.res.status, 400);
    const link = page.body.match(/href="(http:\/\/127\.0\.0\.1:9\/callback\?[^"]+)"/)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(link, `a link back in ${page.body.slice(0, 400)}`);
    assert.equal(assertIss(link, `the link for ${JSON.stringify(changes)}`).searchParams.get('error'), error);
  }
});

async function register(metadata) {
  const res = await fetch(new URL('/register', w.origin), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token_endpoint_auth_method: 'none', ...metadata }) });
  return { status: res.status, body: await res.json() };
}

test('application_type: web and native kept and echoed, defaulted from the redirect URIs', async () => {
  const native = await register({ application_type: 'native', redirect_uris: [REDIRECT, 'cursor://anysphere.cursor-mcp/oauth/callback', 'com.example.app:/oauth'] });
  assert.equal(native.status, 201, JSON.stringify(native.body));
  assert.equal(native.body.application_type, 'native');
  const web = await register({ application_type: 'web', redirect_uris: ['https://app.example/cb'] });
  assert.deepEqual([web.status, web.body.application_type], [201, 'web']);
  assert.equal((await register({ redirect_uris: ['https://claude.ai/api/mcp/auth_callback'] })).body.application_type, 'web');
  assert.equal((await register({ redirect_uris: ['http://localhost:33418/callback'] })).body.application_type, 'native');
  // A native client registered with a loopback URI signs in on any port of it.
  const page = await authorize(native.body.client_id, { redirect_uri: 'http://127.0.0.1:9/callback' });
  assert.equal(page.res.status, 200);
});

test('application_type abuse: a web client may not take a native redirect, nor an unknown type', async () => {
  for (const uri of ['cursor://anysphere.cursor-mcp/oauth/callback', 'com.example.app:/oauth', 'http://127.0.0.1:9/callback', 'http://localhost/cb', 'https://localhost/cb', 'https://127.0.0.1/cb', 'https://[::1]/cb']) {
    const r = await register({ application_type: 'web', redirect_uris: ['https://app.example/cb', uri] });
    assert.equal(r.status, 400, uri);
    assert.equal(r.body.error, 'invalid_redirect_uri', uri);
    assert.match(r.body.error_description, /native/);
  }
  for (const type of ['browser', 'WEB', 7, ['web'], { web: true }]) {
    const r = await register({ application_type: type, redirect_uris: ['https://app.example/cb'] });
    assert.deepEqual([r.status, r.body.error], [400, 'invalid_client_metadata'], JSON.stringify(type));
  }
  // Native opens nothing that registration refuses everyone.
  for (const uri of ['javascript:alert(1)', 'http://evil.example/cb', 'data:text/html,x', 'https://app.example/cb#frag']) {
    const r = await register({ application_type: 'native', redirect_uris: [uri] });
    assert.deepEqual([r.status, r.body.error], [400, 'invalid_redirect_uri'], uri);
  }
});
