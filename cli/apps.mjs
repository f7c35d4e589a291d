//! MCP Apps' templates read into the configuration: a Worker reads no files, so each tool's
//! `app.template` (a path relative to the configuration file's folder, and inside it, symbolic
//! links followed) becomes its `app.html` before the Worker gets the text (docs/apps.md).
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';

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
