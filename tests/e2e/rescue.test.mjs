// src/edge/rescue.js under Node: what a trap does to the requests and streams it interrupted.
// tests/e2e/panic.test.mjs forces the real traps in workerd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './harness.mjs';

const rescue = await import(pathToFileURL(join(root, 'src', 'edge', 'rescue.js')).href);

test('a handler that ends on its own is answered by itself, and a plain value stays a plain value', async () => {
  assert.equal(await rescue.rescued('fetch', () => Promise.resolve('answered')), 'answered');
  await assert.rejects(rescue.rescued('fetch', () => Promise.reject(new Error('its own error'))), /its own error/);
  assert.equal(rescue.rescued('constructor', () => 42), 42);
  assert.throws(() => rescue.rescued('fetch', () => { throw new TypeError('not a trap'); }), TypeError);
});

test('after a trap, a waiting fetch gets a 500 with -32603, and a waiting alarm fails', async () => {
  const fetching = rescue.rescued('fetch', () => new Promise(() => {}));
  const alarm = rescue.rescued('alarm', () => new Promise(() => {}));
  rescue.trapped();
  const res = await fetching;
  assert.equal(res.status, 500);
  assert.equal(res.headers.get('content-type'), 'application/json');
  assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: null, error: { code: -32603, message: JSON.parse(rescue.FAILED).error.message } });
  await assert.rejects(alarm, /the module trapped/);
});

test('a trap in the handler itself is answered too', async () => {
  const res = await rescue.rescued('fetch', () => {
    rescue.trapped();
    throw new Error('unreachable');
  });
  assert.equal(res.status, 500);
});

test('an open stream ends with the chunk it was given; a closed one hears nothing', async () => {
  const open = new TransformStream();
  const closed = new TransformStream();
  const writer = open.writable.getWriter();
  const other = closed.writable.getWriter();
  const chunk = new TextEncoder().encode(`${rescue.failed()}\n`);
  rescue.stream_opened(writer, chunk);
  rescue.stream_opened(other, chunk);
  rescue.stream_closed(other);
  rescue.trapped();
  assert.equal(await new Response(open.readable).text(), `${rescue.FAILED}\n`);
  // The closed stream's watch was stopped: nothing is written to it.
  const read = closed.readable.getReader().read();
  assert.equal(await Promise.race([read.then(() => 'written'), new Promise((r) => setTimeout(() => r('nothing'), 500))]), 'nothing');
});
