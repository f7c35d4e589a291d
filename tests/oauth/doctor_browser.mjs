#!/usr/bin/env node
//! A `BROWSER` for the doctor's browser mode: real Chromium (playwright-core) opens the
//! authorization URL it is given, signs in on mcp-edge's consent page as a person would (the user
//! and password from DOCTOR_BROWSER_USER and DOCTOR_PASSWORD), allows, and stays until the
//! browser has reached the doctor's loopback listener.
import { closePage, fillConsent, launchBrowser, open } from './browser.mjs';

const url = process.argv.at(-1);
const browser = await launchBrowser();
const stop = setTimeout(async () => {
  await browser.close();
  process.exit(1);
}, 60_000);
try {
  const page = await browser.newPage();
  await open(page, url);
  await fillConsent(page, { username: process.env.DOCTOR_BROWSER_USER, password: process.env.DOCTOR_PASSWORD });
  await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/, { timeout: 30_000 });
  await page.waitForSelector('text=you can close this tab', { timeout: 10_000 });
  await closePage(page);
} finally {
  clearTimeout(stop);
  await browser.close();
}
