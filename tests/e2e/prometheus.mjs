//! Prometheus 2.x from Debian's packages, for tests/e2e/metrics.test.mjs: installed when
//! missing (`npm test` calls `installPrometheus()` before any test starts, so no test file's
//! time limit covers a download), and a server of the test's own that scrapes one target.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptInstall } from '../../scripts/debian.mjs';

export const PROMETHEUS = '/usr/bin/prometheus';
export const PROMTOOL = '/usr/bin/promtool';

/** Installs Debian's `prometheus` (which brings `promtool`) when either is missing: `apt-get
 *  update`, then `apt-get install -y --no-install-recommends prometheus`, as root or through sudo. */
export function installPrometheus() {
  if (existsSync(PROMETHEUS) && existsSync(PROMTOOL)) return PROMETHEUS;
  aptInstall(['prometheus'], PROMETHEUS, { recommends: false });
  if (!existsSync(PROMETHEUS) || !existsSync(PROMTOOL)) throw new Error(`apt-get installed prometheus, but ${PROMETHEUS} or ${PROMTOOL} is still missing`);
  return PROMETHEUS;
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts Prometheus scraping `target` (a URL: its host and path) every second with `token` as
 *  its bearer credential. Returns `query(promql)` (the HTTP API's vector, as [{metric, value}])
 *  and `close()`. */
export async function startPrometheus(target, token) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-edge-prometheus-'));
  const url = new URL(target);
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms' },
    scrape_configs: [{ job_name: 'mcp-edge', metrics_path: url.pathname, scheme: url.protocol.slice(0, -1), authorization: { type: 'Bearer', credentials: token }, static_configs: [{ targets: [url.host] }] }],
  };
  // JSON is YAML.
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config));
  const port = await freePort();
  const logs = [];
  const child = spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (d) => logs.push(String(d)));
  child.stderr.on('data', (d) => logs.push(String(d)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/-/ready`)).ok) break;
    } catch {}
    if (i > 100 || child.exitCode !== null) throw new Error(`prometheus did not start: ${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    logs,
    async query(promql) {
      const res = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: promql })}`);
      const body = await res.json();
      if (body.status !== 'success') throw new Error(`${promql}: ${JSON.stringify(body)}`);
      return body.data.result;
    },
    async targets() {
      return (await (await fetch(`${base}/api/v1/targets`)).json()).data.activeTargets;
    },
    async close() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.on('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(installPrometheus());
}
