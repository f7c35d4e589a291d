//! Serves the built test worker (build-test/, a build with test hooks) in workerd through
//! Miniflare, configured by tests/e2e/config.json, with a real upstream on 127.0.0.1.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveWorker } from '../../scripts/miniflare.mjs';
import { startTestUpstream } from './upstream.mjs';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const buildDir = join(root, 'build-test');
/** The configuration most tests run with. */
export const testConfig = join(root, 'tests', 'e2e', 'config.json');
/** A configuration with a located fault. */
export const invalidConfig = join(root, 'tests', 'e2e', 'invalid-config.json');
export const API_KEY = 'test-key-7f3a';
export const NOTIFY_TOKEN = 'notify-token-91c2';
export const CALLBACK_SIGNING_KEY = 'callback-key-5d0e-8a41c7f2e69b03d5';
/** Static credentials of the /auth/mcp test server. */
export const TOKENS = { BOT_TOKEN: 'bot-token-3c1a', ADMIN_KEY: 'admin-key-77e0', VISITOR_TOKEN: 'visitor-token-0b2d' };

export function freshPersistDir() {
  return mkdtempSync(join(tmpdir(), 'mcp-edge-do-'));
}

/** Starts Miniflare on the test build. `persist` keeps Durable Object state in a directory. */
export async function startMiniflare({ upstreamUrl = 'http://127.0.0.1:9', persist = false, dir = buildDir, config = testConfig, bindings = {}, analyticsEngineDatasets, workerLoaders } = {}) {
  if (!existsSync(join(dir, 'index.js'))) {
    throw new Error(`${dir} is missing: run \`npm test\`, which builds it first`);
  }
  const logs = [];
  const mf = serveWorker({
    dir,
    config,
    persist,
    analyticsEngineDatasets,
    ...(workerLoaders ? { workerLoaders } : {}),
    // The /rated/mcp test server's rate: 5 requests a minute per principal and per session.
    ratelimits: { TEST_RATE_LIMITER: { simple: { limit: 5, period: 60 } } },
    bindings: { UPSTREAM_URL: upstreamUrl, API_KEY, NOTIFY_TOKEN, CALLBACK_SIGNING_KEY, ...TOKENS, METADATA_URL: 'http://169.254.169.254', ENCODED_LOOPBACK_URL: `http://2130706433:${new URL(upstreamUrl).port || 9}`, ...bindings },
    handleRuntimeStdio(stdout, stderr) {
      for (const stream of [stdout, stderr]) {
        stream.setEncoding('utf8');
        let rest = '';
        stream.on('data', (chunk) => {
          const lines = (rest + chunk).split('\n');
          rest = lines.pop();
          logs.push(...lines);
        });
      }
    },
  });
  const url = await mf.ready;
  return { mf, url: new URL(url), logs };
}

/** A worker with its own upstream; `close()` ends both. */
export async function startServer(options = {}) {
  const upstream = await startTestUpstream();
  const worker = await startMiniflare({ ...options, upstreamUrl: upstream.url });
  return {
    upstream,
    ...worker,
    mcpUrl: new URL('/mcp', worker.url),
    async close() {
      await worker.mf.dispose();
      await upstream.close();
    },
  };
}

export const INIT = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } },
};

/** POSTs JSON-RPC to the server. */
export function post(url, body, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * A 2026-07-28 request to `url` without a session: `params._meta` and the headers the revision
 * requires (`Mcp-Method`, and `Mcp-Name` for a named params), from a client that declares no
 * capabilities; resolves to the reply's JSON.
 */
export function send2026(url, id, method, params) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'e2e', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  return post(url, { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } }, {
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(params.name ? { 'mcp-name': params.name } : {}),
  }).then((res) => res.json());
}

/** Initializes a session and sends `notifications/initialized`; returns the session id. */
export async function openSession(url, protocolVersion = '2025-11-25') {
  const res = await post(url, { ...INIT, params: { ...INIT.params, protocolVersion } });
  if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${await res.text()}`);
  await res.text();
  const id = res.headers.get('mcp-session-id');
  const ack = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': id });
  if (ack.status !== 202) throw new Error(`initialized: HTTP ${ack.status}`);
  return id;
}

/** Reads a streamed body line by line, as a plain streaming client would. */
export async function* lines(res) {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buffer.indexOf('\n')) >= 0) {
      yield buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
    }
  }
  if (buffer) yield buffer;
}

/** Reads a response as SSE events: {id, event, retry, data}. */
export async function* sseEvents(res) {
  let event = {};
  for await (const line of lines(res)) {
    if (line === '') {
      if (Object.keys(event).length) yield event;
      event = {};
    } else if (!line.startsWith(':')) {
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      event[field] = field === 'data' && event.data !== undefined ? `${event.data}\n${value}` : value;
    }
  }
}

/** Runs a program without blocking this process, which also serves the upstream. */
export function run(cmd, args, timeoutMs = 60_000) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { timeout: timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
