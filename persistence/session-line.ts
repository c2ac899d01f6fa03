// A session's history is a line (PROTOCOL.md §2.2): a fork shares its source's first messages
// rather than copying them. Its row names its parent (`parent_sid`) and how many of the parent's
// line it takes (`parent_upto`); its own rows follow from there, at the same positions (`seq`).
// The parent may itself be a fork: the line is read through the chain, one query, whatever the
// length. A session without a parent reads as it always did.
//
// A rewind supersedes the turns after a point without deleting them: their rows move, unchanged,
// to a branch of the session (a row with `branch_of`), whose line is the one the session left.
// A fork that shared what moved is pointed at the branch, so that its own line never changes.
// The SQL here is the same for SQLite and PostgreSQL (`$n` parameters, bound by number).

/** Above any position: the top of a chain's first segment. */
const NO_END = '9007199254740991';

/**
 * The segments of `$1`'s line: each session of the chain with the position its part ends at (`hi`,
 * exclusive); every row of a session sits at or above its own `parent_upto`.
 */
export const LINE_CTE = lineCte('$1');

function lineCte(sid: string): string {
  return `WITH RECURSIVE line(sid, hi, parent, upto) AS (
    SELECT sid, ${NO_END}, parent_sid, parent_upto FROM sessions WHERE sid = ${sid}
    UNION ALL
    SELECT s.sid, line.upto, s.parent_sid, s.parent_upto FROM sessions s JOIN line ON s.sid = line.parent
  )`;
}

/** The turn of the line (`turn`: a parameter holding its id, or null for the last ended one), with its span. */
function spanSelect(turn: string): string {
  return `SELECT m.turn_id AS turn_id, MIN(m.seq) AS start, MAX(m.seq) + 1 AS upto FROM line JOIN messages m ON m.sid = line.sid AND m.seq < line.hi
  JOIN turns t ON t.turn_id = m.turn_id
  WHERE (CAST(${turn} AS TEXT) IS NULL AND t.status <> 'running') OR m.turn_id = CAST(${turn} AS TEXT)
  GROUP BY m.turn_id ORDER BY upto DESC LIMIT 1`;
}

/** The line's messages with `columns` (of `m`), in order; `range`: positions [$2, $3) only. */
export function lineMessagesSql(columns: string, range = false): string {
  return `${LINE_CTE} SELECT ${columns} FROM line JOIN messages m ON m.sid = line.sid AND m.seq < line.hi${range ? ' AND m.seq >= $2 AND m.seq < $3' : ''} ORDER BY m.seq`;
}

/** The line's last `$2` messages, newest first. */
export function lineTailSql(columns: string): string {
  return `${LINE_CTE} SELECT ${columns} FROM line JOIN messages m ON m.sid = line.sid AND m.seq < line.hi ORDER BY m.seq DESC LIMIT $2`;
}

/** How many messages a session's line holds (its rows sit above its prefix: the last one, or the prefix). */
export const MESSAGE_COUNT_SQL = '(SELECT COALESCE(MAX(seq) + 1, COALESCE(sessions.parent_upto, 0)) FROM messages WHERE messages.sid = sessions.sid)';

/**
 * The position after turn `turn`'s last message in the line (or the last ended turn's, `turn` null),
 * found by reading each segment backwards from its top, index-ordered, stopping at the first of its
 * messages: the last turn costs the same however long the line is.
 */
function lastOfTurn(turn: string): string {
  const found = `(SELECT m.seq FROM messages m JOIN turns t ON t.turn_id = m.turn_id
      WHERE m.sid = line.sid AND m.seq < line.hi AND ((CAST(${turn} AS TEXT) IS NULL AND t.status <> 'running') OR m.turn_id = CAST(${turn} AS TEXT))
      ORDER BY m.seq DESC LIMIT 1)`;
  return `SELECT (SELECT turn_id FROM messages WHERE sid = hit.sid AND seq = hit.last) AS turn_id, hit.last + 1 AS upto
    FROM (SELECT line.sid AS sid, ${found} AS last FROM line) hit WHERE hit.last IS NOT NULL ORDER BY hit.last DESC LIMIT 1`;
}

/**
 * Where turn `$2` lies in the line of `$1` (its first position, and the one after its last), or
 * the last turn that has ended (`$2` null). None when there is no such turn.
 */
export const TURN_SPAN_SQL = `${LINE_CTE} ${spanSelect('$2')}`;

/**
 * A fork (PROTOCOL.md §2.2), in one statement whose cost does not grow with the source's length:
 * session `$1` (key `$2`, folder `$3`, made at `$4`) takes the line of `$5` up to turn `$6` (null:
 * its last ended turn) as its own first messages, without copying them, and its settings. Nothing
 * is written when the source or the turn is not there. Returns the fork's row.
 */
export const FORK_SQL = `${lineCte('$5')}, span AS (${lastOfTurn('$6')})
  INSERT INTO sessions (sid, session_key, status, history_version, overrides, cwd, created_at, updated_at, parent_sid, parent_upto, forked_from_sid, forked_from_turn, agent)
  SELECT $1, $2, 'active', 0, s.overrides, $3, $4, $4, s.sid, span.upto, s.sid, span.turn_id, COALESCE($7, s.agent)
  FROM sessions s, span WHERE s.sid = $5 AND s.branch_of IS NULL
  RETURNING parent_upto AS upto, forked_from_turn AS turn_id`;

/** What a fork on PostgreSQL holds before FORK_SQL reads the source's line, in the same transaction (REWIND_SQL.holdSession). */
export const FORK_LOCK_SQL = 'SELECT 1 FROM sessions WHERE sid = $1 FOR SHARE';

/**
 * Where fork `$1` may take its guest's memory from (AGENT.md §6, PROTOCOL.md §2.2): its source's
 * guest session, when the fork was made at the source's last ended turn and the source has not
 * moved since (that turn is still its last, none runs, its guest session is kept). No row otherwise.
 */
export const FORK_ORIGIN_SQL = `${lineCte('(SELECT forked_from_sid FROM sessions WHERE sid = $1)')}, span AS (${lastOfTurn('NULL')})
  SELECT src.sid AS sid, src.agent_session_id AS agent_session_id
  FROM sessions f JOIN sessions src ON src.sid = f.forked_from_sid JOIN span ON span.turn_id = f.forked_from_turn
  WHERE f.sid = $1 AND src.agent_session_id IS NOT NULL AND src.agent IS NOT DISTINCT FROM f.agent
    AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.sid = src.sid AND t.status = 'running')`;

/** The turns of a session's own rows from position `$2` on: what a rewind there supersedes. */
export const OWN_TURNS_FROM_SQL = 'SELECT turn_id FROM messages WHERE sid = $1 AND seq >= $2 AND turn_id IS NOT NULL GROUP BY turn_id ORDER BY MIN(seq)';

/**
 * The rewind's statements, in order (PROTOCOL.md §2.2), for session `sid`, keeping its first `keep`
 * messages, the rest going to branch `branch`:
 */
export const REWIND_SQL = {
  /**
   * First, the session's row is written: on PostgreSQL that holds it until the commit, and a fork
   * of it (which holds the row before it reads the line, FORK_LOCK_SQL) is made wholly before the
   * rewind, and repointed by it, or wholly after, on the line the rewind left; never on rows
   * it moves from under the fork's snapshot. SQLite has one writer at a time.
   */
  holdSession: 'UPDATE sessions SET updated_at = $2 WHERE sid = $1',
  /** The branch: the session's line as it was (its parent's part, if the rewind cuts into it, and its own rows). */
  insertBranch: `INSERT INTO sessions (sid, session_key, status, end_reason, history_version, overrides, cwd, created_at, updated_at, parent_sid, parent_upto, branch_of)
    SELECT $1, session_key, 'finalized', 'superseded', history_version, overrides, cwd, $2, $2,
      CASE WHEN COALESCE(parent_upto, 0) > $4 THEN parent_sid ELSE sid END,
      CASE WHEN COALESCE(parent_upto, 0) > $4 THEN parent_upto ELSE $4 END, sid
    FROM sessions WHERE sid = $3`,
  /** Its rows from `keep` on, moved as they are. */
  moveRows: 'UPDATE messages SET sid = $1 WHERE sid = $2 AND seq >= $3',
  /** Forks that shared what moved read it from the branch now: their lines do not change. */
  repointForks: 'UPDATE sessions SET parent_sid = $1 WHERE parent_sid = $2 AND parent_upto > $3 AND sid <> $1',
  /** A rewind into the shared prefix takes less of the parent. */
  shortenPrefix: 'UPDATE sessions SET parent_upto = $1 WHERE sid = $2 AND parent_upto > $1',
  /** The session's turns that moved are marked: when, by whom, where they went. */
  markTurns: 'UPDATE turns SET superseded_at = $1, superseded_by = $2, branch_sid = $3 WHERE turn_id IN (SELECT turn_id FROM messages WHERE sid = $3 AND turn_id IS NOT NULL)',
} as const;

/** A branch's id: the session's, a `~`, and its number among the session's branches. */
export function branchId(sid: string, existing: number): string {
  return `${sid}~${existing + 1}`;
}
