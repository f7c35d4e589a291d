//! The doctor tests' real parts: an upstream whose tool streams (a progress line, then the
//! result a moment later), and a small HTTP proxy on 127.0.0.1 in front of the Worker that
//! injects one fault at a time, as a misconfigured gateway or server would. The proxy keeps the
//! Host header, so the Worker describes itself (issuer, resource, endpoints) at the proxy's origin.
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { root } from '../e2e/harness.mjs';

const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)));

/** POST → NDJSON: a progress line now, the result after `delayMs`. */
export async function startStreamingUpstream(delayMs = 700) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify({ progress: 1, total: 2, message: 'working' })}\n`);
      setTimeout(() => res.end(`${JSON.stringify({ result: { content: [{ type: 'text', text: 'all good' }] } })}\n`), delayMs);
    });
  });
  const url = await listen(server);
  return { url, close: () => new Promise((r) => server.close(r)) };
}

/**
 * The proxy. `fault` (settable) is one of: undefined (pass through), 'resource' (the PRM names
 * another resource), 'issuer' (the AS metadata names another issuer), '403' (POST /mcp refused
 * as a WAF would), 'no-www-authenticate' (401s lose the header), 'refuse-redirect' (DCR refuses
 * the redirect URI), 'buffer' (whole responses held until they end).
 */
export async function startFaultProxy(target) {
  const to = new URL(target);
  const state = { fault: undefined };
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const fault = state.fault;
    if (fault === '403' && req.method === 'POST' && path === '/mcp') {
      req.resume();
      res.writeHead(403, { 'content-type': 'text/html', server: 'test-waf' });
      res.end('<!doctype html><title>Access denied</title><h1>Access denied</h1><p>Request blocked by security policy.</p>');
      return;
    }
    if (fault === 'refuse-redirect' && req.method === 'POST' && path === '/register') {
      req.resume();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_redirect_uri', error_description: 'redirect_uris: only https://app.example/callback is allowed' }));
      return;
    }
    const headers = { ...req.headers };
    delete headers['accept-encoding'];
    const rewrite = (fault === 'resource' && path.startsWith('/.well-known/oauth-protected-resource')) || (fault === 'issuer' && (path.startsWith('/.well-known/oauth-authorization-server') || path.startsWith('/.well-known/openid-configuration')));
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers }, (r) => {
      const out = { ...r.headers };
      if (fault === 'no-www-authenticate' && r.statusCode === 401) delete out['www-authenticate'];
      if (!rewrite && fault !== 'buffer') {
        res.writeHead(r.statusCode, out);
        r.pipe(res);
        return;
      }
      const chunks = [];
      r.on('data', (c) => chunks.push(c));
      r.on('end', () => {
        let body = Buffer.concat(chunks);
        if (rewrite) {
          if (out['content-encoding'] === 'gzip') body = gunzipSync(body);
          const doc = JSON.parse(body.toString('utf8'));
          if (fault === 'resource') doc.resource = `http://${req.headers.host}/other-mcp`;
          if (fault === 'issuer') doc.issuer = 'https://issuer.example';
          body = Buffer.from(JSON.stringify(doc));
          delete out['content-encoding'];
        }
        delete out['transfer-encoding'];
        out['content-length'] = String(body.length);
        res.writeHead(r.statusCode, out);
        res.end(body);
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  const url = await listen(server);
  return {
    url,
    state,
    close: () => new Promise((r) => {
      server.closeAllConnections?.();
      server.close(r);
    }),
  };
}

/** Runs `mcp-edge doctor` as a user would; resolves with `{ code, stdout, stderr }`. */
export function runDoctor(args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'cli', 'mcp-edge.mjs'), 'doctor', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
