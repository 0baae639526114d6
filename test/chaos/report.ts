import type { ScenarioResult } from './scenario';

/** Outcomes in one cell: `executed 120 · replayed 98`, zero counts left out. */
function outcomesCell(outcomes: Readonly<Record<string, number>>): string {
  const shown = Object.entries(outcomes).filter(([, count]) => count > 0);
  return shown.length === 0 ? '-' : shown.map(([kind, count]) => `${kind} ${count}`).join(' · ');
}

const COLUMNS = [
  'scenario',
  'calls',
  'requests',
  'lost answers',
  'retries',
  'outcomes',
  'double effects',
  '503',
  'other 5xx',
  'duration',
] as const;

/** The figures of every scenario as a Markdown table (it reads in a terminal and pastes into README). */
export function figuresTable(results: readonly ScenarioResult[]): string {
  const rows = results.map((result) => [
    result.name,
    String(result.calls),
    String(result.requests),
    String(result.lost),
    String(result.retries),
    outcomesCell(result.outcomes),
    String(result.doubleEffects),
    String(result.unavailable),
    String(result.otherServerErrors),
    `${(result.durationMs / 1000).toFixed(1)} s`,
  ]);
  const widths = COLUMNS.map((column, i) => Math.max(column.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => (i === 0 || i === 5 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((width, i) => (i === 0 || i === 5 ? `:${'-'.repeat(width + 1)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(COLUMNS), rule, ...rows.map(line)].join('\n');
}

/** Notes and violations, scenario by scenario. */
export function details(results: readonly ScenarioResult[]): string {
  return results
    .map((result) =>
      [
        `${result.name}:`,
        ...result.notes.map((note) => `  ${note}`),
        ...result.violations.map((violation) => `  VIOLATION ${violation}`),
      ].join('\n'),
    )
    .join('\n');
}
