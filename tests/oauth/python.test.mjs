// The official Python SDK's OAuth client (mcp.client.auth.OAuthClientProvider) against mcp-edge's
// authorization server, mode (c): tests/oauth/python_oauth_client.py registers, completes the
// consent page with plain HTTP as bob, lists and calls tools, waits out the access token and
// calls again (the provider refreshes first). The newest SDK the e2e tests install.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { root } from '../e2e/harness.mjs';
import { PYTHON_SDKS, pythonSdk } from '../e2e/clients.mjs';
import { PASSWORDS, initializeWith, readConfig, startOAuthWorker, tokenRequest } from './worker.mjs';

const TTL = readConfig().oauth.accessTokenTtlSeconds;
const NEWEST = [...PYTHON_SDKS].sort((a, b) => b.localeCompare(a, undefined, { numeric: true }))[0];

let worker;
before(async () => {
  worker = await startOAuthWorker();
});
after(() => worker?.close());

function runPython(python, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

test(`Python SDK ${NEWEST}: OAuthClientProvider registers, signs in as bob, calls echo, refreshes`, async () => {
  const python = pythonSdk(NEWEST);
  const r = await runPython(python, [join(root, 'tests', 'oauth', 'python_oauth_client.py'), String(worker.mcpUrl), 'bob', PASSWORDS.BOB_PASSWORD, String(TTL + 1.5)]);
  assert.equal(r.status, 0, `python exited ${r.status}:\n${r.stderr}\n${r.stdout}`);
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1));

  assert.equal(out.server, 'mcp-edge-oauth-test');
  // bob has no roles: admin_echo is not his to see.
  assert.deepEqual(out.tools, ['echo']);
  assert.deepEqual(out.first.structured, { message: 'from python over oauth' });
  assert.equal(out.first.isError, false);
  assert.ok(out.first.text.includes('from python over oauth'));
  assert.deepEqual(out.second.structured, { message: 'after the token expired' });
  assert.equal(out.second.isError, false);
  const echoes = worker.upstream.seen.filter((req) => req.url === '/echo');
  assert.equal(echoes.length, 2, 'both calls reached the upstream');

  // One sign-in, through the consent page as the contract draws it.
  assert.equal(out.consentVisits.length, 1, 'no second sign-in: the refresh token did it');
  const [visit] = out.consentVisits;
  assert.equal(visit.status, 200);
  assert.match(visit.contentType, /^text\/html/);
  assert.equal(visit.csrfCookie, true);
  assert.equal(visit.frameOptions, 'DENY');
  assert.match(visit.csp, /frame-ancestors 'none'/);
  assert.deepEqual(visit.hidden, ['csrf', 'request']);
  for (const id of ['consent', 'username', 'password', 'allow', 'deny', 'client-name', 'redirect-host']) assert.ok(visit.ids.includes(id), `#${id} on the page`);
  assert.equal(visit.query.response_type, 'code');
  assert.equal(visit.query.code_challenge_method, 'S256');
  assert.equal(visit.query.client_id, out.clientId);
  assert.equal(visit.postStatus, 302);
  assert.equal(visit.signinCookie, true);
  assert.equal(visit.location, 'http://127.0.0.1:9/callback');
  assert.equal(visit.iss, worker.origin);
  assert.ok(visit.redirectParams.includes('code') && visit.redirectParams.includes('state'));

  // The code's tokens, then the refresh's: new access and refresh tokens, in the contract's shapes.
  // A slow machine may have refreshed before the wait already (the token lives 2 seconds).
  assert.ok(out.tokensBeforeWait >= 1);
  assert.equal(out.tokens.length, out.tokensBeforeWait + 1, 'the wait cost exactly one refresh');
  for (const t of out.tokens) {
    assert.equal(t.access, 'mcpe_at.');
    assert.equal(t.refresh, 'mcpe_rt.');
    assert.match(t.tokenType, /^bearer$/i);
    assert.equal(t.expiresIn, TTL);
  }
  assert.equal(new Set(out.tokens.map((t) => t.accessToken)).size, out.tokens.length, 'each access token is new');
  assert.equal(new Set(out.tokens.map((t) => t.refreshToken)).size, out.tokens.length, 'each refresh returns a new refresh token');

  // After the script: the first access token has expired; the refresh token it came with is spent.
  const expired = await initializeWith(worker.mcpUrl, out.tokens[0].accessToken);
  assert.equal(expired.status, 401);
  await expired.body?.cancel();
  const reused = await tokenRequest(worker.origin, { grant_type: 'refresh_token', refresh_token: out.tokens[0].refreshToken, client_id: out.clientId });
  assert.equal(reused.status, 400);
  assert.equal(reused.body.error, 'invalid_grant');
});
