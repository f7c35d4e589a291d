//! The tests' own OTLP collector (tests/telemetry/collector.py) from node: installs its Python
//! venv with the official opentelemetry-proto definitions (`installCollector`, which `npm test`
//! runs before any test, so that no test's time limit covers a download), starts and stops it,
//! and reads back what it received: the decoded spans, flattened for assertions, and the raw
//! bytes of every export, for the secrets test to search.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptInstall } from '../../scripts/debian.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Under .mcp-edge/ (ignored by git), beside the other clients the tests install. */
export const VENV = join(root, '.mcp-edge', 'otlp-collector');
const PYTHON = join(VENV, 'bin', 'python');
/** Pinned, so that every machine decodes with the same definitions; the venv is remade when
 *  this list changes. */
export const PACKAGES = ['opentelemetry-proto==1.45.2', 'protobuf==7.36.2'];
const SCRIPT = join(root, 'tests', 'telemetry', 'collector.py');

function sh(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...options });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, status: r.status ?? r.signal };
}

function must(cmd, args, options = {}) {
  console.error(`[setup] ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...options });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed with ${r.status ?? r.signal}`);
}

/** python3 with venv and ensurepip: Debian splits them into python3-venv, which a fresh
 *  machine may lack (`python3 -m venv` then fails for want of ensurepip). Installs it with
 *  apt-get when missing, as root or through sudo. */
function ensurePythonVenv() {
  if (sh('python3', ['-c', 'import venv, ensurepip']).ok) return;
  aptInstall(['python3', 'python3-venv'], 'python3 with venv');
  if (!sh('python3', ['-c', 'import venv, ensurepip']).ok) throw new Error('apt-get installed python3-venv, but python3 still has no venv/ensurepip');
}

/** Creates the collector's venv when missing or made for other packages; quick when done. */
export function installCollector() {
  const marker = join(VENV, 'installed');
  const wanted = PACKAGES.join('\n');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === wanted && existsSync(PYTHON)) return PYTHON;
  ensurePythonVenv();
  must('python3', ['-m', 'venv', '--clear', VENV]);
  must(PYTHON, ['-m', 'pip', 'install', '--quiet', ...PACKAGES]);
  // The definitions import, or the install is not done.
  must(PYTHON, ['-c', 'from opentelemetry.proto.collector.trace.v1 import trace_service_pb2; from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2']);
  writeFileSync(marker, wanted);
  return PYTHON;
}

const KINDS = { SPAN_KIND_UNSPECIFIED: 'UNSPECIFIED', SPAN_KIND_INTERNAL: 'INTERNAL', SPAN_KIND_SERVER: 'SERVER', SPAN_KIND_CLIENT: 'CLIENT', SPAN_KIND_PRODUCER: 'PRODUCER', SPAN_KIND_CONSUMER: 'CONSUMER' };

/** An OTLP AnyValue (as protobuf's JSON mapping writes it) as a plain value. */
export function anyValue(v) {
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('bytesValue' in v) return Buffer.from(v.bytesValue, 'base64');
  if ('arrayValue' in v) return (v.arrayValue.values ?? []).map(anyValue);
  if ('kvlistValue' in v) return attributes(v.kvlistValue.values);
  return undefined;
}

/** OTLP attributes (a list of key/value) as an object. */
export function attributes(list = []) {
  return Object.fromEntries(list.map((kv) => [kv.key, anyValue(kv.value)]));
}

/** Every span of the trace exports, flattened: ids as lowercase hex (the collector's doing),
 *  kind and status code without their enum prefixes, attributes as objects, and the resource
 *  and scope it came under. */
export function flattenSpans(exports) {
  const spans = [];
  for (const e of exports) {
    if (e.path !== '/v1/traces') continue;
    for (const rs of e.request.resourceSpans ?? []) {
      const resource = attributes(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            traceState: s.traceState ?? '',
            flags: s.flags ?? 0,
            name: s.name,
            kind: KINDS[s.kind] ?? s.kind ?? 'UNSPECIFIED',
            start: BigInt(s.startTimeUnixNano ?? 0),
            end: BigInt(s.endTimeUnixNano ?? 0),
            attributes: attributes(s.attributes),
            events: (s.events ?? []).map((ev) => ({ name: ev.name, attributes: attributes(ev.attributes) })),
            links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: attributes(l.attributes) })),
            status: { code: (s.status?.code ?? 'STATUS_CODE_UNSET').replace('STATUS_CODE_', ''), message: s.status?.message ?? '' },
            resource,
            scope: ss.scope ?? {},
            contentType: e.contentType,
          });
        }
      }
    }
  }
  return spans;
}

/**
 * Starts the collector on a free port of 127.0.0.1. `mode`: `ok`, `hang` (never answers),
 * `slow` (answers after `delay` seconds) or `refuse` (503). Returns its `endpoint` (what
 * `telemetry.otlp.endpoint` takes) and what reads and steers it.
 */
export async function startCollector({ mode = 'ok', delay = 0 } = {}) {
  const python = installCollector();
  const child = spawn(python, [SCRIPT, '--mode', mode, '--delay', String(delay)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const onData = (d) => {
      out += d;
      const i = out.indexOf('\n');
      if (i >= 0) {
        child.stdout.off('data', onData);
        try {
          resolve(JSON.parse(out.slice(0, i)).port);
        } catch (e) {
          reject(new Error(`the collector printed ${out}: ${e.message}`));
        }
      }
    };
    child.stdout.on('data', onData);
    exited.then((code) => reject(new Error(`the collector exited with ${code}: ${stderr}`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const received = async () => {
    const res = await fetch(`${endpoint}/received`);
    if (!res.ok) throw new Error(`collector /received: HTTP ${res.status}`);
    return res.json();
  };
  const collector = {
    endpoint,
    port,
    /** Everything: `exports` (decoded, with `raw` and `body` in base64), `errors`, `attempts`. */
    received,
    /** The spans received so far, flattened (see flattenSpans). */
    async spans() {
      return flattenSpans((await received()).exports);
    },
    /** The body of every export (unzipped) and every refused one, as Buffers. */
    async bodies() {
      const r = await received();
      return [...r.exports, ...r.errors].map((e) => Buffer.from(e.body, 'base64'));
    },
    /** Exports that did not decode with the official definitions (tests expect none). */
    async errors() {
      return (await received()).errors;
    },
    /** Waits until `check(spans)` returns something truthy, and returns it; the worker exports
     *  after its reply (waitUntil), so spans arrive a little later than the reply. */
    async waitForSpans(check, { timeoutMs = 15_000, what = 'spans' } = {}) {
      const until = Date.now() + timeoutMs;
      let spans = [];
      while (Date.now() < until) {
        spans = await collector.spans();
        const found = check(spans);
        if (found) return found;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out waiting for ${what}; the collector has ${spans.length} spans: ${spans.map((s) => `${s.kind} ${s.name} ${s.traceId}/${s.spanId}<-${s.parentSpanId}${s.attributes['url.full'] ? ` ${s.attributes['url.full']}` : ''}`).join(', ')}`);
    },
    async setMode(newMode, newDelay = 0) {
      const res = await fetch(`${endpoint}/mode`, { method: 'POST', body: JSON.stringify({ mode: newMode, delay: newDelay }) });
      if (!res.ok) throw new Error(`collector /mode: HTTP ${res.status}`);
    },
    async reset() {
      await fetch(`${endpoint}/received`, { method: 'DELETE' });
    },
    async close() {
      child.kill();
      await exited;
    },
  };
  return collector;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(installCollector());
}
