// `turnhost sessions` and `turnhost history ID`: read from the database, daemon up or down.
import { Reader, SESSION_STATUSES, type HistoryEntry, type SessionSummary } from '../../persistence/reader.js';
import type { SessionStatus } from '../../persistence/store.js';
import { homePaths } from '../home.js';
import { printTable } from '../table.js';

export const EXIT_UNKNOWN_SESSION = 4;

export function sessionsCommand(home: string, options: { json?: boolean; status?: string }): number {
  if (options.status !== undefined && !(SESSION_STATUSES as readonly string[]).includes(options.status)) {
    process.stderr.write(`turnhost sessions: --status must be one of ${SESSION_STATUSES.join(', ')}\n`);
    return 2;
  }
  const reader = Reader.open(homePaths(home).database);
  const sessions: SessionSummary[] = reader ? reader.sessions(options.status as SessionStatus | undefined) : [];
  reader?.close();
  if (options.json) {
    process.stdout.write(`${JSON.stringify(sessions)}\n`);
    return 0;
  }
  printTable(
    ['SESSION', 'STATUS', 'REASON', 'MESSAGES', 'VERSION', 'UPDATED'],
    sessions.map((s) => [s.session_id, s.status, s.end_reason ?? s.retained_reason ?? '', s.message_count, s.history_version, s.updated_at]),
  );
  return 0;
}

export function historyCommand(home: string, sid: string, options: { json?: boolean }): number {
  const reader = Reader.open(homePaths(home).database);
  const history: HistoryEntry[] | undefined = reader?.history(sid);
  reader?.close();
  if (history === undefined) {
    process.stderr.write(`turnhost history: unknown session: ${sid}\n`);
    return EXIT_UNKNOWN_SESSION;
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(history)}\n`);
    return 0;
  }
  for (const m of history) process.stdout.write(`[${m.seq}] ${m.role}: ${m.content}\n`);
  return 0;
}
