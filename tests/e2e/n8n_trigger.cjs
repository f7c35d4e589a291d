// n8n's own MCP Server Trigger, served over HTTP as n8n serves it, without the rest of n8n:
// the McpTrigger node's `webhook()` and its McpServer (@n8n/n8n-nodes-langchain 2.41.1, installed
// by `n8nTrigger()` of tests/e2e/clients.mjs), with the Webhook node's own authentication
// (n8n-nodes-base), called with a webhook context as n8n's webhook server gives it. Two workflows
// in one n8n instance, as two triggers share n8n's one McpServer:
//   /mcp/<path>               a trigger of version 2.1: Streamable HTTP (POST, DELETE; a GET
//                             there opens a legacy event stream, as in n8n); its tools get the
//                             request's headers, as n8n gives them from version 2.1 on
//   /mcp/<v1 path>/sse        a trigger of version 1.1: the legacy HTTP+SSE transport
//   /mcp/<v1 path>/messages   (its POSTs; DELETE at /mcp/<v1 path>)
// Both ask for Bearer auth. Their tools are real @langchain/core DynamicStructuredTools, built
// for each request as n8n builds its connected tool nodes: `add` (a, b) and `whoami` (the X-User
// header of the request, as the tool reads it from its input).
//
// What n8n's engine would do around the node is the harness's own: routing a request to the
// webhook its method and path register, Express's request and response (`path`, `query`,
// `rawBody`, `body`, `status`, `send`), the connected tools (`getConnectedTools` of the package's
// utils/helpers, which needs n8n-core, is replaced by the same lookup through the context), and
// starting no workflow for a call (the execution n8n would start is reported instead).
//
//   node n8n_trigger.cjs <install dir> <port> <bearer token> <path> <v1 path>
// Prints one JSON line per event: `listening`; `request` (each request once answered: method,
// path, headers, status, the JSON-RPC body); `tool` (a tool ran: its name, arguments and the
// request headers it was given); `execution` (the workflow data n8n would start a run with);
// `log` (the node's warnings and errors).
const http = require('node:http');
const path = require('node:path');
const Module = require('node:module');

const [installDir, port, token, v2Path, v1Path] = process.argv.slice(2);
const dir = path.resolve(installDir);
const load = Module.createRequire(path.join(dir, 'package.json'));
const triggerDir = path.join(dir, 'node_modules', '@n8n', 'n8n-nodes-langchain', 'dist', 'nodes', 'mcp', 'McpTrigger');
const { DynamicStructuredTool } = load('@langchain/core/tools');
const { z } = load('zod');
const { NodeConnectionTypes, NodeOperationError } = load('n8n-workflow');

const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

// The package's utils/helpers (getConnectedTools) needs n8n-core; McpTrigger.node.js gets this
// instead: the same lookup of the connected tools through the context, with the request's
// input, names checked unique, for tools that are neither toolkits nor without a zod schema.
const helpersFile = path.join(triggerDir, '..', '..', '..', 'utils', 'helpers.js');
const helpers = new Module(helpersFile);
helpers.filename = helpersFile;
helpers.loaded = true;
helpers.exports = {
  async getConnectedTools(ctx, enforceUniqueNames, _convertStructuredTool, _escapeCurlyBrackets, options) {
    const tools = (await ctx.getInputConnectionData(NodeConnectionTypes.AiTool, 0, options)) ?? [];
    const seen = new Set();
    for (const tool of tools) {
      tool.metadata ??= {};
      tool.metadata.isFromToolkit = false;
      tool.metadata.sourceNodeName = tool.name;
      if (enforceUniqueNames && seen.has(tool.name)) {
        throw new NodeOperationError(ctx.getNode(), `You have multiple tools with the same name: '${tool.name}', please rename them to avoid conflicts`);
      }
      seen.add(tool.name);
    }
    return tools;
  },
};
Module._cache[helpersFile] = helpers;
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === '../../../utils/helpers' && parent?.filename?.startsWith(triggerDir)) return helpersFile;
  return resolveFilename.call(this, request, parent, ...rest);
};

const { McpTrigger } = load(path.join(triggerDir, 'McpTrigger.node.js'));
const trigger = new McpTrigger();

/** The tool nodes connected to the trigger, as n8n supplies them for one request. */
function connectedTools(node, inputData) {
  const ran = (name, args) => emit({ event: 'tool', node: node.name, name, args, headers: inputData?.headers ?? null });
  return [
    new DynamicStructuredTool({
      name: 'add',
      description: 'Adds two numbers',
      schema: z.object({ a: z.number().describe('The first number'), b: z.number().describe('The second number') }),
      func: async (args) => {
        ran('add', args);
        return String(args.a + args.b);
      },
    }),
    new DynamicStructuredTool({
      name: 'whoami',
      description: 'Says who called, from the X-User header of the request',
      schema: z.object({}),
      func: async (args) => {
        ran('whoami', args);
        return inputData?.headers?.['x-user'] ?? 'nobody';
      },
    }),
  ];
}

const logger = {
  debug() {},
  info() {},
  warn: (message) => emit({ event: 'log', level: 'warn', message }),
  error: (message) => emit({ event: 'log', level: 'error', message }),
};

/** The workflows: each trigger node, with its parameters and credential. */
const nodes = [
  { name: 'MCP Server Trigger', type: '@n8n/n8n-nodes-langchain.mcpTrigger', typeVersion: 2.1, parameters: { authentication: 'bearerAuth', path: v2Path } },
  { name: 'MCP Server Trigger v1', type: '@n8n/n8n-nodes-langchain.mcpTrigger', typeVersion: 1.1, parameters: { authentication: 'bearerAuth', path: v1Path } },
];

/** The webhooks the nodes register (McpTrigger's `description.webhooks`), by method and path. */
const webhooks = new Map();
for (const node of nodes) {
  const base = `/mcp/${node.parameters.path}`;
  const legacy = node.typeVersion < 2;
  webhooks.set(`GET ${base}${legacy ? '/sse' : ''}`, { node, name: 'setup' });
  webhooks.set(`POST ${base}${legacy ? '/messages' : ''}`, { node, name: 'default' });
  webhooks.set(`DELETE ${base}`, { node, name: 'default' });
}

/** The context n8n gives a trigger's `webhook()`. */
function webhookContext(node, webhookName, req, res) {
  return {
    logger,
    getWebhookName: () => webhookName,
    getRequestObject: () => req,
    getResponseObject: () => res,
    getHeaderData: () => req.headers,
    getBodyData: () => req.body,
    getNode: () => node,
    getNodeParameter(name, fallback) {
      if (name in node.parameters) return node.parameters[name];
      if (fallback !== undefined) return fallback;
      throw new Error(`Could not get parameter "${name}"`);
    },
    async getCredentials(type) {
      if (type === 'httpBearerAuth') return { token };
      throw new Error(`Node does not have any credentials of type "${type}" set`);
    },
    // No dynamic credentials: n8n answers undefined.
    checkTriggerCredentialStatus: async () => undefined,
    getInputConnectionData: async (_type, _index, options) => connectedTools(node, options?.inputData),
  };
}

/** Express's additions to the request and response that n8n's webhook server relies on. */
function asExpress(req, res, rawBody) {
  const url = new URL(req.url, 'http://n8n');
  req.path = url.pathname;
  req.query = Object.fromEntries(url.searchParams);
  req.rawBody = rawBody;
  req.contentType = (req.headers['content-type'] ?? '').split(';')[0].trim();
  req.body = {};
  if (req.contentType === 'application/json' && rawBody.length) {
    try {
      req.body = JSON.parse(rawBody.toString());
    } catch {
      req.body = {};
    }
  }
  res.status = (code) => {
    res.statusCode = code;
    return res;
  };
  res.send = (body) => {
    if (!res.hasHeader('content-type')) res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(body);
    return res;
  };
}

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  asExpress(req, res, Buffer.concat(chunks));
  res.once('close', () => emit({ event: 'request', method: req.method, path: req.path, query: req.query, headers: req.headers, status: res.statusCode, body: req.body }));
  const webhook = webhooks.get(`${req.method} ${req.path}`);
  if (!webhook) {
    return res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 404, message: `The requested webhook "${req.method} ${req.path.slice('/mcp/'.length)}" is not registered.` }));
  }
  try {
    const result = await trigger.webhook(webhookContext(webhook.node, webhook.name, req, res));
    // A tool call starts a workflow execution with this data (the tool has already run).
    if (result.workflowData) emit({ event: 'execution', node: webhook.node.name, json: result.workflowData[0][0].json });
    if (!result.noWebhookResponse && !res.headersSent) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Webhook call received' }));
  } catch (e) {
    emit({ event: 'log', level: 'error', message: `webhook: ${e.message}` });
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 0, message: 'Workflow Webhook Error: Workflow could not be started!' }));
  }
});

server.listen(Number(port), '127.0.0.1', () => emit({ event: 'listening', port: server.address().port }));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
