// Runs the n8n-nodes-mcp node's own `execute` with a minimal execution context, as n8n would.
//   node n8n_node.cjs <install dir> <http|sse> <listTools|executeTool> <url>
// N8N_HEADERS: the credential's headers, `NAME=VALUE` lines as n8n's form takes them.
// Prints the node's output as JSON. Any error, including one raised after the operation by the
// transport's error handler (n8n would crash on it), fails the run.
const { createRequire } = require('node:module');
const [dir, connectionType, operation, url] = process.argv.slice(2);
const load = createRequire(`${dir}/package.json`);
const { McpClient } = load('n8n-nodes-mcp/dist/nodes/McpClient/McpClient.node.js');
// The SDK's exports map sends package.json to dist/; read the real one beside its entry point.
const fs = require('node:fs');
const path = require('node:path');
const sdkEntry = load.resolve('@modelcontextprotocol/sdk/client/index.js');
const sdkVersion = JSON.parse(fs.readFileSync(path.join(sdkEntry.slice(0, sdkEntry.indexOf('/dist/')), 'package.json'), 'utf8')).version;

process.on('uncaughtException', (e) => {
  console.error(`uncaught after the operation: ${e.message}`);
  process.exit(2);
});

const params = { operation, connectionType, uriOverride: '', toolName: 'echo', toolParameters: JSON.stringify({ message: `n8n ${connectionType}` }) };
const credentials = {
  mcpClientHttpApi: { httpStreamUrl: url, headers: process.env.N8N_HEADERS ?? '' },
  mcpClientSseApi: { sseUrl: url, headers: process.env.N8N_HEADERS ?? '' },
};
const context = {
  getNodeParameter(name, _item, fallback) {
    if (name in params) return params[name];
    if (fallback !== undefined) return fallback;
    throw new Error(`no parameter ${name}`);
  },
  getCredentials: async (type) => credentials[type],
  getNode: () => ({ name: 'MCP Client', type: 'n8n-nodes-mcp.mcpClient', typeVersion: 1, parameters: {} }),
  getInputData: () => [{ json: {} }],
  continueOnFail: () => false,
  logger: { debug() {}, info() {}, warn() {}, error() {} },
};

new McpClient()
  .execute.call(context)
  .then((output) => {
    // Give late transport errors time to surface before declaring success.
    setTimeout(() => {
      console.log(JSON.stringify({ sdkVersion, output }));
      process.exit(0);
    }, 700);
  })
  .catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
