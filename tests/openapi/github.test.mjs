// GitHub's REST description (npm @octokit/openapi, about 1,200 operations) end to end: the whole
// document imported, served, listed by following cursors, a fixed sample of its tools called
// through the official SDK client with Prism validating every request; and the same tools as a
// catalog, whose call_tool makes the same requests; and in code mode, where one execute does a
// ten-step task (bench/codemode.mjs's) with every request valid.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { github, typescript } from './fixtures.mjs';
import { createRequire } from 'node:module';
import { callEach, classify, faults, importCommand, listAll, serve, startPrism } from './harness.mjs';
import { CODE_SEARCHES, PROGRAM, STEPS } from '../../bench/codemode.mjs';

/**
 * What TypeScript 5.9.3 (the real compiler, `--strict`) finds wrong with `files` ({name: text}),
 * as `name(line): message` lines: empty when they check.
 */
function typecheck(files) {
  const ts = createRequire(import.meta.url)(typescript);
  const options = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, target, ...rest) => (name in files ? ts.createSourceFile(name, files[name], target) : read(name, target, ...rest));
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => name in files || exists(name);
  const program = ts.createProgram(Object.keys(files), options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName ?? ''}(${d.file ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0}): ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}

/** Each `search` answer's block as an interface (`declare const tools: {` → `interface T<i> {`),
 *  and `tools` as all of them at once, as one program sees the tools its searches declared. */
function declarations(answers) {
  const blocks = answers.map((text, i) => text.replace(/^declare const tools: \{/, `interface T${i} {`).replace(/\};(\n\/\/[^\n]*)?$/, '}'));
  return `${blocks.join('\n')}\ndeclare const tools: ${answers.map((_, i) => `T${i}`).join(' & ')};\n`;
}

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

    // The declarations of every search the task makes compile under --strict, with calls
    // written against them; a wrong argument or a misread result does not.
    const answers = [];
    for (const search of CODE_SEARCHES) answers.push((await server.client.callTool({ name: 'search', arguments: search })).content[0].text);
    const declared = declarations(answers);
    const use = `export async function triage() {
  const label = await tools["issues_get-label"]({ owner: "o", repo: "r", name: "bug" });
  const name: string = label.name;
  const comment = await tools["issues_create-comment"]({ owner: "o", repo: "r", issue_number: 1, body: "hi" });
  const url: string = comment.html_url;
  return { name, url };
}
`;
    assert.deepEqual(typecheck({ 'tools.d.ts': declared, 'use.ts': use }), []);
    const wrong = typecheck({ 'tools.d.ts': declared, 'use.ts': use.replace('issue_number: 1', 'issue_number: "1"').replace('label.name', 'label.nam') });
    assert.equal(wrong.length, 2, wrong.join('\n'));
    assert.match(wrong.join('\n'), /use\.ts\(3\): Property 'nam' does not exist/);
    assert.match(wrong.join('\n'), /use\.ts\(4\): Type 'string' is not assignable to type 'number'/);

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
