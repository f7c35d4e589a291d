// Code mode ("toolDiscovery": "code", /code/mcp): the official SDK client sees two tools;
// `search` answers with TypeScript declarations, and `execute` runs a program in a Dynamic Worker
// (Miniflare's Worker Loader binding) whose tool calls are the caller's own tools/calls: the test
// upstream sees them, secrets stay out of the program's reach, hidden tools stay hidden, errors
// name their line and tool, progress reaches the client, and a cancel ends the program. The
// escape attempts of issue 44 each end in a clear error while the Worker keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, buildDir, post, send2026, startMiniflare, startServer } from './harness.mjs';

let server;
let codeUrl;
before(async () => {
  server = await startServer();
  codeUrl = new URL('/code/mcp', server.url);
});
after(() => server.close());

/** An SDK client on the code-mode server, closed (and its session ended) after `body`. */
async function withClient(body) {
  const client = new Client({ name: 'e2e-code', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(codeUrl);
  await client.connect(transport);
  try {
    return await body(client);
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

/** `execute`'s result for `code`, on a fresh session. */
const execute = (code) => withClient((client) => client.callTool({ name: 'execute', arguments: { code } }));
/** Its text, asserting it is an error. */
async function failure(code) {
  const result = await execute(code);
  assert.equal(result.isError, true, JSON.stringify(result));
  return result.content[0].text;
}
/** Whether the Worker still serves another session's plain program. */
async function stillServing() {
  const result = await execute('return 1 + 1');
  assert.deepEqual(result.structuredContent, { result: 2, logs: [] });
}

test('tools/list lists exactly search and execute; execute may run as a task', async () => {
  await withClient(async (client) => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['search', 'execute']);
    assert.deepEqual(tools[1].inputSchema.required, ['code']);
    assert.deepEqual(tools[1].execution, { taskSupport: 'optional' });
    assert.deepEqual(tools.map((t) => t.annotations.readOnlyHint), [true, false]);
  });
});

test('search answers with TypeScript declarations of the tools the caller may see', async () => {
  await withClient(async (client) => {
    await client.listTools();
    const found = await client.callTool({ name: 'search', arguments: { query: 'shows what the upstream saw', limit: 1 } });
    assert.deepEqual(found.structuredContent.tools, ['inspect']);
    assert.ok(found.structuredContent.total >= 1);
    const text = found.content[0].text;
    assert.match(text, /^declare const tools: \{/);
    assert.match(text, /inspect\(args: \{/);
    assert.match(text, /Shows the path and query the upstream saw\./);
    const all = await client.callTool({ name: 'search', arguments: { limit: 20 } });
    assert.equal(all.structuredContent.tools.includes('admin_reset'), false, 'a tool only admins see is not found');
    assert.ok(all.structuredContent.tools.includes('echo'));
  });
});

test('execute: one program calls several tools and returns a value with its logs; the upstream saw each call', async () => {
  const before = server.upstream.seen.length;
  const result = await execute(`
    const a = await tools.inspect({ id: 7, q: "x y" });
    console.log("inspected", a.path);
    const b = await tools.echo({ message: "from code" });
    return { path: a.path, query: a.query, echoed: b };
  `);
  assert.equal(result.isError, undefined, JSON.stringify(result));
  assert.deepEqual(result.structuredContent, { result: { path: '/inspect/7', query: '?q=x%20y', echoed: { message: 'from code' } }, logs: ['inspected /inspect/7'] });
  assert.equal(result.content[0].text, JSON.stringify(result.structuredContent.result));
  assert.equal(result.content[1].text, 'console:\ninspected /inspect/7');
  const seen = server.upstream.seen.slice(before).map((r) => r.url);
  assert.deepEqual(seen, ['/inspect/7?q=x%20y', '/echo']);
  // The secret the echo tool sends went to the upstream, never into the program's reach.
  assert.equal(server.upstream.seen.at(-1).headers['x-api-key'], API_KEY);
  assert.ok(!JSON.stringify(result).includes(API_KEY));
});

test('errors a model can act on: a syntax error, a thrown error, a failed call, each with its line', async () => {
  assert.match(await failure('const x = 1;\nreturn (x'), /^SyntaxError: Unexpected token \(line 2, column 10\)$/);
  assert.match(await failure('const x = 1;\n\nthrow new Error("boom");'), /^boom \(line 3, column 7\)$/);
  assert.match(await failure('await tools.echo({ message: "ok" });\nawait tools.fails({});'), /^The call of fails failed: .*500.* \(line 2(, column \d+)?\)$/);
  // Arguments that do not fit the schema: the tool's own refusal, named.
  assert.match(await failure('return await tools.inspect({ id: "seven" });'), /^The call of inspect failed: invalid arguments for tool "inspect": .*\(line 1/);
  // Caught, a failed call is the program's to handle.
  const caught = await execute('try { await tools.fails({}) } catch (e) { return { tool: e.tool, message: e.message } }');
  assert.equal(caught.structuredContent.result.tool, 'fails');
});

test('hidden tools, other servers\' tools, code mode\'s own tools and forged principals are refused', async () => {
  assert.match(await failure('return await tools.admin_reset({});'), /^The call of admin_reset failed: Invalid params: unknown tool "admin_reset" \(line 1, column \d+\)$/);
  // A tool of another server (the plain /mcp server has get_current_time; this one does not).
  assert.match(await failure('return await tools.get_current_time({});'), /^The call of get_current_time failed: Invalid params: unknown tool "get_current_time"/);
  assert.match(await failure('return await tools.execute({ code: "return 1" });'), /execute is code mode's own tool, which a program cannot call/);
  assert.match(await failure('return await tools.search({});'), /search is code mode's own tool/);
  // Whatever the program passes, the call is the caller's: extra arguments and _meta change nothing.
  const forged = await execute('try { return await tools.admin_reset({ _meta: { principal: "admin" } }, { principal: { id: "admin", roles: ["admin"] } }) } catch (e) { return e.message }');
  assert.match(forged.structuredContent.result, /unknown tool "admin_reset"/);
});

test('the sandbox: no network, no code from strings, no reaching the stub behind tools', async () => {
  const result = await execute(`
    const tried = {};
    const attempt = async (name, f) => { try { tried[name] = "allowed: " + String(await f()); } catch (e) { tried[name] = String(e.message ?? e); } };
    await attempt("fetch", () => fetch("http://127.0.0.1:${new URL(server.upstream.url).port}/echo"));
    await attempt("connect", () => connect("127.0.0.1:22"));
    await attempt("websocket", () => new WebSocket("ws://127.0.0.1:1"));
    await attempt("eval", () => eval("1 + 1"));
    await attempt("Function", () => (function () {}).constructor("return 1")());
    await attempt("env", () => typeof globalThis.env + typeof globalThis.API_KEY + typeof process);
    return tried;
  `);
  const tried = result.structuredContent.result;
  for (const name of ['fetch', 'websocket']) assert.match(tried[name], /not permitted to access the internet/, name);
  assert.match(tried.connect, /connect is not defined/);
  // import() of a URL, or of the sockets module, is refused before anything runs.
  for (const target of ['https://example.com/x.js', 'cloudflare:sockets']) {
    assert.match(await failure(`const m = await import(${JSON.stringify(target)});\nreturn 1`), /a program cannot import modules \(line 1, column \d+\)/);
  }
  assert.match(tried.eval, /Code generation from strings disallowed/);
  assert.match(tried.Function, /Code generation from strings disallowed/);
  assert.equal(tried.env, 'allowed: undefinedundefinedundefined');
  // `tools` is all the program holds: no prototype, no keys, and every name a tool's (the RPC
  // stub behind it, with its own methods, stays in the runner).
  const before = server.upstream.seen.length;
  const reach = await execute(`
    const out = { proto: Object.getPrototypeOf(tools), keys: Object.keys(tools), then: typeof tools.then, calls: [] };
    for (const name of ["constructor", "call", "__proto__", "dup"]) {
      try { await tools[name]({}); out.calls.push("called"); } catch (e) { out.calls.push(e.message); }
    }
    return out;
  `);
  const got = reach.structuredContent.result;
  assert.deepEqual([got.proto, got.keys, got.then], [null, [], 'undefined']);
  for (const [i, name] of ['constructor', 'call', '__proto__', 'dup'].entries()) assert.match(got.calls[i], new RegExp(`unknown tool "${name}"`), name);
  assert.equal(server.upstream.seen.length, before, 'nothing reached the upstream');
});

test('bounded: a huge result and a flood of log lines', async () => {
  assert.match(await failure('return "x".repeat(10000)'), /the result is .* bytes, more than the limit 4096/);
  const flood = await execute('for (let i = 0; i < 1000; i++) console.log("line " + i); return "done"');
  assert.deepEqual(flood.structuredContent.logs, ['line 0', 'line 1', 'line 2', 'line 3', 'line 4', '… 995 more lines not kept']);
  await stillServing();
});

test('runaway programs end with an error the model can act on, and the Worker keeps serving', async () => {
  const steps = /the program ran more than 1000000 steps/;
  assert.match(await failure('while (true) {}'), steps);
  assert.match(await failure('for (;;) { try { throw 1 } catch {} }'), steps);
  assert.match(await failure('const f = () => f();\nreturn f();'), /Maximum call stack|steps/);
  assert.match(await failure('[1].forEach(function spin() { while (1) {} });'), steps);
  const memory = /the program allocated more than 16777216 bytes/;
  assert.match(await failure('const a = [];\nwhile (true) a.push(new Array(1e6).fill(1));'), memory);
  assert.match(await failure('return "x".repeat(1e9).length'), memory);
  assert.match(await failure('let a = [1];\nfor (;;) a = a.concat(a);'), memory);
  assert.match(await failure('let a = [1];\nfor (;;) a = [...a, ...a];'), memory);
  // A budget spent and caught is still spent: the program cannot go on calling tools.
  const before = server.upstream.seen.length;
  assert.match(await failure('try { while (true) {} } catch {}\nawait tools.echo({ message: "after" });\nreturn 1'), steps);
  assert.equal(server.upstream.seen.length, before);
  await stillServing();
});

test('more calls than maxCalls are refused', async () => {
  const result = await execute('let n = 0;\nfor (let i = 0; i < 25; i++) { try { await tools.echo({ message: "m" + i }); n++; } catch (e) { return { n, message: e.message } } }\nreturn n');
  assert.equal(result.structuredContent.result.n, 20);
  assert.match(result.structuredContent.result.message, /more than 20 tool calls/);
});

test('a promise that never settles ends, and the Worker keeps serving', async () => {
  const text = await failure('await new Promise(() => {}); return 1');
  assert.match(text, /never|hung|did not finish/i);
  await stillServing();
});

test('progress from the program\'s calls reaches the client under its token, rising', async () => {
  await withClient(async (client) => {
    const progress = [];
    const call = client.callTool({ name: 'execute', arguments: { code: 'const r = await tools.stream_hold({ key: "code-progress" }); return r' } }, undefined, { onprogress: (p) => progress.push(p) });
    await server.upstream.waitForHold('code-progress');
    server.upstream.release('code-progress', 'released');
    const result = await call;
    assert.equal(result.structuredContent.result, 'released');
    assert.ok(progress.length >= 2, JSON.stringify(progress));
    assert.equal(progress[0].message, 'started');
    assert.deepEqual(progress.map((p) => p.progress), progress.map((_, i) => i + 1));
    assert.equal(progress.at(-1).message, 'stream_hold answered; calls made: 1');
  });
});

test('a cancel ends the program: its call in flight is dropped and it makes no more', async () => {
  await withClient(async (client) => {
    const controller = new AbortController();
    const call = client.callTool({ name: 'execute', arguments: { code: 'await tools.hold({ key: "code-cancel" }); await tools.echo({ message: "after cancel" }); return 1' } }, undefined, { signal: controller.signal });
    await server.upstream.waitForHold('code-cancel');
    controller.abort();
    await assert.rejects(call);
    await new Promise((r) => setTimeout(r, 300));
    server.upstream.release('code-cancel', 'too late');
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(!server.upstream.seen.some((r) => r.url === '/echo' && JSON.stringify(r).includes('after cancel')));
    assert.equal(server.upstream.seen.filter((r) => r.url === '/echo').length, server.upstream.seen.filter((r) => r.url === '/echo').length);
  });
  await stillServing();
});

test('every transport and revision: the 2026-07-28 revision without a session, and execute as a task', async () => {
  const send = (id, method, params) => send2026(codeUrl, id, method, params);
  const called = await send(1, 'tools/call', { name: 'execute', arguments: { code: 'return (await tools.echo({ message: "stateless" })).message' } });
  assert.deepEqual([called.result.resultType, called.result.structuredContent], ['complete', { result: 'stateless', logs: [] }]);

  // 2025-11-25 Tasks: execute asked to run as a task answers with its handle, then its result.
  await withClient(async (client) => {
    const sid = client.transport?.sessionId;
    assert.ok(sid);
    const headers = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    const created = await post(codeUrl, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'execute', arguments: { code: 'return (await tools.echo({ message: "tasked" })).message' }, task: { ttl: 60000 } } }, headers).then((r) => r.json());
    const taskId = created.result.task.taskId;
    assert.ok(taskId, JSON.stringify(created));
    const result = await post(codeUrl, { jsonrpc: '2.0', id: 6, method: 'tasks/result', params: { taskId } }, headers).then((r) => r.json());
    assert.deepEqual(result.result.structuredContent, { result: 'tasked', logs: [] });
  });

  // NDJSON: the same program's reply as one line.
  await withClient(async (client) => {
    const sid = client.transport?.sessionId;
    const res = await post(codeUrl, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'execute', arguments: { code: 'return 40 + 2' } } }, { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', accept: 'application/x-ndjson' });
    const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.at(-1).result.structuredContent, { result: 42, logs: [] });
  });
});

test('a deployment without the LOADER binding refuses execute with a clear error; search still answers', async () => {
  const bare = await startMiniflare({ upstreamUrl: server.upstream.url, workerLoaders: {} });
  try {
    const client = new Client({ name: 'e2e-code', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('/code/mcp', bare.url));
    await client.connect(transport);
    const result = await client.callTool({ name: 'execute', arguments: { code: 'return 1' } });
    assert.deepEqual(result.content, [{ type: 'text', text: 'Code mode needs the Worker Loader binding LOADER, which this deployment lacks: add [[worker_loaders]] binding = "LOADER" to its wrangler configuration.' }]);
    assert.equal(result.isError, true);
    const found = await client.callTool({ name: 'search', arguments: { query: 'echo' } });
    assert.equal(found.isError, undefined);
    await client.close();
  } finally {
    await bare.mf.dispose();
  }
});

// The sandbox is a module of its own (build/codemode.js), imported at the first program. A
// deployment that lost it answers execute with what went wrong, and serves everything else.
test('a deployment without codemode.js answers execute with a clear error and keeps serving', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-no-sandbox-'));
  cpSync(buildDir, dir, { recursive: true, filter: (path) => !path.endsWith('codemode.js') });
  const bare = await startMiniflare({ upstreamUrl: server.upstream.url, dir });
  try {
    const client = new Client({ name: 'e2e-code', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL('/code/mcp', bare.url));
    await client.connect(transport);
    for (let i = 0; i < 2; i++) {
      const result = await client.callTool({ name: 'execute', arguments: { code: 'return 1' } });
      assert.equal(result.isError, true, JSON.stringify(result));
      assert.match(result.content[0].text, /^Code mode's sandbox could not be loaded: .*codemode\.js/);
    }
    const found = await client.callTool({ name: 'search', arguments: { query: 'echo' } });
    assert.equal(found.isError, undefined);
    await client.close();
  } finally {
    await bare.mf.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
