// Read-only access to a home's SQLite database, for the CLI and the supervisor. WAL lets these
// reads run while the host writes.
import { TOMBSTONE_SQL } from '../session-life.js';
import { EXPORT_TURN_COLUMNS, readExport, type ExportLine, type ExportTurnRow } from '../session-export.js';
import { numberedQuery } from './numbered-query.js';
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
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
import type { SessionStatus } from '../store.js';

export class SqliteReader implements Reader {
  /** Each text prepared once: a reader answers the same few queries for every call of every client. */
  private readonly statements = new Map<string, Database.Statement>();

  private constructor(
    readonly db: Database.Database,
    readonly description: string,
  ) {}

  private statement(sql: string): Database.Statement {
    let prepared = this.statements.get(sql);
    if (prepared === undefined) this.statements.set(sql, (prepared = this.db.prepare(sql)));
    return prepared;
  }

  /** Null when the home has no database yet, or the host has created the file but not its schema. */
  static open(file: string): SqliteReader | null {
    if (!existsSync(file)) return null;
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    if ((db.pragma('user_version', { simple: true }) as number) === 0) {
      db.close();
      return null;
    }
    return new SqliteReader(db, `sqlite ${file}`);
  }

  async sessions(status?: SessionStatus, archived = false): Promise<ListedSession[]> {
    const sql = `SELECT ${SUMMARY_COLUMNS} FROM sessions WHERE ${NOT_A_BRANCH} ${archived ? '' : 'AND archived_at IS NULL'} ${status ? 'AND status = ?' : ''} ORDER BY updated_at, sid`;
    const rows = (status ? this.statement(sql).all(status) : this.statement(sql).all()) as SessionRow[];
    return rows.map(toListed);
  }

  async exportSession(sid: string): Promise<ExportLine[] | undefined> {
    const select = this.statement(`SELECT ${EXPORT_TURN_COLUMNS} FROM turns WHERE turn_id = ?`);
    // One read transaction: a turn the host commits meanwhile is in the file whole or not at all.
    // Every statement below runs synchronously: no other caller of this connection comes between.
    this.db.exec('BEGIN');
    try {
      const turns = async (ids: readonly string[]) => ids.map((id) => select.get(id) as ExportTurnRow | undefined).filter((row): row is ExportTurnRow => row !== undefined);
      return await readExport({ rows: numberedQuery(this.db), turns }, sid);
    } finally {
      this.db.exec('COMMIT');
    }
  }

  async isDeleted(sid: string): Promise<boolean> {
    return this.statement(TOMBSTONE_SQL).get({ 1: sid }) !== undefined;
  }

  async session(sid: string): Promise<SessionSummary | undefined> {
    const row = this.statement(`SELECT ${SUMMARY_COLUMNS} FROM sessions WHERE sid = ? AND ${NOT_A_BRANCH}`).get(sid) as SessionRow | undefined;
    return row && toSummary(row);
  }

  async queues(): Promise<{ session_id: string; queued: number; oldest: string }[]> {
    const rows = this.db
      .prepare('SELECT sid, count(*) AS n, min(queued_at) AS oldest FROM queue WHERE steered = 0 GROUP BY sid ORDER BY sid')
      .all() as { sid: string; n: number; oldest: number }[];
    return rows.map((r) => ({ session_id: r.sid, queued: r.n, oldest: new Date(r.oldest).toISOString() }));
  }

  async sessionFolders(): Promise<string[]> {
    return (this.statement(SESSION_FOLDERS_SQL).all() as { cwd: string }[]).map((row) => row.cwd);
  }

  async statusCounts(): Promise<Record<SessionStatus, number>> {
    const counts: Record<SessionStatus, number> = { active: 0, finalized: 0, retained: 0 };
    const rows = this.statement(`SELECT status, count(*) AS n FROM sessions WHERE ${NOT_A_BRANCH} GROUP BY status`).all() as { status: SessionStatus; n: number }[];
    for (const row of rows) counts[row.status] = row.n;
    return counts;
  }

  async history(sid: string, options: HistoryOptions = {}): Promise<HistoryEntry[] | undefined> {
    if ((await this.session(sid)) === undefined) return undefined;
    const rows =
      options.limit === undefined
        ? (this.statement(LINE_HISTORY_SQL).all({ 1: sid }) as HistoryRow[])
        : (this.statement(LINE_TAIL_SQL).all({ 1: sid, 2: options.limit }) as HistoryRow[]).reverse();
    const live = await withTurnUsage(rows.map(toHistoryEntry), async (turnIds) => {
      const select = this.statement(`SELECT ${TURN_USAGE_COLUMNS} FROM turns WHERE turn_id = ?`);
      return new Map(turnIds.map((id) => [id, select.get(id) as TurnUsageRow | undefined]).filter((e): e is [string, TurnUsageRow] => e[1] !== undefined));
    });
    return options.all ? withSuperseded(live, this.statement(SUPERSEDED_SQL).all({ 1: sid }) as SupersededRow[]) : live;
  }

  async turn(turnId: string): Promise<StoredTurn | undefined> {
    return this.statement(TURN_SQL).get({ 1: turnId }) as StoredTurn | undefined;
  }

  async turns(sid: string): Promise<StoredTurn[]> {
    return this.statement(SESSION_TURNS_SQL).all({ 1: sid }) as StoredTurn[];
  }

  async submitted(sid: string, clientMessageId: string): Promise<boolean> {
    return this.statement(SUBMITTED_SQL).get({ 1: sid, 2: clientMessageId }) !== undefined;
  }

  async forks(sid: string): Promise<{ forked_from: ForkOrigin | null; forks: ForkOrigin[] } | undefined> {
    const row = this.statement(`SELECT forked_from_sid, forked_from_turn FROM sessions WHERE sid = ? AND ${NOT_A_BRANCH}`).get(sid) as Pick<SessionRow, 'forked_from_sid' | 'forked_from_turn'> | undefined;
    if (row === undefined) return undefined;
    const forks = this.statement(FORKS_SQL).all({ 1: sid }) as { sid: string; forked_from_turn: string | null }[];
    return { forked_from: forkOrigin(row), forks: forks.map((f) => ({ session_id: f.sid, turn_id: f.forked_from_turn })) };
  }

  async nodes(): Promise<ClusterNode[]> {
    return [];
  }

  async liveOwner(): Promise<PeerNode | null> {
    return null;
  }

  async lease(): Promise<LeaseView | null> {
    return null;
  }

  async clusterSecret(): Promise<string | null> {
    return null;
  }

  async query(sql: string): Promise<QueryResult> {
    // The REPL's own text: prepared each time, never kept.
    const statement = this.db.prepare(sql);
    if (!statement.reader) throw new Error('read-only: .sql runs queries that return rows; this statement would write, and is refused');
    const rows = statement.all() as Record<string, unknown>[];
    return { columns: statement.columns().map((c) => c.name), rows };
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
