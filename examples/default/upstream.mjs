//! The demo upstream that `npm start` runs on 127.0.0.1: two JSON endpoints that stand in for
//! n8n webhooks.
//!
//!   node examples/default/upstream.mjs        (port: DEMO_UPSTREAM_PORT, default 8788)
//!
//! POST /echo  {"message": "hi"}      → {"message": "hi"}
//! GET  /time?timezone=Europe/Berlin  → {"iso": "...", "unixMs": ..., "timezone": "...", "local": "..."}
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

function send(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

export function demoHandler(req, res) {
  const url = new URL(req.url, 'http://upstream');
  if (req.method === 'POST' && url.pathname === '/echo') {
    readJson(req).then(
      (body) => send(res, 200, { message: String(body.message ?? '') }),
      () => send(res, 400, { error: 'body must be JSON' }),
    );
    return;
  }
  if (req.method === 'GET' && url.pathname === '/time') {
    const now = new Date();
    const timezone = url.searchParams.get('timezone') || 'UTC';
    try {
      const local = now.toLocaleString('en-GB', { timeZone: timezone, timeZoneName: 'short' });
      send(res, 200, { iso: now.toISOString(), unixMs: now.getTime(), timezone, local });
    } catch {
      send(res, 400, { error: `unknown time zone ${timezone}` });
    }
    return;
  }
  send(res, 404, { error: `no route ${req.method} ${url.pathname}` });
}

export function startDemoUpstream(port = 0, host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const server = createServer(demoHandler);
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.env.DEMO_UPSTREAM_PORT || 8788);
  const server = await startDemoUpstream(port);
  console.error(`[demo-upstream] listening on http://127.0.0.1:${server.address().port}`);
}
