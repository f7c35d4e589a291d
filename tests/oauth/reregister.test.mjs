// A deleted client, as Claude meets one: the TypeScript SDK's refresh gets `invalid_client` (401)
// from the token endpoint, forgets its registration (`invalidateCredentials('all')`), registers
// again and sends the user to sign in; after that its calls work, under a new client id.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { MemoryOAuthProvider, PASSWORDS, recordingFetch, signInByForm, startOAuthWorker } from './worker.mjs';

let w;
before(async () => {
  w = await startOAuthWorker();
});
after(() => w?.close());

test('the SDK re-registers when its client was deleted, and signs in again', async () => {
  const log = [];
  // The registration answers as the server sent them: the SDK keeps only the fields it knows.
  const registrations = [];
  const keepRegistrations = async (input, init) => {
    const res = await fetch(input, init);
    if (new URL(String(input instanceof Request ? input.url : input)).pathname === '/register') registrations.push(await res.clone().json());
    return res;
  };
  const provider = new MemoryOAuthProvider({ redirectUrl: 'http://127.0.0.1:9/callback', authorize: (url) => signInByForm(url, { username: 'alice', password: PASSWORDS.ALICE_PASSWORD }) });
  await assert.rejects(new Client({ name: 're', version: '1' }).connect(new StreamableHTTPClientTransport(w.mcpUrl, { authProvider: provider, fetch: keepRegistrations })), UnauthorizedError);
  await new StreamableHTTPClientTransport(w.mcpUrl, { authProvider: provider }).finishAuth(provider.callback.code);
  const first = registrations[0];
  assert.equal(provider.clientInformation().client_id, first.client_id);
  const client = new Client({ name: 're', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(w.mcpUrl, { authProvider: provider, fetch: recordingFetch(log) }));
  assert.deepEqual((await client.callTool({ name: 'echo', arguments: { message: 'before' } })).structuredContent, { message: 'before' });

  // The client is deleted (RFC 7592, with its registration access token), and its 2-second
  // access token runs out.
  const deleted = await fetch(first.registration_client_uri, { method: 'DELETE', headers: { authorization: `Bearer ${first.registration_access_token}` } });
  assert.equal(deleted.status, 204);
  await new Promise((r) => setTimeout(r, 2100));
  await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'after' } }), UnauthorizedError);
  // The refresh met invalid_client: the SDK forgot everything and registered anew.
  const refresh = log.find((r) => r.path === '/token' && r.grantType === 'refresh_token');
  assert.equal(refresh?.status, 401, JSON.stringify(log));
  assert.ok(provider.invalidated.includes('all'), `invalidated: ${provider.invalidated}`);
  const second = provider.clientInformation();
  assert.ok(second.client_id && second.client_id !== first.client_id);
  assert.equal(provider.authorizationUrls.at(-1).searchParams.get('client_id'), second.client_id);

  await new StreamableHTTPClientTransport(w.mcpUrl, { authProvider: provider }).finishAuth(provider.callback.code);
  const again = new Client({ name: 're', version: '1' });
  await again.connect(new StreamableHTTPClientTransport(w.mcpUrl, { authProvider: provider }));
  try {
    assert.deepEqual((await again.callTool({ name: 'echo', arguments: { message: 'after' } })).structuredContent, { message: 'after' });
  } finally {
    await again.close();
    await client.close().catch(() => {});
  }
});
