// Code mode's sandbox, loaded when the isolate prepares its first program: `codemode.js` is
// src/edge/code/sandbox.js with acorn, bundled apart by scripts/build.mjs. It is 150 KB of
// JavaScript, four fifths of the Worker's, that an isolate which never runs a program would
// otherwise parse at every start (docs/performance.md, "Code mode's JavaScript, loaded at first
// use"). A deployment whose wrangler configuration lacks the rule that uploads it as a module of
// its own gets it bundled into index.js by wrangler: the same behaviour, without the saving.

let sandbox;

/** sandbox.js's `prepare`, once its module is loaded. */
export function prepare(code, limits) {
  sandbox ??= import('./codemode.js');
  return sandbox.then((module) => module.prepare(code, limits));
}
