//! The fixture upstream for the MCP conformance suite. Every fixture tool, resource and prompt
//! of mcp-edge.json beside this file is served from configuration plus these endpoints, the way a
//! real deployment would use n8n webhooks.
//!
//!   node examples/conformance/upstream.mjs     (port: CONFORMANCE_UPSTREAM_PORT, default 8790)
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';

// A 1x1 red PNG and a tiny silent WAV.
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');
export const WAV = Buffer.from('UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==', 'base64');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

function json(res, value, status = 200) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** Tools that ask the client for input: the first call asks, the follow-up answers. */
function inputTool(ask, answer) {
  return async (req, res) => {
    const b = await body(req);
    if (!b.input) return json(res, { input: ask(b.arguments ?? b), state: { step: 1 } });
    if (b.input.error) return json(res, { ...text(`The client refused: ${JSON.stringify(b.input.error)}`), isError: true });
    return json(res, answer(b.input.result));
  };
}

/** 2026-07-28 multi round-trip fixtures: each round gets the previous answers in `input`. */
function rounds(steps) {
  return async (req, res) => {
    const b = await body(req);
    const state = b.input?.state ?? { round: 0 };
    const answers = b.input?.responses ?? (b.input ? { [state.key]: b.input.result } : {});
    return json(res, steps[state.round](answers, state));
  };
}

const elicitName = (message = 'What is your name?') => ({
  method: 'elicitation/create',
  params: { message, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
});
const askOne = (key, request, round, extra = {}) => ({ input: { key, ...request }, state: { round, key, ...extra } });
const sampling = (prompt, maxTokens) => ({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens } });

const mrtr = {
  'POST /mrtr/elicitation': rounds([() => askOne('user_name', elicitName(), 1), (a) => text(`Hello, ${a.user_name?.content?.name}!`)]),
  'POST /mrtr/sampling': rounds([() => askOne('capital_question', sampling('What is the capital of France?', 100), 1), (a) => text(`LLM said: ${a.capital_question?.content?.text}`)]),
  'POST /mrtr/roots': rounds([() => askOne('client_roots', { method: 'roots/list', params: {} }, 1), (a) => text(`Roots: ${(a.client_roots?.roots ?? []).map((r) => r.uri).join(', ')}`)]),
  'POST /mrtr/request-state': rounds([
    () => askOne('confirm', { method: 'elicitation/create', params: { message: 'Please confirm', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } } }, 1, { nonce: 'state-ok' }),
    (a, state) => text(`${state.nonce === 'state-ok' ? 'state-ok' : 'state-missing'}: confirmed=${a.confirm?.content?.ok}`),
  ]),
  'POST /mrtr/multiple': rounds([
    () => ({ inputs: { user_name: elicitName(), greeting: sampling('Generate a greeting', 50), client_roots: { method: 'roots/list', params: {} } }, state: { round: 1 } }),
    (a) => text(`${a.greeting?.content?.text} ${a.user_name?.content?.name}; roots: ${(a.client_roots?.roots ?? []).length}`),
  ]),
  'POST /mrtr/multi-round': rounds([
    () => askOne('step1', elicitName('Step 1: What is your name?'), 1),
    (a) => askOne('step2', { method: 'elicitation/create', params: { message: 'Step 2: What is your favorite color?', requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] } } }, 2, { name: a.step1?.content?.name }),
    (a, state) => text(`${state.name} likes ${a.step2?.content?.color}`),
  ]),
  'POST /mrtr/capabilities': rounds([
    () => ({ inputs: { sampling_request: sampling('Say something', 20), elicitation_request: elicitName() }, state: { round: 1 } }),
    (a) => text(`answered: ${Object.keys(a).join(', ')}`),
  ]),
  // Tasks that wait for input (the Tasks extension's input_required).
  'POST /tasks/confirm-delete': rounds([
    () => askOne('confirm', { method: 'elicitation/create', params: { message: 'Delete the file?', requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } } }, 1),
    (a) => text(`deleted: ${a.confirm?.content?.confirm === true}`),
  ]),
  'POST /tasks/multi-input': rounds([
    () => ({ inputs: { first: elicitName('First question?'), second: elicitName('Second question?') }, state: { round: 1 } }),
    (a) => text(`first=${a.first?.content?.name ?? a.first?.action} second=${a.second?.content?.name ?? a.second?.action}`),
  ]),
  // Asks first (before the task exists, `inputBeforeTask`); the round with the answer is the task.
  'POST /tasks/greet-after-input': rounds([() => askOne('user_name', elicitName(), 1), (a) => text(`Hello, ${a.user_name?.content?.name}! (from the task)`)]),
  'POST /mrtr/needs-sampling': rounds([() => askOne('llm', sampling('Needs an LLM', 10), 1), (a) => text(`LLM said: ${a.llm?.content?.text}`)]),
};

const routes = {
  ...mrtr,
  'GET /simple-text': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('This is a simple text response for testing.');
  },
  'GET /image': (req, res) => {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(PNG);
  },
  'GET /audio': (req, res) => {
    res.writeHead(200, { 'content-type': 'audio/wav' });
    res.end(WAV);
  },
  'GET /embedded-resource': (req, res) =>
    json(res, { content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }] }),
  'GET /mixed-content': (req, res) =>
    json(res, {
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG.toString('base64'), mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ],
    }),
  'GET /error': (req, res) => json(res, { ...text('This tool intentionally returns an error for testing'), isError: true }),
  'GET /logging': async (req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (const [i, message] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i > 0) await sleep(50);
      res.write(JSON.stringify({ log: { level: 'info', data: message } }) + '\n');
    }
    res.end(JSON.stringify({ result: text('Tool with logging executed successfully') }) + '\n');
  },
  'GET /progress': async (req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (const [i, progress] of [0, 50, 100].entries()) {
      if (i > 0) await sleep(50);
      res.write(JSON.stringify({ progress, total: 100 }) + '\n');
    }
    res.end(JSON.stringify({ result: text('Tool with progress executed successfully') }) + '\n');
  },
  'POST /sampling': inputTool(
    (args) => ({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }], maxTokens: 100 } }),
    (result) => text(`LLM response: ${result?.content?.text ?? JSON.stringify(result)}`),
  ),
  'POST /elicitation': inputTool(
    (args) => ({
      method: 'elicitation/create',
      params: {
        message: args.message,
        requestedSchema: {
          type: 'object',
          properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
          required: ['username', 'email'],
        },
      },
    }),
    (result) => text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`),
  ),
  'POST /elicitation-defaults': inputTool(
    () => ({
      method: 'elicitation/create',
      params: {
        message: 'Please review and update the form fields with defaults',
        requestedSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'User name', default: 'John Doe' },
            age: { type: 'integer', description: 'User age', default: 30 },
            score: { type: 'number', description: 'User score', default: 95.5 },
            status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
            verified: { type: 'boolean', description: 'Verification status', default: true },
          },
        },
      },
    }),
    (result) => text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`),
  ),
  'POST /elicitation-enums': inputTool(
    () => ({
      method: 'elicitation/create',
      params: {
        message: 'Please select options from the enum fields',
        requestedSchema: {
          type: 'object',
          properties: {
            untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
            titledSingle: {
              type: 'string',
              description: 'Select one option with titles',
              oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }],
            },
            legacyEnum: { type: 'string', description: 'Select one option (legacy)', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
            untitledMulti: { type: 'array', description: 'Select multiple options', minItems: 1, maxItems: 3, items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
            titledMulti: {
              type: 'array',
              description: 'Select multiple options with titles',
              minItems: 1,
              maxItems: 3,
              items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] },
            },
          },
          required: [],
        },
      },
    }),
    (result) => text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`),
  ),
  'POST /reconnection': async (req, res) => {
    await sleep(400);
    json(res, text('Reconnection test completed successfully'));
  },
  'POST /json-schema': async (req, res) => json(res, { received: (await body(req)) }),
  // The Tasks extension's fixtures (0.2.0-alpha.12's tasks-* scenarios).
  'POST /greet': async (req, res) => {
    const { name } = await body(req);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`Hello, ${name}!`);
  },
  'POST /slow-compute': async (req, res) => {
    const { seconds = 0, label = '' } = await body(req);
    await sleep(Number(seconds) * 1000);
    if (!res.destroyed) json(res, text(`computed ${label} in ${seconds} s`));
  },
  'POST /failing-job': async (req, res) => {
    await sleep(1000);
    json(res, { content: [{ type: 'text', text: 'the job failed' }], isError: true });
  },
  // A job that crashes: its answer is a JSON-RPC error (a protocol error), so its task fails.
  'POST /protocol-error-job': async (req, res) => {
    await sleep(500);
    json(res, { error: { code: -32603, message: 'the job crashed before it could finish' } });
  },
  'GET /watched-resource': (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('Watched resource content');
  },
};

/** An upstream MCP server (the TypeScript SDK, 2025-11-25, sessions) whose prompt asks the
 *  client for input while it is got: mcp-edge.json takes it as an upstream (`upstreams`), so a
 *  2026-07-28 client sees that request as an InputRequiredResult
 *  (input-required-result-non-tool-request), directly and through a second mcp-edge. */
function upstreamMcpServer() {
  const server = new McpServer({ name: 'conformance-upstream', version: '1.0.0' });
  server.registerPrompt('prompt', { description: 'A prompt that asks the client for the context it should use' }, async (extra) => {
    const answer = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { message: 'What context should the prompt use?', requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] } },
      },
      ElicitResultSchema,
    );
    const context = answer.action === 'accept' ? answer.content?.context : `(${answer.action})`;
    return { messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${context}` } }] };
  });
  return server;
}

const mcpSessions = new Map();

async function mcpRoute(req, res) {
  const id = req.headers['mcp-session-id'];
  let transport = id && mcpSessions.get(id);
  if (!transport) {
    if (id) return json(res, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Session not found' } }, 404);
    transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => mcpSessions.set(sid, transport) });
    transport.onclose = () => transport.sessionId && mcpSessions.delete(transport.sessionId);
    await upstreamMcpServer().connect(transport);
  }
  await transport.handleRequest(req, res);
}

export function conformanceHandler(req, res) {
  const url = new URL(req.url, 'http://upstream');
  if (url.pathname === '/mcp') {
    return mcpRoute(req, res).catch((e) => {
      if (!res.headersSent) json(res, { error: String(e) }, 500);
    });
  }
  const template = url.pathname.match(/^\/template\/([^/]+)\/data$/);
  if (req.method === 'GET' && template) {
    const id = decodeURIComponent(template[1]);
    return json(res, { id, templateTest: true, data: `Data for ID: ${id}` });
  }
  const route = routes[`${req.method} ${url.pathname}`];
  if (!route) return json(res, { error: `no route ${req.method} ${url.pathname}` }, 404);
  Promise.resolve(route(req, res)).catch((e) => {
    if (!res.headersSent) json(res, { error: String(e) }, 500);
  });
}

export function startConformanceUpstream(port = 0) {
  return new Promise((resolve, reject) => {
    const server = createServer(conformanceHandler);
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = await startConformanceUpstream(Number(process.env.CONFORMANCE_UPSTREAM_PORT || 8790));
  console.error(`[conformance-upstream] http://127.0.0.1:${server.address().port}`);
}
