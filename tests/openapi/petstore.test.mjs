// The Swagger Petstore in 2.0 (YAML), 3.0 (JSON) and 3.1 (YAML) becomes tools with
// `mcp-edge import-openapi`, and every request those tools make passes Stoplight Prism's
// validation against the document: every operation, with required arguments only and with all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { examples } from './fixtures.mjs';
import { callEach, faults, importCommand, listAll, serve, startPrism } from './harness.mjs';

const PETSTORES = [
  ['2.0', join(examples, '2.0', 'yaml', 'petstore.yaml')],
  ['3.0', join(examples, '3.0', 'json', 'petstore.json')],
  ['3.1', join(examples, '3.1', 'yaml', 'petstore.yaml')],
];

for (const [version, document] of PETSTORES) {
  test(`Petstore ${version}: every operation is a tool or skipped with its reason, and Prism accepts every request`, async () => {
    const prism = await startPrism(document);
    try {
      const { output, config, parsed } = importCommand(document, ['--base-url', prism.url, '--server', 'petstore']);
      // An operation that cannot be a tool says why; the secrets are named, never written. The
      // 2.0 Petstore leaves five bodies' media type undeclared (no `consumes`): Prism refuses
      // any body there, so the import skips them rather than guess JSON.
      if (version === '2.0') assert.equal(output.match(/^skipped \w+ \((POST|PUT) [^)]*\): its body has no declared media type \(Swagger 2\.0 without consumes\)$/gm).length, 5);
      assert.match(output, /^skipped uploadFile \(POST \/pet\/\{petId\}\/uploadImage\): its (only )?body is (multipart\/form-data|application\/octet-stream)/m);
      assert.match(output, /PETSTORE_API_KEY +API key, sent in the header "api_key"/);
      assert.match(output, /PETSTORE_PETSTORE_AUTH +OAuth 2 access token, sent as a bearer/);
      assert.match(output, version === '2.0' ? / 20 operations, 14 tools, 6 skipped$/m : / 20 operations, 19 tools, 1 skipped$/m);
      assert.doesNotMatch(JSON.stringify(parsed), /test-petstore/);

      const server = await serve(config, parsed);
      try {
        const tools = await listAll(server.client);
        assert.equal(tools.length, version === '2.0' ? 14 : 19);
        assert.deepEqual(tools.map((t) => t.name), parsed.servers[0].tools.map((t) => t.name));
        const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
        assert.deepEqual(byName.getPetById.annotations, { readOnlyHint: true });
        assert.deepEqual(byName.deletePet.annotations, { destructiveHint: true, idempotentHint: true });
        assert.match(byName.getPetById.description, /\n\nHTTP: GET \/pet\/\{petId\}$/);

        const calls = await callEach(server.client, tools, prism);
        assert.deepEqual(faults(calls), []);
        assert.equal(calls.length, 2 * tools.length);

        // One request byte for byte: the query list exploded, the credential from the secret.
        const before = prism.requests.length;
        const found = await server.client.callTool({ name: 'findPetsByStatus', arguments: { status: ['available', 'sold'] } });
        const [seen] = prism.requests.slice(before);
        assert.equal(seen.url, '/pet/findByStatus?status=available&status=sold');
        assert.equal(seen.headers.authorization, 'Bearer test-petstore_petstore_auth');
        assert.equal(seen.violations.length, 0);
        assert.equal(found.isError, undefined);
      } finally {
        await server.stop();
      }
    } finally {
      await prism.stop();
    }
  });
}
