// What PostgreSQL's recovery adds to the statements both stores run (../crash-recovery.ts): the
// steered texts a turn never took put back at the head of their queues in one statement, and one
// session recovered on its own, as a node takes over a session whose node died.
import type pg from 'pg';
import { LOST_TURNS_SQL, numericStart } from '../crash-recovery.js';
import { ROLL_UP_SESSION_LOST_SQL } from '../ledger.js';
import type { LostTurn, Takeover } from '../store.js';

/**
 * Steered texts the turn never took go back to the head of their queue, in the order steered
 * (PROTOCOL.md §2.1): every session's ($1 null), or one session's.
 */
export const REQUEUE_STEERED = `
  WITH steered AS (
    SELECT queue_id, sid, row_number() OVER (PARTITION BY sid ORDER BY position) AS i, count(*) OVER (PARTITION BY sid) AS n
    FROM queue WHERE steered = 1 AND ($1::text IS NULL OR sid = $1)
  ), heads AS (SELECT sid, min(position) AS head FROM queue WHERE steered = 0 AND ($1::text IS NULL OR sid = $1) GROUP BY sid)
  UPDATE queue SET steered = 0, position = COALESCE(heads.head, steered.n) - steered.n + steered.i - 1
  FROM steered LEFT JOIN heads ON heads.sid = steered.sid
  WHERE queue.queue_id = steered.queue_id`;

/**
 * What a node that lost the session left running dies with it: durability rule 5, for one
 * session. Says which turns were lost and which requests expired, for the session's clients.
 */
export async function recoverSession(client: pg.PoolClient, sid: string, now = Date.now()): Promise<Omit<Takeover, 'fromNode'>> {
  const lost = (await client.query<LostTurn>(LOST_TURNS_SQL, [sid])).rows.map(numericStart);
  await client.query(ROLL_UP_SESSION_LOST_SQL, [now, sid]);
  await client.query("UPDATE turns SET status = 'lost', ended_at = $2, error = 'node lost' WHERE sid = $1 AND status = 'running'", [sid, now]);
  await client.query(
    "UPDATE sessions SET status = 'retained', retained_reason = 'crash', end_reason = NULL, updated_at = $2 WHERE sid = $1 AND status = 'active'",
    [sid, now],
  );
  const requests = await client.query<{ id: string; method: string }>(
    "UPDATE server_requests SET status = 'expired', reason = 'node lost', resolved_at = $2 WHERE sid = $1 AND status = 'open' RETURNING id, method",
    [sid, now],
  );
  await client.query(REQUEUE_STEERED, [sid]);
  return { lostTurns: lost, expiredRequests: requests.rows };
}
