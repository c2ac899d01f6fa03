// A session's life (PROTOCOL.md §2.3): a delete is one transaction that removes the session's
// history, queue, open questions, schedules, shares, webhook deliveries and home snapshot, keeps
// the ledger's sums (what was spent stays spent), and leaves a tombstone: the id is never used
// again, and the files are removed after the commit (again at the next start if a crash came
// between), and the contents of its prompts' files that no other session names. A fork shares its source's first messages (session-line.ts): a deleted session's rows
// stay as far as a live line still reads them, hidden from everything else (their row marked as
// its own branch), and go once nothing reads them. The SQL is the same for SQLite and PostgreSQL
// (`$n` parameters, bound by number): `$1` the session, `$2` now, `$3` who.

/**
 * `dead`: the rows this delete may free: the session's, its branches', and up its chain the rows
 * of sessions deleted before that its line alone still kept. `keep`: how far each is still read by
 * a line that lives (a fork's, or another kept row's), through the chain. Only `$1`'s chain is
 * read, however many sessions were deleted before.
 */
const DEAD_AND_KEPT = `WITH RECURSIVE dead(sid, parent_sid, parent_upto) AS (
    SELECT sid, parent_sid, parent_upto FROM sessions WHERE sid = $1 OR branch_of = $1
    UNION ALL
    SELECT p.sid, p.parent_sid, p.parent_upto FROM sessions p JOIN dead d ON p.sid = d.parent_sid
    WHERE p.branch_of IN (SELECT sid FROM deleted_sessions)
  ),
  keep(sid, upto) AS (
    SELECT s.parent_sid, s.parent_upto FROM sessions s
    WHERE s.parent_sid IN (SELECT sid FROM dead) AND s.sid NOT IN (SELECT sid FROM dead)
    UNION ALL
    SELECT d.parent_sid, CASE WHEN k.upto < d.parent_upto THEN k.upto ELSE d.parent_upto END
    FROM keep k JOIN dead d ON d.sid = k.sid
    WHERE d.parent_sid IN (SELECT sid FROM dead) AND d.parent_upto > 0
  )`;

/** A dead row's messages from this position on are read by no live line. */
const UNREAD_FROM = '(SELECT COALESCE(MAX(k.upto), 0) FROM keep k WHERE k.sid = m.sid)';

/** The delete's statements, in order (the StoreWriter's `deleteSession`). */
/** A delete of the rows of `table` (by sha256) whose contents no other session names or keeps in its home. */
function onlyThisSessionHeld(table: 'home_contents' | 'content_chunks'): string {
  return `DELETE FROM ${table} WHERE sha256 IN (
      SELECT e.sha256 FROM home_entries e WHERE e.sid = $1 UNION SELECT b.sha256 FROM session_blobs b WHERE b.sid = $1)
    AND NOT EXISTS (SELECT 1 FROM home_entries o WHERE o.sha256 = ${table}.sha256 AND o.sid <> $1)
    AND NOT EXISTS (SELECT 1 FROM session_blobs o WHERE o.sha256 = ${table}.sha256 AND o.sid <> $1)`;
}

export const DELETE_SQL = {
  /**
   * First, the session's row is written: on PostgreSQL that holds it until the commit, so a fork
   * being made of it (which holds the row before it reads the line, FORK_LOCK_SQL) commits wholly
   * before the delete, which then keeps what the fork reads, or after, and finds no source.
   */
  holdDeletedSession: 'UPDATE sessions SET updated_at = updated_at WHERE sid = $1',
  /** The tombstone, with what the removal of its files needs (its agent, owner and folder), first: the rest reads it. */
  tombstoneSession: `INSERT INTO deleted_sessions (sid, deleted_at, by_user, agent, owner, cwd, flat_workspace, files_pending)
    SELECT sid, $2, $3, agent, (SELECT a.user_name FROM session_access a WHERE a.sid = $1 AND a.role = 'owner'), cwd, flat_workspace, 1
    FROM sessions WHERE sid = $1`,
  /** Its turns that no live line shows (the ledger's daily sums keep what they spent). */
  deleteSessionTurns: `${DEAD_AND_KEPT} DELETE FROM turns WHERE turn_id IN (
    SELECT m.turn_id FROM messages m WHERE m.sid IN (SELECT sid FROM dead) AND m.turn_id IS NOT NULL AND m.seq >= ${UNREAD_FROM})`,
  deleteSessionMessages: `${DEAD_AND_KEPT} DELETE FROM messages WHERE sid IN (SELECT sid FROM dead) AND seq >= (SELECT COALESCE(MAX(k.upto), 0) FROM keep k WHERE k.sid = messages.sid)`,
  deleteSessionRows: `${DEAD_AND_KEPT} DELETE FROM sessions WHERE sid IN (SELECT sid FROM dead) AND sid NOT IN (SELECT sid FROM keep WHERE upto > 0)`,
  /** What stays of it is a line that only forks read: out of every list, never loaded or forked. */
  hideSessionLine: "UPDATE sessions SET branch_of = sid, status = 'finalized', end_reason = 'deleted' WHERE sid = $1",
  deleteSessionQueue: 'DELETE FROM queue WHERE sid = $1',
  deleteSessionSubmits: 'DELETE FROM submits WHERE sid = $1',
  deleteSessionRequests: 'DELETE FROM server_requests WHERE sid = $1',
  deleteSessionSchedules: 'DELETE FROM schedules WHERE sid = $1',
  deleteSessionShares: 'DELETE FROM session_access WHERE sid = $1',
  deleteSessionOutbox: 'DELETE FROM webhook_outbox WHERE sid = $1',
  deleteSessionDeliveries: 'DELETE FROM webhook_deliveries WHERE sid = $1',
  /**
   * Contents only this session held (its prompts' files, its home's): their chunks, then their
   * heads (persistence/blobs.ts), then what named them, then its snapshot.
   */
  deleteSessionChunks: onlyThisSessionHeld('content_chunks'),
  deleteSessionContents: onlyThisSessionHeld('home_contents'),
  deleteSessionBlobs: 'DELETE FROM session_blobs WHERE sid = $1',
  deleteSessionHomeEntries: 'DELETE FROM home_entries WHERE sid = $1',
  deleteSessionHomeSnapshot: 'DELETE FROM home_snapshots WHERE sid = $1',
} as const;

export type DeleteStatement = keyof typeof DELETE_SQL;

/** The delete's steps after its hold and its tombstone, in order: each takes the session alone. */
export const DELETE_STEPS = (Object.keys(DELETE_SQL) as DeleteStatement[]).filter(
  (name): name is Exclude<DeleteStatement, 'holdDeletedSession' | 'tombstoneSession'> => name !== 'holdDeletedSession' && name !== 'tombstoneSession',
);

/** A deleted session as its tombstone keeps it: what removing its files needs. */
export interface Tombstone {
  sid: string;
  deleted_at: number;
  agent: string | null;
  owner: string | null;
  cwd: string | null;
  flat_workspace: boolean;
}

export const TOMBSTONE_SQL = 'SELECT sid FROM deleted_sessions WHERE sid = $1';
/** Tombstones whose files are still to be removed (a crash came between the commit and the files), or deleted since `$1`. */
export const TOMBSTONES_SQL = `SELECT sid, deleted_at, agent, owner, cwd, flat_workspace FROM deleted_sessions
  WHERE files_pending = 1 OR deleted_at >= $1 ORDER BY deleted_at`;
/**
 * After the files: the session's turns that no row shows (a failed or lost turn has no messages),
 * then the tombstone marked done. Not in the delete's commit: the turns have no index by session
 * (a turn would write it), so this reads them all, ~90 ms for a million turns on SQLite.
 */
export const FINISH_DELETE_SQL = [
  `DELETE FROM turns WHERE sid = $1 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.turn_id = turns.turn_id
     AND m.sid IN (SELECT s.sid FROM sessions s WHERE s.sid = turns.sid OR s.branch_of = turns.sid))`,
  'UPDATE deleted_sessions SET files_pending = 0 WHERE sid = $1',
] as const;

/** PostgreSQL's bigint and boolean, SQLite's integers: a tombstone as both answer it. */
export function toTombstone(row: { sid: string; deleted_at: number | string; agent: string | null; owner: string | null; cwd: string | null; flat_workspace: boolean | number }): Tombstone {
  return { sid: row.sid, deleted_at: Number(row.deleted_at), agent: row.agent, owner: row.owner, cwd: row.cwd, flat_workspace: row.flat_workspace === true || row.flat_workspace === 1 };
}
