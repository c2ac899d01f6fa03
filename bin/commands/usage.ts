// `turnhost usage` (PROTOCOL.md §5.7): the ledger's totals by person, session, model, agent or day, read
// from the store itself, so it answers with the daemon down. Everyone's: the CLI runs as the home's owner.
import { parseDay } from '../../persistence/ledger.js';
import { USAGE_GROUPS, type UsageGroup, type UsageRow } from '../../protocol/usage.js';
import { printTable } from '../table.js';
import { withSideStore, type StoreFlag } from '../side-store-command.js';

export interface UsageFlags extends StoreFlag {
  by?: string;
  since?: string;
  until?: string;
  json?: boolean;
}

export async function usageCommand(home: string, options: UsageFlags): Promise<number> {
  const by = (options.by ?? 'person') as UsageGroup;
  if (!USAGE_GROUPS.includes(by)) return wrong(`--by must be one of ${USAGE_GROUPS.join(', ')}`);
  for (const [flag, value] of [['--since', options.since], ['--until', options.until]] as const) {
    if (value !== undefined && parseDay(value) === null) return wrong(`${flag} must be a date, YYYY-MM-DD (a UTC day)`);
  }
  const query = { by, since: options.since ?? null, until: options.until ?? null, ownedBy: null };
  const rows = await withSideStore(home, options, 'usage', (side) => side.ledger.usage(query));
  if (rows === null) return 1;
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ by, since: query.since, until: query.until, rows })}\n`);
    return 0;
  }
  printTable([by.toUpperCase(), 'TURNS', 'PROMPT', 'COMPLETION', 'CACHED', 'REASONING', 'CALLS', 'TIME'], [...rows, total(rows)].map(line(by)));
  return 0;
}

const line =
  (by: UsageGroup) =>
  (row: UsageRow): (string | number)[] => [
    row.key === '' && (by === 'model' || by === 'agent') ? '(unknown)' : row.key,
    row.turns,
    row.prompt_tokens,
    row.completion_tokens,
    row.cached_tokens,
    row.reasoning_tokens,
    row.calls,
    duration(row.duration_ms),
  ];

function total(rows: readonly UsageRow[]): UsageRow {
  const sum: UsageRow = { key: 'TOTAL', turns: 0, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, calls: 0, duration_ms: 0 };
  for (const row of rows) for (const key of Object.keys(sum) as (keyof UsageRow)[]) if (key !== 'key') sum[key] += row[key];
  return sum;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function wrong(message: string): number {
  process.stderr.write(`turnhost usage: ${message}\n`);
  return 2;
}
