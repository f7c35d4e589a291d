//! Installs what the sign-in tests need beyond npm and the e2e clients: Debian's Chromium, which
//! playwright-core drives (it never downloads a browser of its own). `npm test` calls
//! `installBrowser()` before any test starts, so no test file's time limit covers a download.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { aptInstall } from '../../scripts/debian.mjs';

/** Where Debian's `chromium` package puts the browser; tests/oauth/browser.mjs launches it. */
export const CHROMIUM = '/usr/bin/chromium';

/** Installs Debian's `chromium` when /usr/bin/chromium is missing: `apt-get update` once, then
 *  `apt-get install -y chromium`, as root or through sudo. */
export function installBrowser() {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  aptInstall(['chromium'], CHROMIUM);
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is still missing`);
  return CHROMIUM;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(installBrowser());
}
