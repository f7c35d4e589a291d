//! A real HTTP upstream on 127.0.0.1 for the end-to-end tests: the demo endpoints plus ones that
//! fail, hang, lie about JSON, or wait for the test to release them.
import { createServer } from 'node:http';
import { demoHandler } from '../../examples/default/upstream.mjs';

export async function startTestUpstream() {
  const held = new Map(); // key → [res]
  const seen = []; // requests as the upstream saw them
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://upstream');
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    if (url.pathname === '/fail') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('upstream exploded');
    } else if (url.pathname === '/slow') {
      // Never answers; the worker's timeout must end the call.
      req.on('close', () => res.destroy());
    } else if (url.pathname === '/ask') {
      // Asks the client for a name, then greets it: state comes back with the answer.
      let text = '';
      req.on('data', (d) => (text += d));
      req.on('end', () => {
        const body = JSON.parse(text || '{}');
        res.writeHead(200, { 'content-type': 'application/json' });
        if (!body.input) {
          const params = { message: `Who is asking about ${body.topic}?`, requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } };
          res.end(JSON.stringify({ input: { method: 'elicitation/create', params }, state: { topic: body.topic } }));
        } else {
          const { state, result } = body.input;
          res.end(JSON.stringify({ content: [{ type: 'text', text: `Hello ${result.content?.name ?? 'nobody'} (${result.action}), about ${state.topic}; arguments: ${JSON.stringify(body.arguments)}` }] }));
        }
      });
    } else if (url.pathname === '/whoami') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ authorization: req.headers.authorization ?? null }));
    } else if (url.pathname === '/bad-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"oops": ');
    } else if (url.pathname.startsWith('/inspect/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: url.pathname, query: url.search }));
    } else if (url.pathname.startsWith('/hold/')) {
      const key = decodeURIComponent(url.pathname.slice('/hold/'.length));
      const release = (text) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(text);
      };
      held.set(key, [...(held.get(key) ?? []), release]);
    } else if (url.pathname.startsWith('/stream-hold/')) {
      // The line protocol: a progress line now, the result when the test releases it.
      const key = decodeURIComponent(url.pathname.slice('/stream-hold/'.length));
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(JSON.stringify({ progress: 1, total: 2, message: 'started' }) + '\n');
      res.write(JSON.stringify({ log: { level: 'info', data: 'working', logger: 'upstream' } }) + '\n');
      const release = (text) => {
        res.end(JSON.stringify({ result: { content: [{ type: 'text', text }] } }) + '\n');
      };
      held.set(key, [...(held.get(key) ?? []), release]);
    } else {
      demoHandler(req, res);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    /** Resolves once a request for `key` is being held. */
    async waitForHold(key) {
      while (!held.get(key)?.length) await new Promise((r) => setTimeout(r, 10));
    },
    release(key, text) {
      for (const release of held.get(key) ?? []) release(text);
      held.delete(key);
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
