//! Headless sign-in: plays a browser at a sign-in page that is a plain HTML form (mcp-edge's
//! `users` sign-in is one, with its consent on the same page), following redirects and any
//! further form (a separate consent page) until the provider redirects to the loopback URI.
//! Pages that need JavaScript are out of reach here: the browser mode handles those.
import { text } from './http.mjs';

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", '#x27': "'", '#x2F': '/', '#47': '/' };
const unescape = (s) => s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e) => ENTITIES[e] ?? ENTITIES[e.toLowerCase()] ?? (e[0] === '#' ? String.fromCodePoint(e[1].toLowerCase() === 'x' ? parseInt(e.slice(2), 16) : Number(e.slice(1))) : m));

function attributes(tag) {
  const out = {};
  const re = /([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
  let m;
  re.exec(tag); // the element's name
  while ((m = re.exec(tag))) out[m[1].toLowerCase()] = unescape(m[2] ?? m[3] ?? m[4] ?? '');
  return out;
}

/** The forms of a page: `{ action, method, inputs: [attrs], buttons: [{ name, value, text }] }`. */
export function forms(html) {
  const out = [];
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const form = attributes(`form ${m[1]}`);
    const inner = m[2];
    const inputs = [...inner.matchAll(/<input\b[^>]*>/gi)].map((i) => attributes(i[0].slice(1)));
    const buttons = [...inner.matchAll(/<button\b([^>]*)>([\s\S]*?)<\/button>/gi)].map((b) => ({ ...attributes(`button ${b[1]}`), text: b[2].replace(/<[^>]*>/g, '').trim() }));
    for (const i of inputs) if (/^(submit|image)$/i.test(i.type ?? '')) buttons.push({ ...i, text: i.value ?? '' });
    out.push({ action: form.action, method: (form.method ?? 'get').toLowerCase(), inputs, buttons });
  }
  return out;
}

const ALLOW = /\b(allow|approve|accept|authori[sz]e|consent|continue|yes|sign in|log ?in|submit)\b/i;
const DENY = /\b(deny|cancel|reject|decline|no)\b/i;

/** The fields a form posts, with the user's name and password filled in. */
function fill(form, user, password) {
  const fields = new URLSearchParams();
  const textual = form.inputs.filter((i) => !/^(submit|image|button|reset|file|password|checkbox|radio|hidden)$/i.test(i.type ?? 'text'));
  const userField = textual.find((i) => /user|login|email|name/i.test(`${i.name} ${i.autocomplete ?? ''} ${i.id ?? ''}`)) ?? textual[0];
  for (const i of form.inputs) {
    if (!i.name) continue;
    const type = (i.type ?? 'text').toLowerCase();
    if (type === 'submit' || type === 'image' || type === 'button' || type === 'reset') continue;
    if (type === 'password') fields.set(i.name, password ?? '');
    else if (i === userField && user !== undefined) fields.set(i.name, user);
    else if ((type === 'checkbox' || type === 'radio') && !('checked' in i)) continue;
    else fields.set(i.name, i.value ?? (type === 'checkbox' ? 'on' : ''));
  }
  const named = form.buttons.filter((b) => b.name && !/^(reset|button)$/i.test(b.type ?? 'submit'));
  const button = named.find((b) => ALLOW.test(`${b.value} ${b.text} ${b.id ?? ''}`) && !DENY.test(`${b.value} ${b.id ?? ''}`)) ?? named.find((b) => !DENY.test(`${b.value} ${b.text}`));
  if (button) fields.set(button.name, button.value ?? '');
  return fields;
}

const isRedirectUri = (url, redirectUri) => {
  const a = new URL(url);
  const b = new URL(redirectUri);
  return a.origin === b.origin && a.pathname === b.pathname;
};

/**
 * Resolves with the query the redirect URI would have received, or throws an Error whose
 * `status`/`body` say where it stopped.
 */
export async function signInHeadless(authorizationUrl, redirectUri, { user, password, timeoutMs = 15_000 }) {
  const jar = new Map(); // host → Map(name → value)
  const cookieFor = (u) => [...(jar.get(new URL(u).host) ?? new Map())].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (u, res) => {
    const host = new URL(u).host;
    const cookies = jar.get(host) ?? new Map();
    for (const c of res.headers.getSetCookie?.() ?? []) {
      const [pair] = c.split(';');
      const at = pair.indexOf('=');
      if (at > 0) cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    jar.set(host, cookies);
  };
  let next = { url: authorizationUrl, method: 'GET' };
  let submittedPassword = false;
  for (let hop = 0; hop < 20; hop++) {
    if (isRedirectUri(next.url, redirectUri)) return Object.fromEntries(new URL(next.url).searchParams);
    const headers = { accept: 'text/html,application/xhtml+xml', cookie: cookieFor(next.url) };
    if (next.body) Object.assign(headers, { 'content-type': 'application/x-www-form-urlencoded', origin: next.origin });
    const res = await fetch(next.url, { method: next.method, headers, body: next.body, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    keep(next.url, res);
    if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
      const to = new URL(res.headers.get('location'), next.url).href;
      await res.body?.cancel();
      next = { url: to, method: 'GET' };
      continue;
    }
    const body = await text(res);
    const found = forms(body);
    const form = found.find((f) => f.inputs.some((i) => (i.type ?? '').toLowerCase() === 'password')) ?? found[0];
    const hasPassword = form?.inputs.some((i) => (i.type ?? '').toLowerCase() === 'password');
    if (hasPassword && submittedPassword) {
      // The sign-in page again (many answer a wrong password with a 4xx and the form).
      const said = body.match(/class="error"[^>]*>([\s\S]*?)</i)?.[1] ?? body.match(/role="alert"[^>]*>([\s\S]*?)</i)?.[1];
      throw Object.assign(new Error(`the sign-in page came back${said ? `: "${unescape(said.trim())}"` : ''} (wrong user or password?)`), { status: res.status, body, signIn: true });
    }
    if (res.status !== 200) throw Object.assign(new Error(`${next.method} ${new URL(next.url).origin}${new URL(next.url).pathname}: HTTP ${res.status}`), { status: res.status, body });
    if (!form) {
      const title = body.match(/<title>([\s\S]*?)<\/title>/i)?.[1]?.trim();
      throw Object.assign(new Error(`a page without a form at ${next.url}${title ? ` ("${title}")` : ''}: it needs a browser (drop --user)`), { status: 200, body });
    }
    if (hasPassword && password === undefined) throw new Error('the sign-in page asks for a password: give --password-env');
    const action = new URL(form.action || next.url, next.url).href;
    // The password goes only to the origin of the page that asks for it: a page that posts it
    // elsewhere is not signed in to by the doctor, whatever a browser would do.
    if (hasPassword && new URL(action).origin !== new URL(next.url).origin) {
      throw Object.assign(new Error(`the sign-in form at ${new URL(next.url).origin} posts the password to ${new URL(action).origin}; the doctor sends it only to the page's own origin (use the browser mode)`), { status: 200, body: '', signIn: true });
    }
    submittedPassword ||= hasPassword;
    const fields = fill(form, user, password);
    if (form.method === 'post') {
      next = { url: action, method: 'POST', body: fields.toString(), origin: new URL(next.url).origin };
    } else {
      const u = new URL(action);
      for (const [k, v] of fields) u.searchParams.set(k, v);
      next = { url: u.href, method: 'GET' };
    }
  }
  throw new Error('more than 20 pages and redirects without reaching the redirect URI');
}
