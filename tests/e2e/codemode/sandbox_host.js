// The test host of tests/e2e/codemode_sandbox.test.mjs: a Worker that prepares a program with
// src/edge/code/sandbox.js, loads it as a Dynamic Worker through the Worker Loader binding, and
// runs it with a `tools` RPC target answering from a small table. esbuild bundles it with acorn.
import { RpcTarget } from 'cloudflare:workers';
import { prepare } from '../../../src/edge/code/sandbox.js';

const TABLE = {
  issues_list: (args) => ({ ok: [{ number: 7, title: 'crash', labels: args.labels ?? [] }, { number: 3, title: 'typo', labels: [] }] }),
  echo: (args) => ({ ok: args }),
  'odd-name': () => ({ ok: 'odd' }),
  fails: () => ({ error: 'upstream said no (502)' }),
  throws: () => {
    throw new Error('the host failed');
  },
  garbled: () => 'not JSON',
};

class Tools extends RpcTarget {
  constructor(calls) {
    super();
    this.calls = calls;
  }
  async call(name, argsText) {
    this.calls.push([name, argsText]);
    const answer = TABLE[name];
    if (!answer) return JSON.stringify({ error: `no tool named ${name}` });
    const reply = answer(JSON.parse(argsText));
    return typeof reply === 'string' ? reply : JSON.stringify(reply);
  }
}

export default {
  async fetch(request, env) {
    if (request.method === 'GET') return new Response('pong');
    const { code, limits } = await request.json();
    const started = Date.now();
    const prepared = prepare(code, limits);
    if (prepared.error) return Response.json({ prepared: prepared.error });
    const worker = env.LOADER.load({
      compatibilityDate: '2026-04-01',
      mainModule: prepared.mainModule,
      modules: prepared.modules,
      globalOutbound: null,
      env: {},
    });
    const calls = [];
    try {
      const outcome = await worker.getEntrypoint().run({ tools: new Tools(calls) });
      return Response.json({ outcome, calls, ms: Date.now() - started });
    } catch (e) {
      return Response.json({ hostError: String(e?.message ?? e), calls });
    }
  },
};
