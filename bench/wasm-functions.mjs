//! The largest functions of a built module, by code bytes, named where the build kept names
//! (`MCP_EDGE_KEEP_NAMES=1 node scripts/build.mjs --out-dir build-prof`). V8 compiles a wasm
//! function whole when it is first called, so a large function holding code a request does not
//! run still costs that request's isolate its compile (docs/performance.md, "Cold start").
//!
//!   node bench/wasm-functions.mjs build-prof/index_bg.wasm [how many, 25]
import { readFileSync } from 'node:fs';

const bytes = readFileSync(process.argv[2]);
let at = 8;
/** An unsigned LEB128 at `at`. */
const leb = () => {
  let value = 0;
  let shift = 0;
  let byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return value;
};
let imported = 0;
const sizes = [];
const names = new Map();
while (at < bytes.length) {
  const section = bytes[at++];
  const length = leb();
  const end = at + length;
  if (section === 2) {
    // Imports: functions imported come first in the function index space.
    for (let n = leb(); n > 0; n--) {
      // `at += leb()` would add to `at` as it was before the LEB was read.
      for (let part = 0; part < 2; part++) {
        const l = leb();
        at += l;
      }
      const kind = bytes[at++];
      if (kind === 0) {
        leb();
        imported++;
      } else if (kind === 1) {
        at++;
        if (bytes[at++] & 1) leb();
        leb();
      } else if (kind === 2) {
        if (bytes[at++] & 1) leb();
        leb();
      } else if (kind === 3) {
        at += 2;
      } else if (kind === 4) {
        at++;
        leb();
      }
    }
  } else if (section === 10) {
    for (let n = leb(); n > 0; n--) {
      const size = leb();
      sizes.push(size);
      at += size;
    }
  } else if (section === 0) {
    const nameLength = leb();
    const name = bytes.subarray(at, at + nameLength).toString();
    at += nameLength;
    while (name === 'name' && at < end) {
      const sub = bytes[at++];
      const subLength = leb();
      const subEnd = at + subLength;
      if (sub === 1) {
        for (let n = leb(); n > 0; n--) {
          const index = leb();
          const l = leb();
          names.set(index, bytes.subarray(at, at + l).toString());
          at += l;
        }
      }
      at = subEnd;
    }
  }
  at = end;
}
const rows = sizes.map((size, i) => [size, names.get(i + imported) ?? `function ${i + imported}`]).sort((a, b) => b[0] - a[0]);
console.log(`${sizes.length} functions, ${sizes.reduce((a, b) => a + b, 0)} bytes of code`);
for (const [size, name] of rows.slice(0, Number(process.argv[3] ?? 25))) console.log(String(size).padStart(8), name.replace(/::h[0-9a-f]{16}$/, ''));
