// The README promise: `npm start` serves the shipped default configuration with `wrangler dev`,
// and a new user's first three steps work against it. Then an edit of the configuration is
// served by the running `npm start`, with no cargo run and no restart, and so is an MCP App's
// template file. Its log is quiet: no restart that no edit asked for, no stack trace of a fetch of
// Cloudflare's `request.cf` (issue 45); a file saved under src/ runs the build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { root, lines } from './harness.mjs';
import { freePort, serveWith, toolNamesWhen } from './serving.mjs';

test('npm start: the SDK lists and calls echo, NDJSON streams lines, a made-up session gets 404, an edit is served', { timeout: 300_000 }, async () => {
  // The shipped configuration, as a copy this test may edit.
  const config = join(mkdtempSync(join(tmpdir(), 'mcp-edge-start-')), 'mcp-edge.json');
  copyFileSync(join(root, 'mcp-edge.json'), config);
  const port = await freePort();
  const upstreamPort = await freePort();
  const url = new URL(`http://127.0.0.1:${port}/mcp`);
  const env = { ...process.env, PORT: String(port), DEMO_UPSTREAM_PORT: String(upstreamPort), MCP_EDGE_CONFIG: config };
  // Its own inspector port: wrangler's default, 9229, may be another test's wrangler dev.
  const inspector = await freePort();
  const { output, stop } = await serveWith(process.execPath, [join(root, 'scripts', 'start.mjs'), '--inspector-port', String(inspector)], { cwd: root, env }, url);
  try {

    const client = new Client({ name: 'new-user', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(url);
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['echo', 'get_current_time']);
    const result = await client.callTool({ name: 'echo', arguments: { message: 'hello from npm start' } });
    assert.ok(result.content[0].text.includes('hello from npm start'));
    const time = await client.callTool({ name: 'get_current_time', arguments: {} });
    assert.equal(time.structuredContent.timezone, 'UTC');

    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/x-ndjson', 'mcp-session-id': transport.sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: '2', method: 'tools/list', params: {} }),
    });
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const got = [];
    for await (const line of lines(res)) got.push(JSON.parse(line));
    assert.equal(got.length, 1);
    assert.equal(got[0].result.tools.length, 2);

    const bogus = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-session-id': 'made-up-session' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
    });
    assert.equal(bogus.status, 404);
    assert.deepEqual(await bogus.json(), { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    await client.close();

    // A new tool, saved while `npm start` runs: served without a restart, and without cargo.
    const before = output.length;
    const edited = JSON.parse(readFileSync(config, 'utf8'));
    edited.servers[0].tools.push({ name: 'shout', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, http: { method: 'POST', url: '{+env.DEMO_UPSTREAM_URL}/echo' } });
    writeFileSync(config, JSON.stringify(edited, null, 2));
    const names = await toolNamesWhen(url, (n) => n.includes('shout'), 60_000, output);
    assert.deepEqual(names, ['echo', 'get_current_time', 'shout']);
    const after = output.slice(before).join('');
    assert.ok(!after.includes('cargo build') && !after.includes('Compiling'), `the edit ran a Rust build:\n${after}`);

    // An MCP App from a template file beside the configuration (docs/apps.md): read in by
    // `npm start` when the configuration names it, and again when the template is saved.
    const template = join(dirname(config), 'shout.html');
    writeFileSync(template, '<!doctype html><p>first</p>');
    edited.servers[0].tools.find((t) => t.name === 'shout').app = { template: 'shout.html' };
    writeFileSync(config, JSON.stringify(edited, null, 2));
    const app = `ui://${edited.servers[0].name}/shout`;
    const read = async () => {
      const host = new Client({ name: 'host', version: '1.0.0' }, { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } } });
      await host.connect(new StreamableHTTPClientTransport(url));
      try {
        return (await host.readResource({ uri: app })).contents[0]?.text;
      } catch {
        return undefined;
      } finally {
        await host.close();
      }
    };
    const until = async (want) => {
      const deadline = Date.now() + 60_000;
      let got;
      while (Date.now() < deadline && (got = await read()) !== want) await new Promise((r) => setTimeout(r, 500));
      return got;
    };
    assert.equal(await until('<!doctype html><p>first</p>'), '<!doctype html><p>first</p>');
    writeFileSync(template, '<!doctype html><p>second</p>');
    assert.equal(await until('<!doctype html><p>second</p>'), '<!doctype html><p>second</p>', 'a saved template is served without a restart');

    // A source saved under src/ (the same text: the build finds nothing changed, and runs no cargo).
    const source = join(root, 'src', 'lib.rs');
    const saved = output.length;
    const { atime, mtime } = statSync(source);
    writeFileSync(source, readFileSync(source));
    // Its time back too: cargo would rebuild the crate at its next run for a newer one.
    utimesSync(source, atime, mtime);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !/\[build\] .*index_bg\.wasm: \d+ bytes/.test(output.slice(saved).join(''))) await new Promise((r) => setTimeout(r, 250));
    assert.match(output.slice(saved).join(''), /\[start\] src\/lib\.rs changed: rebuilding the Worker[^]*\[build\] .*index_bg\.wasm: \d+ bytes/);

    const log = output.join('');
    assert.ok(!log.includes('restarting build'), `npm start restarted a build no edit asked for:\n${log}`);
    assert.ok(!log.includes('ENOTFOUND') && !log.includes('Request.cf'), `npm start printed the request.cf fetch's failure:\n${log}`);
  } finally {
    await stop();
  }
});
