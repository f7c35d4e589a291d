//! A browser without a browser, for the benches and the tests that only need a connection made:
//! a fetch that keeps cookies per origin and follows redirects, and a per-user connection made
//! through its connect link by plain form posts, as a person would in Chromium: mcp-edge's
//! console sign-in (its `users` form), the connect page's Connect button, then oidc-provider's
//! development login and consent (tests/oauth/idp.mjs). Chromium drives the same pages in
//! tests/oauth/connections.test.mjs.

/** A fetch with a cookie jar per origin that follows redirects (and a page's immediate refresh)
 *  itself; resolves to the last
 *  response's URL, status and text. A form is posted with this origin's `Origin`, as a page's is. */
export function browser() {
  const jars = new Map();
  const jarOf = (url) => {
    const origin = new URL(url).origin;
    if (!jars.has(origin)) jars.set(origin, new Map());
    return jars.get(origin);
  };
  const keep = (url, res) => {
    const jar = jarOf(url);
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      const value = pair.slice(at + 1);
      if (value && !/max-age=0\b/i.test(line)) jar.set(pair.slice(0, at), value);
      else jar.delete(pair.slice(0, at));
    }
  };
  return async function go(url, { method = 'GET', form } = {}) {
    let next = String(url);
    let init = form ? { method, body: new URLSearchParams(form), headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(next).origin } } : { method, headers: {} };
    for (let hops = 0; hops < 20; hops++) {
      const cookie = [...jarOf(next)].map(([k, v]) => `${k}=${v}`).join('; ');
      const res = await fetch(next, { ...init, redirect: 'manual', headers: { ...init.headers, ...(cookie ? { cookie } : {}) } });
      keep(next, res);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.text();
        next = new URL(location, next).href;
        init = { method: 'GET', headers: {} };
        continue;
      }
      const text = await res.text();
      // A page that moves on at once (`<meta http-equiv="refresh" content="0;url=…">`), as the
      // console's sign-in does so that its SameSite=Strict cookie goes along.
      const refresh = text.match(/<meta http-equiv="refresh" content="0;url=([^"]+)"/i)?.[1];
      if (res.status === 200 && refresh) {
        next = new URL(refresh.replace(/&amp;/g, '&'), next).href;
        init = { method: 'GET', headers: {} };
        continue;
      }
      return { url: next, status: res.status, text };
    }
    throw new Error(`too many redirects from ${url}`);
  };
}

const hidden = (text, name) => text.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1]?.replace(/&quot;/g, '"').replace(/&amp;/g, '&');
const action = (text) => text.match(/<form[^>]*action="([^"]+)"/)?.[1]?.replace(/&amp;/g, '&');

/** The connect link in a tool result's text (or anything that quotes it). */
export const connectLink = (text) => text.match(/https?:\/\/[^\s"\\]+\/connections\/[A-Za-z0-9_-]+\/connect\?state=[A-Za-z0-9_.%~-]+/)?.[0];

/**
 * Makes the connection `link` was given for: signs in to mcp-edge as `username` with `password`
 * (its `users` sign-in), presses Connect, then logs in to oidc-provider as `account` and consents.
 * Resolves to the last page; throws unless it says the account is connected.
 */
export async function connectHeadless(link, { username, password, account = username }) {
  const go = browser();
  let page = await go(link);
  if (hidden(page.text, 'request')) {
    page = await go(new URL('/authorize', page.url), { method: 'POST', form: { request: hidden(page.text, 'request'), csrf: hidden(page.text, 'csrf'), decision: 'allow', username, password } });
  }
  if (!page.text.includes('id="allow"')) throw new Error(`no connect page: HTTP ${page.status} ${page.text.slice(0, 300)}`);
  page = await go(new URL(action(page.text), page.url), { method: 'POST', form: { decision: 'allow' } });
  // oidc-provider's development interactions: its login form, then its consent form.
  for (let step = 0; step < 4 && !page.text.includes('id="connected"'); step++) {
    const form = action(page.text);
    if (!form) break;
    const fields = page.text.includes('name="login"') ? { prompt: 'login', login: account, password: 'any' } : { prompt: 'consent' };
    page = await go(new URL(form, page.url), { method: 'POST', form: fields });
  }
  if (!page.text.includes('id="connected"')) throw new Error(`the connection was not made: HTTP ${page.status} ${page.text.slice(0, 300)}`);
  return page;
}
