//! Serves a built worker directory in workerd through Miniflare's API: the same runtime as
//! `wrangler dev`, without its DevTools instrumentation. Tests and the conformance run use it.
import { join } from 'node:path';
import { Miniflare } from 'miniflare';

/** Starts the worker in `dir` with `bindings` (vars and secrets) on 127.0.0.1:`port`. */
/** Reads and drops workerd's output: an unread pipe fills up (one log line per request) and then
 *  blocks workerd itself. */
export function drain(stdout, stderr) {
  stdout.resume();
  stderr.resume();
}

export function serveWorker({ dir, bindings, port = 0, persist = false, handleRuntimeStdio = drain, ratelimits = {} }) {
  return new Miniflare({
    modules: true,
    modulesRoot: dir,
    scriptPath: join(dir, 'index.js'),
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'], fallthrough: true }],
    // Keep in step with wrangler.toml.
    compatibilityDate: '2026-04-01',
    durableObjects: { MCP_SESSIONS: 'McpSession' },
    // Keep in step with wrangler.toml: queued tools, their consumer and its dead-letter queue.
    queueProducers: { TOOL_QUEUE: { queueName: 'mcp-edge-tools' } },
    queueConsumers: {
      'mcp-edge-tools': { maxBatchSize: 1, maxBatchTimeout: 0, maxRetries: 2, deadLetterQueue: 'mcp-edge-tools-dlq' },
      'mcp-edge-tools-dlq': { maxBatchSize: 1, maxBatchTimeout: 0 },
    },
    durableObjectsPersist: persist,
    ratelimits,
    bindings,
    host: '127.0.0.1',
    port,
    handleRuntimeStdio,
  });
}
