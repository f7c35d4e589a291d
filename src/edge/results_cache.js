/**
 * A tool's kept results in the Workers Cache API (`caches.default`), under internal URLs no
 * request can reach. A Cache API that is missing or fails is a miss, never an error: the call
 * goes upstream as if nothing were kept.
 */

/** `storedMs\netag\nresult JSON`, or '' when nothing is kept under `key`. */
export async function kept_get(key) {
  try {
    const cache = globalThis.caches?.default;
    const found = cache ? await cache.match(key) : undefined;
    if (!found) return '';
    return (found.headers.get('x-mcp-edge-stored') ?? '0') + '\n' + (found.headers.get('x-mcp-edge-etag') ?? '') + '\n' + (await found.text());
  } catch {
    return '';
  }
}

/** Keeps `body` under `key` for `keepSeconds`, with when it was stored and its ETag. */
export async function kept_put(key, body, etag, storedMs, keepSeconds) {
  try {
    const cache = globalThis.caches?.default;
    if (!cache) return;
    const headers = { 'content-type': 'application/json', 'cache-control': `max-age=${keepSeconds}`, 'x-mcp-edge-stored': String(storedMs) };
    if (etag) headers['x-mcp-edge-etag'] = etag;
    await cache.put(key, new Response(body, { headers }));
  } catch {
    // Not kept: the next call goes upstream.
  }
}

/** The reply's `ETag`, or ''. */
export function reply_etag(response) {
  return response.headers.get('etag') ?? '';
}
