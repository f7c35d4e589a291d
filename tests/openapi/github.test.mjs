// GitHub's REST description (npm @octokit/openapi, about 1,200 operations) end to end: the whole
// document imported, served, listed by following cursors, a fixed sample of its tools called
// through the official SDK client with Prism validating every request; and the same tools as a
// catalog, whose call_tool makes the same requests; and in code mode, where one execute does a
// ten-step task (bench/codemode.mjs's) with every request valid.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { github } from './fixtures.mjs';
import { callEach, classify, faults, importCommand, listAll, serve, startPrism } from './harness.mjs';
import { PROGRAM, STEPS } from '../../bench/codemode.mjs';

/**
 * The sample: every 5th tool in the document's order, from the first. OPENAPI_GITHUB_EVERY=1
 * calls every tool (about four times as long).
 */
const EVERY = Number(process.env.OPENAPI_GITHUB_EVERY ?? 5);

let prism;
before(async () => {
  prism = await startPrism(github);
});
after(() => prism?.stop());

test("GitHub's description: every operation becomes a tool or is skipped with its reason; paged tools/list; Prism accepts every sampled request", async () => {
  const { output, config, parsed } = importCommand(github, ['--base-url', prism.url, '--server', 'github', '--page-size', '200']);
  const [, operations, tools, skipped] = output.match(/: (\d+) operations, (\d+) tools, (\d+) skipped$/m).map(Number);
  assert.ok(operations > 1000, output);
  assert.equal(tools + skipped, operations);
  const skips = output.split('\n').filter((l) => l.startsWith('skipped '));
  assert.equal(skips.length, skipped);
  for (const line of skips) assert.match(line, /^skipped \S+ \((GET|PUT|POST|PATCH|DELETE|HEAD) \/\S*\): .+/);

  const server = await serve(config, parsed);
  try {
    const first = await server.client.listTools();
    assert.equal(first.tools.length, 200);
    assert.ok(first.nextCursor);
    const all = await listAll(server.client);
    assert.equal(all.length, tools);
    assert.deepEqual(all.map((t) => t.name), parsed.servers[0].tools.map((t) => t.name));

    const sample = all.filter((_, i) => i % EVERY === 0);
    const calls = await callEach(server.client, sample, prism);
    assert.equal(calls.length, 2 * sample.length);
    // Every request that left a tool was valid. A few made-up argument sets are refused by the
    // tool itself, as the document demands (GitHub's oneOf branches overlap: a value may match
    // two), and never reach the API; they stay few.
    const kinds = classify(calls);
    console.log(`github calls: ${JSON.stringify(Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, v.length])))}`);
    for (const c of kinds.refused) console.log(`github refused: ${c.tool}: ${c.result.content[0].text}`);
    assert.deepEqual(faults([...kinds.invalid, ...kinds.other, ...kinds.reply]), []);
    assert.ok(kinds.accepted.length >= 0.97 * calls.length, `only ${kinds.accepted.length} of ${calls.length} accepted`);
  } finally {
    await server.stop();
  }
});

test("GitHub's description as a catalog: three tools listed; search, describe, and call_tool's requests pass Prism", async () => {
  const { config, parsed } = importCommand(github, ['--base-url', prism.url, '--server', 'github', '--catalog']);
  const server = await serve(config, parsed);
  try {
    const { tools } = await server.client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['search_tools', 'describe_tool', 'call_tool']);
    const found = await server.client.callTool({ name: 'search_tools', arguments: { query: 'list issues of a repository', limit: 5 } });
    const names = found.structuredContent.tools.map((t) => t.name);
    assert.ok(names.includes('issues_list-for-repo'), JSON.stringify(names));
    const described = await server.client.callTool({ name: 'describe_tool', arguments: { name: 'issues_list-for-repo' } });
    const listed = parsed.servers[0].tools.find((t) => t.name === 'issues_list-for-repo');
    assert.deepEqual(described.structuredContent.inputSchema, listed.inputSchema);

    const sample = parsed.servers[0].tools.filter((_, i) => i % (EVERY * 8) === 0);
    const proxied = { callTool: ({ name, arguments: args }) => server.client.callTool({ name: 'call_tool', arguments: { name, arguments: args } }) };
    const kinds = classify(await callEach(proxied, sample, prism));
    assert.deepEqual(faults([...kinds.invalid, ...kinds.other, ...kinds.reply]), []);
    assert.ok(kinds.accepted.length > 0);
  } finally {
    await server.stop();
  }
});

test("GitHub's description in code mode (--code): search declares the task's tools, and one execute does its ten steps, each request valid for Prism", async () => {
  const { config, parsed } = importCommand(github, ['--base-url', prism.url, '--server', 'github', '--code']);
  assert.equal(parsed.servers[0].toolDiscovery, 'code');
  // GitHub's own examples for these two leave out properties their schemas require (the bench
  // imports them the same way).
  for (const tool of parsed.servers[0].tools) if (['repos_get', 'issues_get'].includes(tool.name)) delete tool.outputSchema;
  const { writeFileSync } = await import('node:fs');
  writeFileSync(config, JSON.stringify(parsed));
  const server = await serve(config, parsed);
  try {
    const { tools } = await server.client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['search', 'execute']);
    const found = await server.client.callTool({ name: 'search', arguments: { query: 'list repository issues', limit: 3 } });
    assert.ok(found.structuredContent.tools.includes('issues_list-for-repo'), JSON.stringify(found.structuredContent));
    assert.match(found.content[0].text, /^declare const tools: \{/);
    assert.match(found.content[0].text, /issues_list-for-repo"?\(args/);

    const before = prism.requests.length;
    const result = await server.client.callTool({ name: 'execute', arguments: { code: PROGRAM } }, undefined, { timeout: 120_000 });
    assert.equal(result.isError, undefined, JSON.stringify(result.content));
    assert.deepEqual(result.structuredContent.result, {
      repository: 'octocat/Hello-World',
      label: 'bug',
      openBugs: 1,
      oldest: { number: 1347, title: 'Found a bug', comments: 1 },
      comment: 'https://github.com/octocat/Hello-World/issues/1347#issuecomment-1',
      events: 1,
      labels: ['bug'],
    });
    const made = prism.requests.slice(before);
    assert.equal(made.length, STEPS.length);
    assert.deepEqual(made.map((r) => `${r.method} ${r.url.split('?')[0]}`), [
      'GET /repos/octocat/Hello-World',
      'GET /repos/octocat/Hello-World/labels/bug',
      'GET /repos/octocat/Hello-World/issues',
      'GET /repos/octocat/Hello-World/issues/1347',
      'GET /repos/octocat/Hello-World/issues/1347/comments',
      'POST /repos/octocat/Hello-World/issues/1347/comments',
      'POST /repos/octocat/Hello-World/issues/1347/labels',
      'POST /repos/octocat/Hello-World/issues/1347/reactions',
      'GET /repos/octocat/Hello-World/issues/1347/events',
      'GET /repos/octocat/Hello-World/issues/1347',
    ]);
    for (const r of made) assert.deepEqual(r.violations.filter((v) => v.severity !== 'Warning' && v.location?.[0] !== 'response'), [], `${r.method} ${r.url}`);
  } finally {
    await server.stop();
  }
});
