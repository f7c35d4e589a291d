// The doctor as a client of servers that may be hostile or odd, on real HTTP servers on
// 127.0.0.1: the headless sign-in posts the password only to the page's own origin, follows a
// sign-in page then a separate consent page with the cookie they set, and a server that answers
// with endless bodies or a pathological header is diagnosed without the doctor running out of
// memory or time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { signInHeadless } from '../../cli/doctor/signin.mjs';
import { parseChallenges } from '../../cli/doctor/http.mjs';
import { runDoctor } from '../oauth/doctor_proxy.mjs';

async function serve(handler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

const body = (req) => new Promise((resolve) => {
  let b = '';
  req.on('data', (d) => (b += d));
  req.on('end', () => resolve(b));
});

test('the password goes only to the sign-in page\'s own origin', async () => {
  const received = [];
  const elsewhere = await serve(async (req, res) => {
    received.push(await body(req));
    res.end('thanks');
  });
  const page = await serve((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<form method="post" action="${elsewhere.url}/collect"><input name="user"><input type="password" name="pw"><button>Sign in</button></form>`);
  });
  try {
    await assert.rejects(signInHeadless(`${page.url}/authorize`, 'http://127.0.0.1:9/callback', { user: 'alice', password: 'secret-pw-91' }), /posts the password to http:\/\/127\.0\.0\.1:\d+; the doctor sends it only to the page's own origin/);
    assert.deepEqual(received, []);
  } finally {
    await elsewhere.close();
    await page.close();
  }
});

test('a sign-in page, then a consent page: fields, the cookie and the Allow button, to the redirect URI', async () => {
  const posts = [];
  const redirectUri = 'http://127.0.0.1:9/callback';
  const provider = await serve(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'GET' && url.pathname === '/authorize') {
      res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'sid=s1; Path=/; HttpOnly' });
      res.end(`<html><form method='post' action='/login'><input type=hidden name=csrf value='c&amp;1'><input name=email autocomplete=username><input name=pw type=password><input type=checkbox name=remember><input type=submit value="Log in"></form></html>`);
    } else if (req.method === 'POST' && url.pathname === '/login') {
      posts.push({ path: url.pathname, cookie: req.headers.cookie, form: Object.fromEntries(new URLSearchParams(await body(req))) });
      res.writeHead(302, { location: '/consent', 'set-cookie': 'auth=a1; Path=/' });
      res.end();
    } else if (req.method === 'GET' && url.pathname === '/consent') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<form method="post" action="/consent"><input type="hidden" name="t" value="x"><button name="answer" value="no">Cancel</button><button name="answer" value="yes">Approve</button></form>');
    } else if (req.method === 'POST' && url.pathname === '/consent') {
      posts.push({ path: url.pathname, cookie: req.headers.cookie, form: Object.fromEntries(new URLSearchParams(await body(req))) });
      res.writeHead(303, { location: `${redirectUri}?code=the-code&state=st` });
      res.end();
    } else {
      res.writeHead(404).end();
    }
  });
  try {
    const answer = await signInHeadless(`${provider.url}/authorize?state=st`, redirectUri, { user: 'alice@example.com', password: 'pw-3' });
    assert.deepEqual(answer, { code: 'the-code', state: 'st' });
    assert.deepEqual(posts, [
      { path: '/login', cookie: 'sid=s1', form: { csrf: 'c&1', email: 'alice@example.com', pw: 'pw-3' } },
      { path: '/consent', cookie: 'sid=s1; auth=a1', form: { t: 'x', answer: 'yes' } },
    ]);
  } finally {
    await provider.close();
  }
});

test('a hostile server: endless metadata and a pathological header are diagnosed, bounded', async () => {
  const server = await serve((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (req.method === 'POST' && url.pathname === '/mcp') {
      req.resume();
      res.writeHead(401, { 'www-authenticate': `Bearer ${'a=",'.repeat(2000)} resource_metadata="/meta"`, 'content-type': 'application/json' });
      res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized"}}');
    } else if (url.pathname.startsWith('/meta') || url.pathname.startsWith('/.well-known/')) {
      // 64 MB of JSON that never closes.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"resource":"');
      const chunk = 'x'.repeat(1 << 16);
      let sent = 0;
      const more = () => {
        while (sent < 1024) {
          sent++;
          if (!res.write(chunk)) return res.once('drain', more);
        }
        res.end('"}');
      };
      more();
      req.on('close', () => res.destroy());
    } else {
      res.writeHead(404).end();
    }
  });
  try {
    const started = Date.now();
    const r = await runDoctor([`${server.url}/mcp`, '--json', '--origins', ''], {});
    const report = JSON.parse(r.stdout);
    assert.equal(r.code, 1);
    assert.deepEqual(report.faults, ['resource-metadata-missing']);
    assert.ok(Date.now() - started < 30_000, 'bounded in time');
  } finally {
    await server.close();
  }
  // The header parser ends on any input, in linear time.
  const started = Date.now();
  for (const h of ['Bearer', 'Bearer ,,,', 'Bearer a="unterminated', 'Bearer a=b=c, ,= ="x"', `Bearer ${'x,'.repeat(50_000)}`, 'Basic abc==, Bearer scope="a b"']) parseChallenges(h);
  assert.ok(Date.now() - started < 2_000);
  assert.deepEqual(parseChallenges('Basic abc==, Bearer scope="a b"'), [{ scheme: 'Basic', params: { token68: 'abc==' } }, { scheme: 'Bearer', params: { scope: 'a b' } }]);
});
