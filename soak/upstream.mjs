//! The soak run's upstream (`npm run soak`): a real HTTP server on 127.0.0.1 whose endpoints
//! answer at once, stream progress, fail on request (an error, a hang, a slow body), hold a call
//! until it is cancelled, and take jobs that report back later to their callback URL, retrying
//! that POST while mcp-edge restarts, as a workflow engine with retries would.
import { createServer } from 'node:http';

/** Starts the upstream; `jobs` maps a job key to the callback URL its request carried. */
export async function startSoakUpstream() {
  const jobs = new Map();
  const timers = new Set();
  const later = (ms, fn) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const counts = { requests: 0, callbacks: 0, callbackRetries: 0, callbacksGivenUp: 0 };

  /** POSTs a job's result to its callback URL; connection failures (a restart) are retried for
   *  up to 30 s. A 410 (the call ended) or 404 is an answer, not a failure. */
  async function report(url, body, started = Date.now()) {
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.status >= 500 && Date.now() - started < 30_000) throw new Error(`HTTP ${res.status}`);
      counts.callbacks++;
    } catch {
      if (Date.now() - started > 30_000) {
        counts.callbacksGivenUp++;
        return;
      }
      counts.callbackRetries++;
      later(250, () => report(url, body, started));
    }
  }

  const server = createServer(async (req, res) => {
    counts.requests++;
    const url = new URL(req.url, 'http://upstream');
    let text = '';
    for await (const chunk of req) text += chunk;
    const [, kind, arg = ''] = url.pathname.split('/');
    if (kind === 'echo') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ echo: JSON.parse(text || '{}') }));
    } else if (kind === 'progress') {
      // The line protocol: progress lines, then the result.
      const steps = Math.max(1, Number(arg) || 3);
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      let step = 0;
      const tick = () => {
        if (res.destroyed) return;
        step++;
        if (step <= steps) {
          res.write(JSON.stringify({ progress: step, total: steps, message: `step ${step}` }) + '\n');
          later(30, tick);
        } else {
          res.end(JSON.stringify({ result: { content: [{ type: 'text', text: `done in ${steps} steps` }] } }) + '\n');
        }
      };
      tick();
    } else if (kind === 'faulty') {
      // What a failing upstream does: `error` answers 500, `hang` never answers, `slow` sends
      // its body a byte every 200 ms (the tool's timeout ends both), anything else answers.
      if (arg === 'error') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('the upstream failed on purpose');
      } else if (arg === 'hang') {
        req.on('close', () => res.destroy());
      } else if (arg === 'slow') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const t = setInterval(() => res.write('.'), 200);
        res.on('close', () => clearInterval(t));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('fine');
      }
    } else if (kind === 'hang') {
      // Held until mcp-edge lets go (a cancellation aborts the fetch).
      req.on('close', () => res.destroy());
    } else if (kind === 'late') {
      // Answers after `arg` ms: the tool closes its stream early, and the client resumes it.
      later(Number(arg) || 500, () => {
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ late: Number(arg) }));
      });
    } else if (kind === 'jobs') {
      // Accepted now (202); the result goes to the callback URL after `delay` ms.
      const key = url.searchParams.get('key') ?? '';
      const delay = Number(arg) || 500;
      const callback = req.headers['mcp-edge-callback'];
      jobs.set(key, callback);
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end('{"accepted":true}');
      if (callback) later(delay, () => report(callback, JSON.stringify({ job: key, after: delay })));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    jobs,
    counts,
    close: () =>
      new Promise((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}
