// Aligned plain-text tables for the CLI and the REPL.

export type Cell = string | number | boolean | null | undefined;

export function formatTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '' : String(cell))));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(headers), ...text.map(line)].join('\n') + '\n';
}

export function printTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): void {
  process.stdout.write(formatTable(headers, rows));
}
