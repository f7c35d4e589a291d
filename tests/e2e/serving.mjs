//! Helpers for the tests that serve through a command a user runs (`npm start`, `mcp-edge dev`):
//! a free port, waiting until it serves, and polling its tools after an edit.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts a serving command in a process group of its own, collecting what it prints; waits
 * until `url` answers. `stop()` ends the group (wrangler and workerd with it).
 */
export async function serveWith(command, args, options, url) {
  const output = [];
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout.on('data', (d) => output.push(String(d)));
  child.stderr.on('data', (d) => output.push(String(d)));
  const stop = async () => {
    if (child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
  };
  try {
    await waitForServer(url, child, output);
  } catch (e) {
    await stop();
    throw e;
  }
  return { output, stop };
}

/** Waits until `url` answers a preflight, or `child` exits (its `output` then explains). */
export async function waitForServer(url, child, output) {
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}:\n${output.join('')}`);
    try {
      const res = await fetch(url, { method: 'OPTIONS' });
      if (res.status === 204) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`nothing served ${url}:\n${output.join('')}`);
}

/** The tool names a fresh SDK session lists. */
export async function toolNames(url) {
  const client = new Client({ name: 'poll', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close();
  }
}

/** Polls the tools every half second (four requests a poll stay under the demo's rate limit)
 *  until `done(names)` holds; the names then, or a failure with the server's output. */
export async function toolNamesWhen(url, done, deadlineMs, output = []) {
  const until = Date.now() + deadlineMs;
  let last;
  while (Date.now() < until) {
    try {
      last = await toolNames(url);
      if (done(last)) return last;
    } catch (e) {
      last = e.message;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`after ${deadlineMs} ms the tools were ${JSON.stringify(last)}:\n${output.join('')}`);
}
