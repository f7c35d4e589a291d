//! Headless Chromium for the sign-in tests: Debian's /usr/bin/chromium (tests/oauth/install.mjs
//! installs it) driven by playwright-core, which never downloads a browser of its own. Helpers to
//! open a URL, fill mcp-edge's consent page (the contract's ids: #username, #password, #allow,
//! #deny), follow the redirects until the browser asks for a given redirect URI, and keep a
//! screenshot under .mcp-edge/test-output/.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { root } from '../e2e/harness.mjs';
import { CHROMIUM } from './install.mjs';

/** Where screenshots go; `npm test` prints each one's path. */
export const OUTPUT_DIR = join(root, '.mcp-edge', 'test-output');

/** How long an MCP client's first request may wait while the user signs in in the browser: the
 *  SDK's request timeout (60 s by default) must outlast the browser steps' own, so that a stuck
 *  step fails with its own message. */
export const SIGN_IN_TIMEOUT = 180_000;

/** Chromium's flags: headless as root (no sandbox), and none of its background connections,
 *  which this machine's closed network refuses, many at a time. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Starts Chromium with a fresh profile. Returns `{ context, newPage(), close() }`; `close()`
 *  ends the browser and removes the profile. Requests to hosts other than loopback are refused
 *  (the identity provider's pages import a web font). */
export async function launchBrowser() {
  const profile = mkdtempSync(join(tmpdir(), 'mcp-edge-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 900, height: 900 },
  });
  await context.route(/^https?:\/\/(?!127\.0\.0\.1[:/]|localhost[:/]|\[::1\][:/])/, (route) => route.abort('blockedbyclient'));
  return {
    context,
    /** A new tab; its `visited` array lists every URL its main frame was sent to, redirects included. */
    async newPage() {
      const page = await context.newPage();
      page.visited = [];
      page.on('request', (req) => {
        if (req.isNavigationRequest() && req.frame() === page.mainFrame()) page.visited.push(req.url());
      });
      return page;
    },
    async close() {
      // A close that hangs (seen under load, with a navigation just finished) must not hold the
      // test file open: the browser's processes, known by their own profile, are ended instead.
      if (!(await settles(context.close().catch(() => {}), 15_000))) killProfile(profile);
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Whether `promise` settles within `ms`. */
async function settles(promise, ms) {
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const done = await Promise.race([promise.then(() => true, () => true), late]);
  clearTimeout(timer);
  return done;
}

/** Ends the Chromium processes this helper started with the profile `dir` (and only those). */
function killProfile(dir) {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmdline.split('\0').includes(`--user-data-dir=${dir}`)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {}
    }
  }
}

/** Closes a tab; one whose close hangs is left to the browser's own close. */
export async function closePage(page) {
  await settles(page.close(), 10_000);
}

/** Loads `url` in `page`; returns the main document's response (status, headers). */
export async function open(page, url) {
  return page.goto(String(url), { waitUntil: 'domcontentloaded' });
}

/**
 * Runs `action` (which navigates: a click, a goto) and resolves with the URL of the first
 * navigation of the main frame that starts with `prefix`, however many redirects lie between.
 */
export async function followUntil(page, prefix, action, { timeout = 30_000 } = {}) {
  const target = page.waitForRequest((req) => req.isNavigationRequest() && req.url().startsWith(String(prefix)), { timeout });
  // A failed wait must not leave an unhandled rejection behind when `action` throws first.
  target.catch(() => {});
  await action();
  let url;
  try {
    url = new URL((await target).url());
  } catch (e) {
    throw new Error(`the browser never reached ${prefix}: it went through ${page.visited?.join(' → ') || page.url()} (${e.message})`);
  }
  // Let that page load: a tab closed mid-navigation can hang Chromium's close.
  await page.waitForURL((u) => u.href.startsWith(String(prefix)), { waitUntil: 'load', timeout: 10_000 }).catch(() => {});
  return url;
}

/**
 * Fills mcp-edge's consent page, already loaded in `page`: the username and password when the
 * page asks for them (mode c), then clicks #allow or #deny. Returns the page's texts the contract
 * names (#client-name, #redirect-host, #resource, #scopes) as they were before the click.
 */
export async function fillConsent(page, { username, password, decision = 'allow' } = {}) {
  await page.waitForSelector('form#consent', { timeout: 15_000 });
  const texts = {};
  for (const id of ['client-name', 'redirect-host', 'resource', 'scopes', 'error']) {
    const el = await page.$(`#${id}`);
    texts[id] = el ? (await el.textContent()).trim() : null;
  }
  if (username !== undefined) await page.fill('#username', username);
  if (password !== undefined) await page.fill('#password', password);
  if (decision !== null) await page.click(decision === 'deny' ? '#deny' : '#allow', { noWaitAfter: true });
  return texts;
}

/** Saves a full-page screenshot as .mcp-edge/test-output/<name>.png and prints its path. */
export async function screenshot(page, name) {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  const path = join(OUTPUT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
  return path;
}

/**
 * A loopback redirect URI for an OAuth client under test: `http://127.0.0.1:<port>/callback`.
 * Each request to it is kept (`hits`: its query as an object); `next()` resolves with the next
 * one's. The browser sees a short page saying so.
 */
export async function startCallbackServer(path = '/callback') {
  const hits = [];
  const waiters = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    const params = Object.fromEntries(url.searchParams);
    hits.push(params);
    waiters.shift()?.(params);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Signed in</title><p id="done">${params.code ? 'Authorized: you may close this window.' : `Not authorized: ${params.error ?? 'no code'}`}</p>`);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}${path}`;
  return {
    url,
    hits,
    /** The query of the next request, or of one already received and not yet taken. */
    next({ timeout = 30_000 } = {}) {
      const taken = hits.taken ?? 0;
      if (hits.length > taken) {
        hits.taken = taken + 1;
        return Promise.resolve(hits[taken]);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`nothing reached ${url} within ${timeout} ms`)), timeout);
        waiters.push((params) => {
          clearTimeout(timer);
          hits.taken = (hits.taken ?? 0) + 1;
          resolve(params);
        });
      });
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
