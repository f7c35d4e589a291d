//! Code mode's one binding: a server with `"toolDiscovery": "code"` runs each program in a Dynamic
//! Worker that the Worker Loader binding `LOADER` creates. wrangler declares it as
//! `[[worker_loaders]]`; this module reads a deployment's wrangler config for it (`mcp-edge check`
//! and `deploy` refuse code mode without it) and adds it (`mcp-edge init --code`). It also reads
//! whether the config uploads code mode's sandbox as a module of its own (`check` notes it when not).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const BINDING = 'LOADER';

/** The block wrangler.toml needs, with the comment that says why. */
export const TOML_BLOCK = `# Code mode ("toolDiscovery": "code"): each program runs in a Dynamic Worker of its own, made
# by the Worker Loader binding. Without it, code-mode servers are refused (docs/code-mode.md).
[[worker_loaders]]
binding = "${BINDING}"
`;

/** The wrangler config files wrangler itself looks for, in its order. */
const FILES = ['wrangler.json', 'wrangler.jsonc', 'wrangler.toml'];

/** The deployment's wrangler config in `dir`: `{ file, text }`, or undefined when it has none. */
export function wranglerConfig(dir = '.') {
  for (const name of FILES) {
    const file = join(dir, name);
    if (existsSync(file)) return { file, text: readFileSync(file, 'utf8') };
  }
  return undefined;
}

/** The names of the servers in the configuration `text` that use code mode (none when it is not
 *  JSON: the Worker's own check reports that). */
export function codeServers(text) {
  let config;
  try {
    config = JSON.parse(text);
  } catch {
    return [];
  }
  const servers = Array.isArray(config?.servers) ? config.servers : [];
  return servers.filter((s) => s?.toolDiscovery === 'code').map((s, i) => (typeof s.name === 'string' ? s.name : `servers[${i}]`));
}

/** Whether the wrangler config `{ file, text }` declares a Worker Loader binding named LOADER,
 *  outside comments. */
export function hasLoader({ file, text }) {
  if (file.endsWith('.toml')) {
    const live = tomlLines(text).join('\n');
    // Each [[worker_loaders]] table runs to the next table header.
    for (const m of live.matchAll(/^\s*\[\[\s*worker_loaders\s*\]\]\s*$([\s\S]*?)(?=^\s*\[|(?![\s\S]))/gm)) {
      if (new RegExp(`^\\s*binding\\s*=\\s*["']${BINDING}["']\\s*$`, 'm').test(m[1])) return true;
    }
    return false;
  }
  const parsed = jsonc(text);
  return Array.isArray(parsed?.worker_loaders) && parsed.worker_loaders.some((w) => w?.binding === BINDING);
}

/** A wrangler.toml's lines, its comments removed. */
function tomlLines(text) {
  return text.split('\n').filter((l) => !/^\s*#/.test(l)).map((l) => l.replace(/\s+#.*$/, ''));
}

/** A wrangler.json or wrangler.jsonc's value, read as wrangler reads it; undefined when it is not
 *  JSON. */
function jsonc(text) {
  try {
    return JSON.parse(stripJsonComments(text));
  } catch {
    return undefined;
  }
}

/** JSONC's comments and trailing commas removed, strings left alone. */
function stripJsonComments(text) {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      out += text.slice(start, i + 1);
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      i = text.indexOf('*/', i + 2);
      if (i < 0) break;
      i++;
    } else out += c;
  }
  return out.replace(/,(\s*[}\]])/g, '$1');
}

/** The two lines that upload code mode's sandbox (`build/codemode.js`) as a module of its own. */
export const SANDBOX_LINES = `find_additional_modules = true
rules = [{ type = "ESModule", globs = ["**/codemode.js"], fallthrough = false }]`;

/** Whether the wrangler config `{ file, text }` uploads the sandbox as a module of its own: finds
 *  additional modules, with an ESModule rule whose glob names `codemode.js`. Without them wrangler
 *  bundles the sandbox into `index.js`, which works the same but every isolate's start parses it. */
export function uploadsSandbox({ file, text }) {
  if (file.endsWith('.toml')) {
    const live = tomlLines(text);
    // Both are top-level keys: what comes before the first table header.
    const header = live.findIndex((l) => /^\s*\[/.test(l));
    const top = (header < 0 ? live : live.slice(0, header)).join('\n');
    const rules = top.match(/^\s*rules\s*=\s*\[([\s\S]*?)\]\s*$/m)?.[1] ?? '';
    return /^\s*find_additional_modules\s*=\s*true\s*$/m.test(top) && /type\s*=\s*["']ESModule["']/.test(rules) && /["'][^"']*codemode\.js["']/.test(rules);
  }
  const parsed = jsonc(text);
  const names = (globs) => Array.isArray(globs) && globs.some((g) => typeof g === 'string' && g.endsWith('codemode.js'));
  return parsed?.find_additional_modules === true && Array.isArray(parsed.rules) && parsed.rules.some((r) => r?.type === 'ESModule' && names(r.globs));
}

/** What to tell a deployment in `dir` whose wrangler config bundles the sandbox into `index.js`
 *  (a folder made before the sandbox was a module of its own); undefined when it uploads it apart,
 *  or has no wrangler config to read. */
export function sandboxNote(dir = '.') {
  const wrangler = wranglerConfig(dir);
  if (!wrangler || uploadsSandbox(wrangler)) return undefined;
  const fix = wrangler.file.endsWith('.toml') ? `add these top-level lines to ${wrangler.file}:\n\n${SANDBOX_LINES}\n` : `add "find_additional_modules": true and "rules": [{ "type": "ESModule", "globs": ["**/codemode.js"], "fallthrough": false }] to ${wrangler.file}`;
  return `${wrangler.file} does not upload code mode's sandbox as a module of its own, so wrangler bundles it into index.js and every isolate's start parses it (docs/deploying.md); ${fix}`;
}

/**
 * The fault of a configuration (`text`) whose code-mode servers the deployment in `dir` cannot
 * run, naming the fix; undefined when it has none, or when no wrangler config is there to say
 * (`note`: what to tell the user then).
 */
export function loaderFault(text, dir = '.') {
  const servers = codeServers(text);
  if (!servers.length) return {};
  const wrangler = wranglerConfig(dir);
  const which = `server${servers.length > 1 ? 's' : ''} ${servers.map((s) => JSON.stringify(s)).join(', ')}`;
  if (!wrangler) return { note: `${which} use${servers.length > 1 ? '' : 's'} code mode, which needs the Worker Loader binding "${BINDING}" in the deployment's wrangler config; none is here to check` };
  if (hasLoader(wrangler)) return {};
  const fix = wrangler.file.endsWith('.toml') ? `add to ${wrangler.file}:\n\n[[worker_loaders]]\nbinding = "${BINDING}"\n\n(or run \`npx mcp-edge init --code\`, which adds it)` : `add "worker_loaders": [{ "binding": "${BINDING}" }] to ${wrangler.file}`;
  return { fault: `${which} use${servers.length > 1 ? '' : 's'} code mode ("toolDiscovery": "code"), which runs each program through the Worker Loader binding "${BINDING}", and ${wrangler.file} declares none: ${fix}` };
}

/** Adds the binding to the wrangler.toml `file` (uncommenting the starter's block if it is
 *  there); true when the file changed. */
export function addLoader(file) {
  const text = readFileSync(file, 'utf8');
  if (hasLoader({ file, text })) return false;
  const commented = /^#\s*\[\[worker_loaders\]\]\s*\n#\s*binding\s*=\s*"LOADER"\s*$/m;
  const out = commented.test(text) ? text.replace(commented, `[[worker_loaders]]\nbinding = "${BINDING}"`) : `${text.replace(/\n*$/, '\n')}\n${TOML_BLOCK}`;
  writeFileSync(file, out);
  return true;
}
