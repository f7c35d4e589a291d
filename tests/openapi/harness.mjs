//! The OpenAPI end-to-end harness: Prism mocks a document and validates every request against
//! it, behind a recording pass-through that keeps each request's `sl-violations`; the import
//! runs as a user runs it (the `mcp-edge import-openapi` command); the worker serves the result
//! in workerd; the official SDK client calls every tool with arguments generated from its
//! inputSchema.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root } from '../../scripts/setup.mjs';
import { serveWorker } from '../../scripts/miniflare.mjs';
import { freePort } from '../e2e/serving.mjs';
import { faker, prismBin } from './fixtures.mjs';

const cli = join(root, 'cli', 'mcp-edge.mjs');

/** Runs `mcp-edge import-openapi` with `args`; returns what it printed and the written file. */
export function importCommand(document, args) {
  const folder = mkdtempSync(join(tmpdir(), 'mcp-edge-openapi-'));
  const config = join(folder, 'mcp-edge.json');
  const r = spawnSync(process.execPath, [cli, 'import-openapi', document, '--config', config, ...args], { cwd: folder, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`import-openapi ${document} failed (${r.status}):\n${r.stderr}${r.stdout}`);
  return { output: r.stdout, config, parsed: JSON.parse(readFileSync(config, 'utf8')) };
}

/**
 * Starts Prism's mock of `document`, and a pass-through in front of it that records every
 * request with Prism's verdict. Resolves to `{ url, requests, revive, stop }`. A Prism that
 * cannot load the document within `startMs` throws an error marked `prismUnavailable`.
 */
export async function startPrism(document, { startMs = 120_000 } = {}) {
  let prismPort;
  let child;
  let output;
  // A start can fail for want of a port (another process took the free one first): try again.
  const launch = async (attempts = 3) => {
    prismPort = await freePort();
    output = [];
    child = spawn(process.execPath, [prismBin, 'mock', '-h', '127.0.0.1', '-p', String(prismPort), document], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => output.push(String(d)));
    child.stderr.on('data', (d) => output.push(String(d)));
    const until = Date.now() + startMs;
    while (!output.join('').includes('Prism is listening')) {
      if (child.exitCode !== null && attempts > 1) return launch(attempts - 1);
      if (child.exitCode !== null || Date.now() > until) {
        child.kill('SIGKILL');
        const e = new Error(`Prism did not start on ${document} (${child.exitCode === null ? `not within ${startMs} ms` : `exit ${child.exitCode}`}):\n${output.join('')}`);
        e.prismUnavailable = true;
        throw e;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await launch();
  const requests = [];
  const proxy = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const upstream = httpRequest({ host: '127.0.0.1', port: prismPort, method: req.method, path: req.url, headers: req.headers }, (reply) => {
        const parts = [];
        reply.on('data', (c) => parts.push(c));
        reply.on('end', () => {
          const answer = Buffer.concat(parts);
          const violations = [...parseViolations(reply.headers['sl-violations']), ...problemViolations(reply, answer)];
          requests.push({ method: req.method, url: req.url, headers: req.headers, body: body.toString(), status: reply.statusCode, violations });
          res.writeHead(reply.statusCode, reply.headers).end(answer);
        });
      });
      upstream.on('error', (e) => {
        // Prism itself failed (it can crash making up a reply): no verdict on the request.
        requests.push({ method: req.method, url: req.url, headers: req.headers, status: 502, prismFailed: e.message, violations: [] });
        res.writeHead(502).end();
      });
      upstream.end(body);
    });
  });
  const port = await new Promise((r) => proxy.listen(0, '127.0.0.1', () => r(proxy.address().port)));
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** Starts Prism again if it died; resolves to whether it had. */
    revive: async () => {
      if (child.exitCode === null && child.signalCode === null) return false;
      await launch();
      return true;
    },
    stop: async () => {
      proxy.close();
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    },
  };
}

/**
 * Prism's `sl-violations` header: JSON, or "Too many violations! [..." cut short. A cut list
 * still names each violation's location and severity, which is what the tests read.
 */
function parseViolations(header) {
  if (!header) return [];
  try {
    return JSON.parse(header);
  } catch {
    const found = [...header.matchAll(/\{"location":(\[[^\]]*\]),"severity":"(\w+)"/g)].map((m) => ({ location: JSON.parse(m[1]), severity: m[2], message: 'one of too many' }));
    return found.length ? found : [{ severity: 'Error', location: ['request'], message: header }];
  }
}

/**
 * A document that declares no 4xx reply gets Prism's own 422 problem+json for an invalid request,
 * with the violations in its body (`validation`) rather than the header.
 */
function problemViolations(reply, answer) {
  if (reply.statusCode !== 422 || !/problem\+json/.test(reply.headers['content-type'] ?? '')) return [];
  try {
    const problem = JSON.parse(answer.toString());
    const listed = Array.isArray(problem.validation) ? problem.validation : [];
    return listed.length ? listed : [{ severity: 'Error', location: ['request'], message: problem.detail ?? problem.title ?? 'invalid request' }];
  } catch {
    return [{ severity: 'Error', location: ['request'], message: answer.toString().slice(0, 200) }];
  }
}

/** Every `{env.NAME}` the configuration uses, each given a value, as the worker's secrets. */
export function secretsOf(parsed) {
  const names = new Set([...JSON.stringify(parsed).matchAll(/\{\+?env\.([A-Za-z0-9_]+)\}/g)].map((m) => m[1]));
  return Object.fromEntries([...names].map((n) => [n, `test-${n.toLowerCase()}`]));
}

/**
 * fetch, sent once more when the connection it reused turns out closed (undici's "other side
 * closed", before any reply): seen after the client spent a while parsing a megabyte page of
 * GitHub's tools, when workerd had closed the idle kept-alive connection meanwhile.
 */
export async function onceMore(url, init) {
  try {
    return await fetch(url, init);
  } catch (e) {
    if (e?.cause?.code !== 'UND_ERR_SOCKET') throw e;
    return fetch(url, init);
  }
}

/** Serves `config` with the release build; resolves to `{ mcp, client, stop }` for `route`. */
export async function serve(config, parsed, route = parsed.servers[0].route ?? '/mcp') {
  const mf = serveWorker({ dir: join(root, 'build'), config, bindings: secretsOf(parsed) });
  const base = await mf.ready;
  const mcp = new URL(route, base);
  const client = new Client({ name: 'openapi-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcp, { fetch: onceMore }));
  return {
    mcp,
    client,
    stop: async () => {
      await client.close();
      await mf.dispose();
    },
  };
}

/** Every tool, following `nextCursor`. */
export async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/**
 * Arguments for `schema`, repeatably: seeded by `seed`, optional properties too unless
 * `requiredOnly`. json-schema-faker does the generating.
 */
export async function argumentsFor(schema, seed, requiredOnly) {
  const { JSONSchemaFaker } = await import(pathToFileURL(join(faker, 'dist', 'main.mjs')).href);
  let state = hash(seed);
  JSONSchemaFaker.option({
    alwaysFakeOptionals: !requiredOnly,
    requiredOnly,
    fixedProbabilities: true,
    useDefaultValue: false,
    useExamplesValue: false,
    failOnInvalidFormat: false,
    maxItems: 2,
    noAdditional: true,
    random: () => {
      // mulberry32: a small seeded generator, so a failure repeats.
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  });
  return JSONSchemaFaker.generate(structuredClone(schema));
}

function hash(text) {
  let h = 2166136261;
  for (const c of String(text)) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return h >>> 0;
}

/**
 * Calls every tool twice (required arguments only, then every argument) and pairs each call
 * with what Prism saw. Returns `[{ tool, args, result, requests }]`.
 */
export async function callEach(client, tools, prism) {
  const calls = [];
  for (const tool of tools) {
    for (const requiredOnly of [true, false]) {
      let args;
      try {
        args = await argumentsFor(tool.inputSchema, `${tool.name}:${requiredOnly}`, requiredOnly);
      } catch (e) {
        calls.push({ tool: tool.name, generatorFailed: e.message, requests: [] });
        continue;
      }
      const before = prism.requests.length;
      let result;
      try {
        result = await client.callTool({ name: tool.name, arguments: args });
      } catch (e) {
        // The SDK client checks structuredContent against the outputSchema itself.
        result = { clientError: e.message };
      }
      calls.push({ tool: tool.name, args, result, requests: prism.requests.slice(before) });
      if (await prism.revive()) calls.at(-1).prismFailed = true;
    }
  }
  return calls;
}

/**
 * What Prism found wrong with a request. Warnings (a deprecated parameter used) are not faults;
 * errors about the reply are Prism's own made-up example, not the request.
 */
const requestErrors = (r) => r.violations.filter((v) => v.severity !== 'Warning' && v.location?.[0] !== 'response');

/**
 * Sorts calls by outcome: `accepted` (one request, valid for Prism), `invalid` (Prism found the
 * request invalid), `refused` (the tool's own validation refused the generated arguments, which
 * the document itself forbids), `generator` (no arguments could be generated), `prism` (Prism
 * failed or hung making up its reply), `reply` (the SDK client found Prism's made-up reply off
 * the outputSchema), `other`.
 */
export function classify(calls) {
  const kinds = { accepted: [], invalid: [], refused: [], generator: [], prism: [], reply: [], other: [] };
  for (const c of calls) {
    const text = c.result?.content?.[0]?.text ?? '';
    let kind;
    if (c.generatorFailed) kind = 'generator';
    else if (c.prismFailed || c.requests.some((r) => r.prismFailed)) kind = 'prism';
    else if (c.requests.length === 1) kind = requestErrors(c.requests[0]).length ? 'invalid' : c.result.clientError ? 'reply' : 'accepted';
    else if (c.requests.length === 0 && c.result.isError && text.startsWith(`invalid arguments for tool "${c.tool}"`)) kind = 'refused';
    else if (c.requests.length === 0 && /did not answer within/.test(text)) kind = 'prism';
    else kind = 'other';
    kinds[kind].push(c);
  }
  return kinds;
}

/** The calls that went wrong: no request reached Prism, or Prism found the request invalid. */
export function faults(calls) {
  return calls
    .map((c) => {
      if (c.requests.length !== 1) return { tool: c.tool, args: c.args, problem: `${c.requests.length} requests reached Prism`, result: c.result };
      const [r] = c.requests;
      const invalid = requestErrors(r);
      if (invalid.length) return { tool: c.tool, args: c.args, problem: 'invalid request', request: `${r.method} ${r.url} ${r.body}`, violations: invalid };
      return null;
    })
    .filter(Boolean);
}
