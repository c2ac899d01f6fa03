// A session's history as rows (PROTOCOL.md §2.2): the columns both stores read, the statements
// that read a session's line and the paths its rewinds superseded, and where each superseded path
// goes among the live rows. The readers (history) and the export read history through these.
import { lineMessagesSql, lineTailSql } from './session-line.js';

export interface HistoryRow {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  created_at: number;
  tool_calls: string | null;
  tool_call_id: string | null;
  parts: string | null;
}

export const HISTORY_COLUMNS = 'seq, role, content, turn_id, tool_calls, tool_call_id, parts, created_at';

/** The rows of `$1`'s line, for its history (live), oldest first. */
export const LINE_HISTORY_SQL = lineMessagesSql(HISTORY_COLUMNS.split(', ').map((c) => `m.${c}`).join(', '));
/** The last `$2` rows of `$1`'s line, newest first. */
export const LINE_TAIL_SQL = lineTailSql(HISTORY_COLUMNS.split(', ').map((c) => `m.${c}`).join(', '));
/** The rows the rewinds of `$1` superseded: each branch's own, with when and by whom. */
export const SUPERSEDED_SQL = `SELECT b.sid AS branch, ${HISTORY_COLUMNS.split(', ').map((c) => `m.${c}`).join(', ')}, t.superseded_at, t.superseded_by
  FROM sessions b JOIN messages m ON m.sid = b.sid LEFT JOIN turns t ON t.turn_id = m.turn_id
  WHERE b.branch_of = $1 ORDER BY b.created_at, b.sid, m.seq`;

/** A superseded row as stored. */
export type SupersededRow = HistoryRow & { branch: string; superseded_at: number | null; superseded_by: string | null };

/** Each path (in the order they were left) just before the first live entry at or past its first position. */
export function mergeSuperseded<T extends { seq: number }>(live: readonly T[], paths: readonly T[][], isSuperseded: (entry: T) => boolean): T[] {
  const merged = [...live];
  for (const rows of paths) {
    const at = merged.findIndex((entry) => !isSuperseded(entry) && entry.seq >= rows[0]!.seq);
    merged.splice(at === -1 ? merged.length : at, 0, ...rows);
  }
  return merged;
}
