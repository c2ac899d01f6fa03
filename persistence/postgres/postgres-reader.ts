// Read-only access to the sessions in PostgreSQL, for the CLI, the supervisor and the REPL. The
// queries are the SQLite reader's where the dialects agree; `.sql` runs in a READ ONLY transaction.
import { TOMBSTONE_SQL } from '../session-life.js';
import { EXPORT_TURN_COLUMNS, readExport, type ExportLine, type ExportTurnRow } from '../session-export.js';
import pg from 'pg';
import {
  FORKS_SQL,
  forkOrigin,
  NOT_A_BRANCH,
  SUBMITTED_SQL,
  TURN_SQL,
  SESSION_TURNS_SQL,
  type StoredTurn,
  TURN_USAGE_COLUMNS,
  SUMMARY_COLUMNS,
  withSuperseded,
  type ForkOrigin,
  type HistoryOptions,
  toHistoryEntry,
  toListed,
  toSummary,
  withTurnUsage,
  type ClusterNode,
  type ListedSession,
  type LeaseView,
  type PeerNode,
  type QueryResult,
  type Reader,
  type SessionRow,
  type SessionSummary,
  type TurnUsageRow,
  SESSION_FOLDERS_SQL,
} from '../reader.js';
import { type HistoryEntry } from '../../protocol/history-entry.js';
import { LINE_HISTORY_SQL, LINE_TAIL_SQL, SUPERSEDED_SQL, type SupersededRow, type HistoryRow } from '../history-rows.js';
import type { StoreLocation } from '../store-location.js';
import type { SessionStatus } from '../store.js';
import { described, readPool } from './connection.js';
import { SCHEMA } from './schema.js';

export class PostgresReader implements Reader {
  readonly description: string;

  private constructor(
    private readonly pool: pg.Pool,
    location: Extract<StoreLocation, { kind: 'postgres' }>,
  ) {
    this.description = location.shown;
  }

  /** Null when the host has not made the schema yet; throws when the server cannot be reached. */
  static async open(location: Extract<StoreLocation, { kind: 'postgres' }>): Promise<PostgresReader | null> {
    const pool = readPool(location);
    try {
      const { rows } = await pool.query<{ made: boolean }>('SELECT to_regclass($1) IS NOT NULL AS made', [`${SCHEMA}.schema_version`]);
      if (rows[0]?.made === true) return new PostgresReader(pool, location);
    } catch (err) {
      await pool.end().catch(() => {});
      throw described(err as Error);
    }
    await pool.end();
    return null;
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, values)).rows;
    } catch (err) {
      throw described(err as Error);
    }
  }

  async sessions(status?: SessionStatus, archived = false): Promise<ListedSession[]> {
    const rows = await this.rows<SessionRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM sessions WHERE ${NOT_A_BRANCH} ${archived ? '' : 'AND archived_at IS NULL'} ${status ? 'AND status = $1' : ''} ORDER BY updated_at, sid`,
      status ? [status] : [],
    );
    return rows.map(toListed);
  }

  async exportSession(sid: string): Promise<ExportLine[] | undefined> {
    // One snapshot: a turn committed meanwhile is in the file whole or not at all.
    const client = await this.pool.connect().catch((err: Error) => {
      throw described(err);
    });
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const rows = async <R>(text: string, values: unknown[]) => (await client.query(text, values)).rows as R[];
      const lines = await readExport({ rows, turns: (ids) => rows<ExportTurnRow>(`SELECT ${EXPORT_TURN_COLUMNS} FROM turns WHERE turn_id = ANY($1)`, [ids]) }, sid);
      await client.query('COMMIT');
      return lines;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw described(err as Error);
    } finally {
      client.release();
    }
  }

  async isDeleted(sid: string): Promise<boolean> {
    return (await this.rows(TOMBSTONE_SQL, [sid])).length > 0;
  }

  async session(sid: string): Promise<SessionSummary | undefined> {
    const [row] = await this.rows<SessionRow>(`SELECT ${SUMMARY_COLUMNS} FROM sessions WHERE sid = $1 AND ${NOT_A_BRANCH}`, [sid]);
    return row && toSummary(row);
  }

  async queues(): Promise<{ session_id: string; queued: number; oldest: string }[]> {
    const rows = await this.rows<{ sid: string; n: number; oldest: number }>(
      'SELECT sid, count(*) AS n, min(queued_at) AS oldest FROM queue WHERE steered = 0 GROUP BY sid ORDER BY sid',
    );
    return rows.map((r) => ({ session_id: r.sid, queued: r.n, oldest: new Date(r.oldest).toISOString() }));
  }

  async sessionFolders(): Promise<string[]> {
    return (await this.rows<{ cwd: string }>(SESSION_FOLDERS_SQL)).map((row) => row.cwd);
  }

  async statusCounts(): Promise<Record<SessionStatus, number>> {
    const counts: Record<SessionStatus, number> = { active: 0, finalized: 0, retained: 0 };
    for (const row of await this.rows<{ status: SessionStatus; n: number }>(`SELECT status, count(*) AS n FROM sessions WHERE ${NOT_A_BRANCH} GROUP BY status`)) {
      counts[row.status] = row.n;
    }
    return counts;
  }

  async history(sid: string, options: HistoryOptions = {}): Promise<HistoryEntry[] | undefined> {
    if ((await this.session(sid)) === undefined) return undefined;
    const rows =
      options.limit === undefined
        ? await this.rows<HistoryRow>(LINE_HISTORY_SQL, [sid])
        : (await this.rows<HistoryRow>(LINE_TAIL_SQL, [sid, options.limit])).reverse();
    const live = await withTurnUsage(rows.map(toHistoryEntry), async (turnIds) => {
      const usage = await this.rows<TurnUsageRow & { turn_id: string }>(
        `SELECT turn_id, ${TURN_USAGE_COLUMNS} FROM turns WHERE turn_id = ANY($1)`,
        [turnIds],
      );
      return new Map(usage.map((row) => [row.turn_id, row]));
    });
    return options.all ? withSuperseded(live, await this.rows<SupersededRow>(SUPERSEDED_SQL, [sid])) : live;
  }

  async turn(turnId: string): Promise<StoredTurn | undefined> {
    const [row] = await this.rows<StoredTurnRow>(TURN_SQL, [turnId]);
    return row === undefined ? undefined : storedTurn(row);
  }

  async turns(sid: string): Promise<StoredTurn[]> {
    return (await this.rows<StoredTurnRow>(SESSION_TURNS_SQL, [sid])).map(storedTurn);
  }

  async submitted(sid: string, clientMessageId: string): Promise<boolean> {
    return (await this.rows(SUBMITTED_SQL, [sid, clientMessageId])).length > 0;
  }

  async forks(sid: string): Promise<{ forked_from: ForkOrigin | null; forks: ForkOrigin[] } | undefined> {
    const [row] = await this.rows<Pick<SessionRow, 'forked_from_sid' | 'forked_from_turn'>>(`SELECT forked_from_sid, forked_from_turn FROM sessions WHERE sid = $1 AND ${NOT_A_BRANCH}`, [sid]);
    if (row === undefined) return undefined;
    const forks = await this.rows<{ sid: string; forked_from_turn: string | null }>(FORKS_SQL, [sid]);
    return { forked_from: forkOrigin(row), forks: forks.map((f) => ({ session_id: f.sid, turn_id: f.forked_from_turn })) };
  }

  async nodes(): Promise<ClusterNode[]> {
    return this.rows<ClusterNode>(
      `SELECT node_id, url, (extract(epoch FROM now() - heartbeat_at) * 1000)::int AS heartbeat_age_ms, sessions, catalogue
       FROM nodes ORDER BY node_id`,
    );
  }

  async liveOwner(sid: string, self: string): Promise<PeerNode | null> {
    const [owner] = await this.rows<PeerNode>(
      'SELECT l.node_id, n.url FROM leases l LEFT JOIN nodes n USING (node_id) WHERE l.sid = $1 AND l.node_id <> $2 AND l.expires_at > now()',
      [sid, self],
    );
    return owner ?? null;
  }

  async lease(sid: string): Promise<LeaseView | null> {
    const [lease] = await this.rows<LeaseView>(
      `SELECT node_id, epoch, greatest(0, extract(epoch FROM expires_at - now()) * 1000)::int AS expires_in_ms,
              (SELECT turn_id FROM turns WHERE turns.sid = leases.sid AND status = 'running' LIMIT 1) AS running_turn
       FROM leases WHERE sid = $1`,
      [sid],
    );
    return lease ?? null;
  }

  async clusterSecret(): Promise<string | null> {
    const [row] = await this.rows<{ secret: string }>('SELECT secret FROM cluster_secret');
    return row?.secret ?? null;
  }

  async query(sql: string): Promise<QueryResult> {
    const client = await this.pool.connect().catch((err: Error) => Promise.reject(described(err)));
    try {
      await client.query('BEGIN READ ONLY');
      const result = await client.query(sql);
      return { columns: result.fields.map((f) => f.name), rows: result.rows as Record<string, unknown>[] };
    } catch (err) {
      const code = (err as Error & { code?: string }).code;
      if (code === '25006') throw new Error('read-only: .sql runs queries that return rows; this statement would write, and is refused');
      throw described(err as Error);
    } finally {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** PostgreSQL's bigint times as they come (strings). */
type StoredTurnRow = Omit<StoredTurn, 'started_at' | 'ended_at'> & { started_at: string | number; ended_at: string | number | null };

function storedTurn(row: StoredTurnRow): StoredTurn {
  return { ...row, started_at: Number(row.started_at), ended_at: row.ended_at === null ? null : Number(row.ended_at) };
}
