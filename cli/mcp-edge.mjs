#!/usr/bin/env node
//! `mcp-edge`: the prebuilt Worker's command. It needs Node and npm, no Rust: the wasm and its
//! JS ship built, and the configuration is data that wrangler bundles beside them.
//!
//!   mcp-edge init [dir] [--code]   a project folder: package.json, wrangler.toml, mcp-edge.json, README
//!   mcp-edge check [file]      validates a configuration (default: the file wrangler.toml names) as the Worker would
//!   mcp-edge dev [--port N]    serves the folder on http://127.0.0.1:N/mcp, reloading on edits
//!   mcp-edge deploy [args]     checks the configuration, then `wrangler deploy` (args pass through)
//!   mcp-edge import-openapi <file or URL> [options]   an OpenAPI document's operations as tools
//!   mcp-edge hash-password     a sign-in user's password (stdin) as the hash its secret may hold
//!   mcp-edge doctor <url>      walks any remote MCP server as Claude's and ChatGPT's connectors do
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inlineApps, keepInlined } from './apps.mjs';
import { check } from './check.mjs';
import { addLoader, loaderFault, sandboxNote } from './loader.mjs';

const here = dirname(fileURLToPath(import.meta.url));
/** The package (or, for contributors, the repository): `build/` holds the Worker. */
const home = dirname(here);
const buildDir = join(home, 'build');
const version = JSON.parse(readFileSync(join(home, 'package.json'), 'utf8')).version;

const USAGE = `mcp-edge ${version}: MCP tools from HTTP endpoints, on Cloudflare Workers

  mcp-edge init [dir]        create a project folder (default: this one); --code adds
                             code mode's Worker Loader binding (LOADER) to wrangler.toml
  mcp-edge check [file]      validate a configuration (default: the file wrangler.toml's
                             alias names, mcp-edge.json in a new project)
  mcp-edge dev [--port N]    serve this folder on http://127.0.0.1:N/mcp (default 8787),
                             reloading when mcp-edge.json changes
  mcp-edge deploy [args]     check the configuration, then deploy with wrangler
                             (arguments such as --dry-run pass through)
  mcp-edge import-openapi <file or URL> [options]
                             add an OpenAPI document's operations as tools (OpenAPI 3.0,
                             3.1 or Swagger 2.0, JSON or YAML); --help lists the options
  mcp-edge hash-password     read a password on stdin and print the PBKDF2 hash to store in
                             a sign-in user's secret instead of the password itself
  mcp-edge doctor <url> [options]
                             connect to any remote MCP server as Claude's and ChatGPT's
                             connectors do and name each fault; --help lists the options
`;

const IMPORT_USAGE = `mcp-edge import-openapi <file or URL> [options]

Adds one tool per operation to a server of the configuration, and prints every operation it
skipped with the reason, and the secrets the tools need.

  --config FILE          the configuration to write (default: the file wrangler.toml names,
                         else mcp-edge.json; created when missing)
  --server NAME          add to the server of this name, or create it (default: from the title)
  --route PATH           a new server's route (default /mcp, or /<name>/mcp when taken)
  --base-url URL         the API's base URL, a literal or a secret such as {+env.API_BASE}
                         (default: the document's first server, variables at their defaults)
  --prefix TEXT          put TEXT before every tool name
  --include KIND:VALUE   import only matching operations; repeat or comma-separate. Kinds:
  --exclude KIND:VALUE   tag:NAME, operation:OPERATION_ID, path:GLOB (/pets/* is one segment
                         under /pets, /repos/** is /repos and all under it), method:GET.
                         Includes of one kind are alternatives; different kinds must all
                         match. An operation matching any exclude is left out.
  --page-size N          tools per tools/list page (limits.toolsPageSize)
  --catalog              serve the tools as a catalog: search, describe and call by name
  --code                 serve the tools in code mode: search them as TypeScript, and run
                         one program that calls many (needs the LOADER binding: init --code)
  --secret-prefix TEXT   prefix of the secrets' names (default: the server's name)
  --retries N            retry idempotent tools (GET, HEAD, PUT, DELETE) up to N attempts
  --client-id [SCHEME=]ID
                         your OAuth app's client id for an oauth2 or openIdConnect scheme,
                         which becomes a connection; without SCHEME=, for every such scheme
  --no-connections       send oauth2 and openIdConnect schemes' token from a secret instead
                         (one token for every user, such as a personal access token)
  --no-output-schema     declare no outputSchema (replies are not checked against the document)
  --replace              replace the server's tools of the same names (a re-import), instead
                         of adding the new ones with a suffix
  --dry-run              print the resulting configuration instead of writing it
`;

function fail(message) {
  console.error(`mcp-edge: ${message}`);
  process.exit(1);
}

function needBuild() {
  if (!existsSync(join(buildDir, 'index.js'))) {
    fail(`${buildDir} has no built Worker. In the repository, run \`npm run build\` first.`);
  }
}

/**
 * How the project that holds this copy of mcp-edge depends on it (`file:…/mcp-edge-0.1.0.tgz`
 * when it was installed from a tarball), made relative to `dir`; `^version` otherwise.
 */
function dependencySpec(dir) {
  const fallback = `^${version}`;
  if (basename(dirname(home)) !== 'node_modules') return fallback;
  const project = dirname(dirname(home));
  let spec;
  try {
    spec = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies?.['mcp-edge'];
  } catch {
    return fallback;
  }
  if (!spec) return fallback;
  return spec.startsWith('file:') ? `file:${relative(dir, resolve(project, spec.slice(5))) || '.'}` : spec;
}

/** The project's package.json, with mcp-edge's scripts and dependency added to what it has. */
function projectPackage(dir) {
  const file = join(dir, 'package.json');
  const pkg = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : { private: true };
  // `npm install <tarball>` in an empty folder writes a package.json with no name. A Worker's
  // name is lower-case letters, digits and dashes, at most 63 of them.
  pkg.name ??= basename(resolve(dir)).toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63) || 'my-mcp-server';
  pkg.type ??= 'module';
  pkg.scripts = { dev: 'mcp-edge dev', check: 'mcp-edge check', deploy: 'mcp-edge deploy', ...pkg.scripts };
  // Installed from a tarball or a path, npm wrote that spec already: keep it.
  pkg.dependencies = { 'mcp-edge': dependencySpec(resolve(dir)), ...pkg.dependencies };
  return pkg;
}

function init(dir = '.', { code = false } = {}) {
  const target = resolve(dir);
  mkdirSync(target, { recursive: true });
  const pkg = projectPackage(target);
  writeFileSync(join(target, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  console.log(`wrote ${join(relative(process.cwd(), target) || '.', 'package.json')}`);
  const starter = join(here, 'starter');
  const files = [
    ['mcp-edge.json', 'mcp-edge.json'],
    ['wrangler.toml', 'wrangler.toml'],
    ['README.md', 'README.md'],
    ['gitignore', '.gitignore'],
    ['dev.vars', '.dev.vars'],
  ];
  for (const [from, to] of files) {
    const out = join(target, to);
    const shown = join(relative(process.cwd(), target) || '.', to);
    if (existsSync(out)) {
      console.log(`kept ${shown} (it exists)`);
      continue;
    }
    if (to === 'wrangler.toml') {
      writeFileSync(out, readFileSync(join(starter, from), 'utf8').replace('name = "my-mcp-server"', `name = ${JSON.stringify(pkg.name)}`));
    } else {
      copyFileSync(join(starter, from), out);
    }
    console.log(`wrote ${shown}`);
  }
  // Code mode's binding: asked for, or needed by the configuration that is there.
  const toml = join(target, 'wrangler.toml');
  const shownToml = join(relative(process.cwd(), target) || '.', 'wrangler.toml');
  const config = join(target, 'mcp-edge.json');
  const needed = code || (existsSync(config) && loaderFault(readFileSync(config, 'utf8'), target).fault);
  if (needed && addLoader(toml)) console.log(`added code mode's Worker Loader binding (LOADER) to ${shownToml}`);
  const inside = existsSync(join(target, 'node_modules', 'mcp-edge'));
  console.log(`
Next:${target === process.cwd() ? '' : `\n  cd ${relative(process.cwd(), target)}`}${inside ? '' : '\n  npm install'}
  npx mcp-edge dev          serves http://127.0.0.1:8787/mcp
Then replace the example tool in mcp-edge.json with your own webhook: the server picks up each save.`);
}

/** The configuration file wrangler.toml's alias names (the starter's `./mcp-edge.json`). */
function configFile() {
  const toml = existsSync('wrangler.toml') ? readFileSync('wrangler.toml', 'utf8') : '';
  const named = toml.match(/^\s*"mcp-edge-config"\s*=\s*"([^"]+)"/m)?.[1] ?? 'mcp-edge.json';
  return named.replace(/^\.\//, '');
}

async function checkFile(file = configFile()) {
  needBuild();
  let text;
  try {
    text = inlineApps(readFileSync(file, 'utf8'), file);
  } catch (e) {
    fail(`${file}: cannot read: ${e.message}`);
  }
  // The Worker checks the configuration alone; whether the deployment gives code mode its
  // binding is the wrangler config's to say.
  const { fault, note } = loaderFault(text);
  if (fault) {
    console.error(`${file}: ${fault}`);
    return false;
  }
  const { ok, report } = await check(file, text, buildDir);
  (ok ? console.log : console.error)(report);
  if (note) console.error(`note: ${note}`);
  const sandbox = sandboxNote();
  if (sandbox) console.error(`note: ${sandbox}`);
  return ok;
}

/** wrangler's arguments for a configuration whose apps name template files (docs/apps.md): the
 *  Worker reads no files, so the configuration with the templates read in is written beside
 *  wrangler.toml (`.mcp-edge.apps.json`), and a copy of the toml naming it
 *  (`.wrangler.apps.toml`) is what wrangler is given; `live` (dev) writes it again whenever the
 *  file or a template is saved. Other configurations: as they are. */
function withApps(args, live = false) {
  const file = configFile();
  if (!existsSync(file)) return args;
  const text = readFileSync(file, 'utf8');
  const inlined = inlineApps(text, file);
  if (inlined === text || !existsSync('wrangler.toml')) return args;
  if (live) keepInlined(file, '.mcp-edge.apps.json');
  else writeFileSync('.mcp-edge.apps.json', inlined);
  const toml = readFileSync('wrangler.toml', 'utf8').replace(/^(\s*"mcp-edge-config"\s*=\s*)"[^"]+"/m, '$1"./.mcp-edge.apps.json"');
  writeFileSync('.wrangler.apps.toml', toml);
  return ['--config', '.wrangler.apps.toml', ...args];
}

/** Runs the wrangler this package depends on, in the current folder. */
function wrangler(args) {
  const require = createRequire(import.meta.url);
  const bin = join(dirname(require.resolve('wrangler/package.json')), 'bin', 'wrangler.js');
  const child = spawn(process.execPath, [bin, ...args], { stdio: 'inherit', env: { WRANGLER_SEND_METRICS: 'false', ...process.env } });
  const stop = () => child.kill('SIGTERM');
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

function projectReady() {
  if (!existsSync('wrangler.toml') && !existsSync('wrangler.jsonc') && !existsSync('wrangler.json')) {
    fail('no wrangler.toml here: run `mcp-edge init` first, or cd into your project');
  }
  // The Worker wrangler.toml names lives in the project's own node_modules.
  const main = existsSync('wrangler.toml') ? readFileSync('wrangler.toml', 'utf8').match(/^main\s*=\s*"([^"]+)"/m)?.[1] : undefined;
  if (main && !existsSync(main)) {
    fail(`wrangler.toml's main, ${main}, is missing: run \`npm install\` in this folder first`);
  }
}

/** `import-openapi`: reads the options, imports, writes the file, reports. */
async function importCommand(args) {
  const { importOpenApi } = await import('./openapi/import.mjs');
  const flags = { include: [], exclude: [], clientIds: {} };
  const valued = { '--config': 'config', '--server': 'server', '--route': 'route', '--base-url': 'baseUrl', '--prefix': 'prefix', '--page-size': 'pageSize', '--secret-prefix': 'secretPrefix', '--retries': 'retries' };
  let source;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--help' || arg === '-h') return process.stdout.write(IMPORT_USAGE);
    if (arg === '--include' || arg === '--exclude') flags[arg.slice(2)].push(args[++i] ?? fail(`${arg} needs a value`));
    else if (valued[arg]) flags[valued[arg]] = args[++i] ?? fail(`${arg} needs a value`);
    else if (arg === '--client-id') {
      const value = args[++i] ?? fail(`${arg} needs a value`);
      const at = value.indexOf('=');
      flags.clientIds[at > 0 ? value.slice(0, at) : '*'] = at > 0 ? value.slice(at + 1) : value;
    } else if (arg === '--no-connections') flags.connections = false;
    else if (arg === '--catalog') flags.catalog = true;
    else if (arg === '--code') flags.code = true;
    else if (arg === '--no-output-schema') flags.outputSchema = false;
    else if (arg === '--dry-run') flags.dryRun = true;
    else if (arg === '--replace') flags.replace = true;
    else if (arg.startsWith('-')) fail(`unknown option ${arg}\n\n${IMPORT_USAGE}`);
    else if (source === undefined) source = arg;
    else fail(`one document at a time (got ${source} and ${arg})`);
  }
  if (!source) fail(`which document?\n\n${IMPORT_USAGE}`);
  // The values the configuration would refuse, refused here, before anything is written.
  for (const [key, option, max] of [['pageSize', '--page-size', Infinity], ['retries', '--retries', 10]]) {
    if (flags[key] !== undefined) {
      const n = Number(flags[key]);
      if (!Number.isInteger(n) || n < 1 || n > max) fail(`${option} must be a whole number from 1${max === Infinity ? '' : ` to ${max}`}`);
      flags[key] = n;
    }
  }
  if (flags.route !== undefined && !flags.route.startsWith('/')) fail('--route must start with /');
  if (flags.baseUrl !== undefined && !/^(https?:\/\/|\{\+env\.)/.test(flags.baseUrl)) fail('--base-url must start with http://, https:// or a secret such as {+env.API_BASE}');
  const file = flags.config ?? configFile();
  let config;
  if (existsSync(file)) {
    try {
      config = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      fail(`${file}: not JSON: ${e.message}`);
    }
  }
  let result;
  try {
    result = await importOpenApi(source, flags, config);
  } catch (e) {
    fail(e.message);
  }
  const { server, added, skipped, secrets, notes, operations } = result;
  const text = `${JSON.stringify(result.config, null, 2)}\n`;
  // The result must pass the Worker's own check before it replaces the file.
  if (existsSync(join(buildDir, 'index.js'))) {
    const { ok, report } = await check(file, text, buildDir);
    if (!ok) fail(`the imported configuration would not load, so ${file} is unchanged:\n${report}${result.notes.length ? `\n${result.notes.map((n) => `note: ${n}`).join('\n')}` : ''}`);
  }
  if (flags.dryRun) process.stdout.write(text);
  else writeFileSync(file, text);
  const log = flags.dryRun ? console.error : console.log;
  log(`${result.title} (${/^2/.test(result.version) ? 'Swagger' : 'OpenAPI'} ${result.version}): ${operations} operations, ${added.length} tools${result.replaced.length ? ` (${result.replaced.length} replaced)` : ''}, ${skipped.length} skipped`);
  log(`${flags.dryRun ? 'would add' : 'added'} to server "${server.name}" at ${server.route ?? '/mcp'}${result.created ? ' (new)' : ''}${flags.dryRun ? '' : ` in ${file}`}`);
  for (const s of skipped) log(`skipped ${s.operation}${s.operation === s.where ? '' : ` (${s.where})`}: ${s.reason}`);
  for (const n of notes) log(`note: ${n}`);
  if (flags.code) {
    const { fault, note } = loaderFault(text);
    if (fault || note) log(`note: ${fault ?? note}`);
  }
  if (secrets.length) {
    log('\nThe tools read these secrets (npx wrangler secret put NAME; for dev, NAME=value in .dev.vars):');
    for (const s of secrets) log(`  ${s.name.padEnd(28)} ${s.how} (scheme "${s.scheme}")`);
  }
}

/**
 * `pbkdf2-sha256$<iterations>$<salt>$<hash>` (base64url), as the Worker checks it with Web
 * Crypto: 100,000 iterations, the most Cloudflare's Web Crypto allows.
 */
async function hashPassword(password) {
  const { pbkdf2Sync, randomBytes } = await import('node:crypto');
  const salt = randomBytes(16);
  const hash = pbkdf2Sync(password, salt, 100_000, 32, 'sha256');
  return `pbkdf2-sha256$100000$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

async function hashPasswordCommand() {
  // From stdin, never the command line: shells keep their history.
  if (process.stdin.isTTY) process.stderr.write('Password (then Enter; Ctrl-D to end): ');
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
    if (process.stdin.isTTY && chunk.includes(10)) break;
  }
  const password = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (!password) fail('no password on stdin');
  console.log(await hashPassword(password));
  process.stderr.write('Store it as the user\'s passwordSecret: npx wrangler secret put NAME (paste the line above).\n');
}

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case 'init': {
    const code = args.includes('--code');
    const rest = args.filter((a) => a !== '--code');
    if (rest.some((a) => a.startsWith('-'))) fail(`unknown option ${rest.find((a) => a.startsWith('-'))}\n\n${USAGE}`);
    init(rest[0], { code });
    break;
  }
  case 'check':
    process.exitCode = (await checkFile(args[0])) ? 0 : 1;
    break;
  case 'dev': {
    projectReady();
    const i = args.indexOf('--port');
    const port = i >= 0 ? args[i + 1] : (process.env.PORT ?? '8787');
    const rest = i >= 0 ? [...args.slice(0, i), ...args.slice(i + 2)] : args;
    // wrangler watches what it bundles, mcp-edge.json included, and reloads the Worker on a save.
    // MCP_EDGE_LOCAL: the DNS-rebinding Host check applies whatever a request claims.
    // With apps' templates, the file read in is served, written again on each save.
    wrangler(['dev', '--ip', '127.0.0.1', '--port', port, '--var', 'MCP_EDGE_LOCAL:1', '--show-interactive-dev-session=false', ...withApps(rest, true)]);
    break;
  }
  case 'deploy':
    projectReady();
    if (!(await checkFile())) fail(`${configFile()} has a fault (above): not deployed`);
    wrangler(['deploy', ...withApps(args)]);
    break;
  case 'import-openapi':
    await importCommand(args);
    break;
  case 'hash-password':
    await hashPasswordCommand();
    break;
  case 'doctor': {
    const { doctorCommand } = await import('./doctor/main.mjs');
    process.exitCode = await doctorCommand(args);
    break;
  }
  case undefined:
  case 'help':
  case '--help':
  case '-h':
    process.stdout.write(USAGE);
    break;
  case '--version':
  case '-v':
    console.log(version);
    break;
  default:
    process.stderr.write(USAGE);
    fail(`unknown command ${JSON.stringify(command)}`);
}
