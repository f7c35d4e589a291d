//! The doctor's two outputs: a report for people (✓ ✗ – per step, each fault in words with its
//! spec section and fix) and one JSON object for scripts.

const MARK = { true: '✓', false: '✗', null: '–' };

export function text(result) {
  const lines = [`mcp-edge doctor ${result.url}`, ''];
  for (const s of result.steps) {
    lines.push(`${MARK[s.ok]} ${s.title}`);
    if (s.ok === false) lines.push(`    ${s.words} [${s.fault}]`);
    if (s.detail) lines.push(`    ${s.detail}`);
    if (s.warning) lines.push(`    note: ${s.warning}`);
    if (s.ok === false) lines.push(`    spec: ${s.spec}`, `    fix: ${s.fix}`);
  }
  lines.push('');
  lines.push(result.ok ? 'Healthy: no fault found.' : `${result.faults.length} fault${result.faults.length === 1 ? '' : 's'}: ${result.faults.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

export function json(result) {
  const steps = result.steps.map(({ id, title, ok, fault, spec, detail, words, fix, warning }) => ({ id, title, ok, fault, spec, detail, ...(words ? { words } : {}), ...(fix ? { fix } : {}), ...(warning ? { warning } : {}) }));
  return `${JSON.stringify({ url: result.url, ok: result.ok, faults: result.faults, steps }, null, 2)}\n`;
}
