//! Helpers for the tests that serve through a command a user runs (`npm start`, `mcp-edge dev`):
//! a free port, waiting until it serves, and polling its tools after an edit.
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
