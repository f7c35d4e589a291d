//! The bench's load: MCP sessions opened the way a client opens them, and wrk (bench/load.lua)
//! calling a tool in a loop over them, against the demo's upstream. The bench's scripts share it.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../scripts/setup.mjs';
import { demoHandler } from '../examples/default/upstream.mjs';

/** The upstream every server calls: the demo's (`/echo`), or `handler`, on a free port of
 *  127.0.0.1; its URL, and what stops it. */
export async function demoUpstream(handler = demoHandler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

const INIT = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
export const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

/** Opens `n` sessions on `url` (initialize, then notifications/initialized), 64 at a time, with
 *  `headers` besides the MCP ones (a caller's `Authorization`); resolves to their ids (none for a
 *  server without sessions). */
export async function openSessions(url, n, headers = {}) {
  const ids = [];
  for (let i = 0; i < n; i += 64) {
    const batch = await Promise.all(Array.from({ length: Math.min(64, n - i) }, async () => {
      const res = await fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers }, body: INIT });
      if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${await res.text()}`);
      await res.text();
      const sid = res.headers.get('mcp-session-id');
      const ack = await fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers, ...(sid ? { 'mcp-session-id': sid } : {}) }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
      await ack.text();
      return sid;
    }));
    ids.push(...batch);
  }
  return ids.filter(Boolean);
}

/**
 * wrk against `url` for `seconds` with `connections` over `sessions` (written to a file: 5,000
 * ids are more than an environment variable holds); `body` replaces the `tools/call echo`
 * request and `check` the text its replies must hold; `headers` go on every request. Runs without blocking this process, whose
 * event loop may serve the upstream. Resolves to load.lua's summary.
 */
export function wrk(url, { sessions = [], connections, seconds, threads = 1, body, check, headers = {} }) {
  const dir = join(root, '.mcp-edge', 'load');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `sessions-${process.pid}-${url.port}-${sessions.length}.txt`);
  writeFileSync(file, sessions.join(','));
  const args = ['-t', String(Math.min(threads, connections)), '-c', String(connections), '-d', `${seconds}s`, '--latency', '-s', join(root, 'bench', 'load.lua'), url.origin];
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\n');
  const env = { ...process.env, BENCH_PATH: url.pathname, SESSIONS_FILE: file, ...(body ? { BODY: body, CHECK: check } : {}), ...(extra ? { EXTRA_HEADERS: extra } : {}) };
  const child = spawn('wrk', args, { env });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.on('close', () => {
      const line = out.split('\n').find((l) => l.startsWith('{"requests"'));
      if (line) resolve(JSON.parse(line));
      else reject(new Error(`wrk printed no summary:\n${out}\n${err}`));
    });
  });
}
