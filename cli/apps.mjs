//! MCP Apps' templates read into the configuration: a Worker reads no files, so each tool's
//! `app.template` (a path relative to the configuration file's folder, and inside it, symbolic
//! links followed) becomes its `app.html` before the Worker gets the text (docs/apps.md).
import { readFileSync, realpathSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** `text` (the configuration file `file`'s text) with each app's template read into `html`. */
export function inlineApps(text, file) {
  if (!text.includes('"template"')) return text;
  let config;
  try {
    config = JSON.parse(text);
  } catch {
    return text; // The Worker says where the JSON is wrong.
  }
  const folder = realpathSync(dirname(file));
  let changed = false;
  (config.servers ?? []).forEach((server, s) => (server?.tools ?? []).forEach((tool, t) => {
    const app = tool?.app;
    if (!app || typeof app.template !== 'string' || app.html !== undefined) return;
    const at = `servers[${s}].tools[${t}].app.template`;
    let real;
    try {
      real = realpathSync(join(folder, app.template));
    } catch (e) {
      throw new Error(`${at}: ${JSON.stringify(app.template)} cannot be read (${e.code ?? e.message})`);
    }
    const inside = relative(folder, real);
    if (isAbsolute(app.template) || !inside || inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
      throw new Error(`${at}: ${JSON.stringify(app.template)} is outside the configuration's folder`);
    }
    app.html = readFileSync(real, 'utf8');
    changed = true;
  }));
  return changed ? JSON.stringify(config, null, 2) : text;
}

/** Writes `copy`, the configuration `file` with its apps' templates read in, and writes it again
 *  whenever `file` or a template it names is saved (polled every 500 ms), so a `wrangler dev`
 *  serving `copy` reloads as it would for `file` itself. A fault is printed and the copy left as
 *  it was: the Worker goes on serving what it had. */
export function keepInlined(file, copy) {
  let watched = [];
  const write = () => {
    const text = readFileSync(file, 'utf8');
    try {
      writeFileSync(copy, inlineApps(text, file));
    } catch (e) {
      console.error(`${file}: ${e.message}`);
    }
    for (const t of watched) unwatchFile(t, write);
    watched = templates(text).map((t) => resolve(dirname(file), t));
    for (const t of watched) watchFile(t, { interval: 500 }, write);
  };
  write();
  watchFile(file, { interval: 500 }, write);
}

/** The template paths a configuration's text names (none when it is not JSON). */
function templates(text) {
  try {
    return (JSON.parse(text).servers ?? []).flatMap((s) => (s?.tools ?? []).map((t) => t?.app?.template)).filter((t) => typeof t === 'string');
  } catch {
    return [];
  }
}
