// TEMPORARY on i44-core: replaced by the sandbox helper's module at merge.
export function prepare(code, limits) {
  const runner = `import program from './program.js';
export default { async run({ tools }) {
  const logs = []; let dropped = 0;
  const log = (...a) => { if (logs.length < ${limits.logLines}) logs.push(a.map(String).join(' ')); else dropped++; };
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };
  const proxy = new Proxy({}, { get: (_, name) => async (args) => { const a = JSON.parse(await tools.call(String(name), JSON.stringify(args ?? {}))); if ('error' in a) { const e = new Error('tool ' + String(name) + ': ' + a.error); e.tool = String(name); throw e; } return a.ok; } });
  try { const v = await program(proxy); return { value: v === undefined ? undefined : JSON.stringify(v), logs, dropped }; }
  catch (e) { const m = /program\\.js:(\\d+)/.exec(String(e?.stack)); return { error: { message: String(e), line: m ? Number(m[1]) - 1 : undefined, tool: e?.tool }, logs, dropped }; }
} };`;
  return { mainModule: 'run.js', modules: { 'run.js': runner, 'program.js': 'export default async function (tools) {\n' + code + '\n}' } };
}
