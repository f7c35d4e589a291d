//! The authorization code with PKCE (RFC 7636) and a resource indicator (RFC 8707), as a
//! connector asks for it: in the user's browser with a loopback redirect listener (RFC 8252
//! §7.3), or headless for a sign-in page that is a plain form. Then the response's `state` and,
//! when the server advertises it, its `iss` (RFC 9207).
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { failed, passed, skipped } from './faults.mjs';
import { signInHeadless } from './signin.mjs';
import { clip } from './challenge.mjs';
import { canonical } from './http.mjs';

/** A loopback redirect listener on 127.0.0.1: `{ redirectUri, next(timeoutMs), close() }`. */
export async function loopback() {
  let deliver;
  const arrived = new Promise((resolve) => (deliver = resolve));
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end('<!doctype html><title>mcp-edge doctor</title><p>The doctor has the answer; you can close this tab and go back to the terminal.</p>');
    deliver(Object.fromEntries(url.searchParams));
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  return {
    redirectUri: `http://127.0.0.1:${server.address().port}/callback`,
    next: (timeoutMs) => Promise.race([arrived, new Promise((_, reject) => setTimeout(() => reject(new Error(`no redirect to the loopback listener within ${timeoutMs / 1000} s`)), timeoutMs).unref())]),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Opens `url` in the user's browser: the command in `BROWSER` when set (as `gh` and Python's
 * webbrowser read it; the URL is its last argument), else the system's opener. False when none
 * could start; the URL is printed either way.
 */
function openBrowser(url) {
  const chosen = process.env.BROWSER?.trim();
  const [cmd, args] = chosen
    ? [chosen.split(/\s+/)[0], [...chosen.split(/\s+/).slice(1), url]]
    : process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]] : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.on('error', () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}

const TITLE = 'Authorization code with PKCE S256 (browser or headless sign-in)';

/**
 * Returns `{ steps, code?, verifier? }`. `as` is `{ metadata, issuer }`, `client` `{ id }`.
 */
export async function authorize(ctx, as, client, listener, resource, scope) {
  const steps = [];
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const url = new URL(as.metadata.authorization_endpoint);
  const params = {
    response_type: 'code',
    client_id: client.id,
    redirect_uri: listener.redirectUri,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    state,
    resource,
  };
  if (scope) params.scope = scope;
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);

  let answer;
  try {
    if (ctx.user !== undefined) {
      answer = await signInHeadless(url.href, listener.redirectUri, { user: ctx.user, password: ctx.password, timeoutMs: ctx.timeoutMs });
    } else {
      const opened = openBrowser(url.href);
      ctx.say(`${opened ? 'Opened your browser at' : 'Open this URL in a browser:'} ${url.href}\nWaiting for the redirect to ${listener.redirectUri} …`);
      answer = await listener.next(ctx.browserTimeoutMs);
    }
  } catch (e) {
    // An authorization endpoint that will not redirect to an unregistered URI says so in a page.
    const refused = !e.signIn && e.status >= 400 && /redirect[_ -]?ur[il]/i.test(`${e.body ?? ''}`);
    steps.push(failed('authorization', TITLE, refused ? 'redirect-uri-refused' : 'authorization-failed', `${e.message}${e.body && !e.signIn && e.status !== 200 ? `: ${clip(e.body)}` : ''}`));
    return { steps };
  }
  if (answer.error) {
    const refused = /redirect/i.test(`${answer.error} ${answer.error_description ?? ''}`);
    steps.push(failed('authorization', TITLE, refused ? 'redirect-uri-refused' : 'authorization-failed', `the redirect carried error=${answer.error}${answer.error_description ? `: ${answer.error_description}` : ''}`));
    return { steps };
  }
  if (answer.state !== state) {
    steps.push(failed('authorization', TITLE, 'state-mismatch', `sent one state, got ${answer.state === undefined ? 'none' : 'another'}`));
    return { steps };
  }
  if (!answer.code) {
    steps.push(failed('authorization', TITLE, 'authorization-failed', 'the redirect carried no code'));
    return { steps };
  }
  steps.push(passed('authorization', TITLE, `code received${ctx.user !== undefined ? ` (signed in as ${ctx.user}, headless)` : ' (in the browser)'}, state matches`));

  const ISS = 'Authorization response iss (RFC 9207)';
  const advertised = as.metadata.authorization_response_iss_parameter_supported === true;
  if (answer.iss === undefined) {
    steps.push(advertised ? failed('iss-parameter', ISS, 'iss-parameter-mismatch', 'the metadata advertises authorization_response_iss_parameter_supported, but the response has no iss') : skipped('iss-parameter', ISS, 'not advertised, not sent'));
  } else if (answer.iss === as.issuer || (answer.iss === as.metadata.issuer && canonical(answer.iss) === canonical(as.issuer))) {
    steps.push(passed('iss-parameter', ISS, `iss "${answer.iss}"`));
  } else {
    steps.push(failed('iss-parameter', ISS, 'iss-parameter-mismatch', `iss "${answer.iss}", expected "${as.issuer}"`));
  }
  return { steps, code: answer.code, verifier };
}
