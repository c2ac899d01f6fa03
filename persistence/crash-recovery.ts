// What a host that died left, made right at the next host's start (DESIGN.md, durability rule 5):
// its boot closed as a crash, its running turns lost, the sessions it left active retained
// (reason `crash`), its open requests expired. Both stores run these statements, in one
// transaction with the ledger's roll-up of the lost turns; `$1` is the time of the recovery.
import type { LostTurn } from './store.js';

/** The running turns' rows as the lost ones are read, before they are marked; `$1`: the session, or null for all. */
export const LOST_TURNS_SQL = `SELECT turn_id AS "turnId", sid, (SELECT agent FROM sessions s WHERE s.sid = turns.sid) AS agent,
  started_at AS "startedAt", by_user AS "by", trace FROM turns
  WHERE status = 'running' AND (CAST($1 AS TEXT) IS NULL OR sid = $1)`;

/** PostgreSQL's bigint arrives as a string. */
export function numericStart(turn: LostTurn): LostTurn {
  return { ...turn, startedAt: Number(turn.startedAt) };
}

export const CRASH_RECOVERY_SQL = {
  closeBoots: "UPDATE boots SET ended_at = $1, end_reason = 'crash' WHERE ended_at IS NULL",
  loseTurns: "UPDATE turns SET status = 'lost', ended_at = $1, error = 'host died' WHERE status = 'running'",
  retainSessions: "UPDATE sessions SET status = 'retained', retained_reason = 'crash', end_reason = NULL, updated_at = $1 WHERE status = 'active'",
  expireRequests: "UPDATE server_requests SET status = 'expired', reason = 'host died', resolved_at = $1 WHERE status = 'open'",
} as const;
