// Sessions live in Durable Object storage: they survive a restart of the runtime.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startMiniflare, freshPersistDir, post, openSession } from './harness.mjs';
import { startTestUpstream } from './upstream.mjs';

test('a session still works after workerd restarts with persisted Durable Object state', async () => {
  const upstream = await startTestUpstream();
  const persist = freshPersistDir();
  const first = await startMiniflare({ upstreamUrl: upstream.url, persist });
  const url = new URL('/mcp', first.url);
  const sid = await openSession(url, '2025-06-18');
  await first.mf.dispose();

  const second = await startMiniflare({ upstreamUrl: upstream.url, persist });
  try {
    const url2 = new URL('/mcp', second.url);
    const res = await post(url2, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'after restart' } } }, { 'mcp-session-id': sid });
    assert.equal(res.status, 200);
    const { result } = await res.json();
    // The negotiated version survived too: 2025-06-18 gets structuredContent.
    assert.deepEqual(result.structuredContent, { message: 'after restart' });
    const unknown = await post(url2, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': 'f0f0f0f0-0000-4000-8000-000000000000' });
    assert.equal(unknown.status, 404);
  } finally {
    await second.mf.dispose();
    await upstream.close();
  }
});

test('a resumable stream replays its stored events after the runtime restarts', async () => {
  const { sseEvents } = await import('./harness.mjs');
  const upstream = await startTestUpstream();
  const persist = freshPersistDir();
  const first = await startMiniflare({ upstreamUrl: upstream.url, persist });
  const url = new URL('/mcp', first.url);
  const sid = await openSession(url, '2025-11-25');
  const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'poll_hold', arguments: { key: 'evicted' }, _meta: { progressToken: 'e' } } };
  const res = await post(url, call, { accept: 'text/event-stream', 'mcp-session-id': sid });
  const before = [];
  for await (const e of sseEvents(res)) before.push(e);
  assert.equal(before.length, 3, 'priming, progress and log, then the early close');
  const stream = before[0].id.split('-')[0];
  await first.mf.dispose();

  const second = await startMiniflare({ upstreamUrl: upstream.url, persist });
  try {
    const url2 = new URL('/mcp', second.url);
    const resumed = await fetch(url2, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'last-event-id': `${stream}-0` } });
    assert.equal(resumed.status, 200);
    const replay = [];
    for await (const e of sseEvents(resumed)) replay.push(e);
    assert.deepEqual(replay.map((e) => e.id), [`${stream}-1`, `${stream}-2`]);
    assert.deepEqual(replay.map((e) => e.data), [before[1].data, before[2].data]);
  } finally {
    upstream.release('evicted', 'late');
    await second.mf.dispose();
    await upstream.close();
  }
});
