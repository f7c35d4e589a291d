// The configuration, as data: `mcp-edge-config` is the deployment's configuration file. wrangler
// bundles it (an `alias` in wrangler.toml names the file, so a JSON module: the parsed object);
// Miniflare in the tests and the bench loads it as a Text module (the file's own text). The
// build leaves the import to them (scripts/build.mjs, `--external:mcp-edge-config`): the wasm
// and its JS never change with the configuration.
import config from 'mcp-edge-config';

/** The configuration file's text, for the module's own parser and its located faults. */
export function config_text() {
  return typeof config === 'string' ? config : JSON.stringify(config);
}
