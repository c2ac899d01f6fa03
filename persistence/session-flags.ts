// What a person marks on a session (PROTOCOL.md §2.3), written by the daemon on its side
// connection, never on a turn's path: archived (out of the lists unless asked; a prompt brings it
// back) and pinned (kept through retention); and the retention sweep's lease, so that one node
// sweeps at a time. The SQL is the same for SQLite and PostgreSQL (`$n`, bound by number).
import type { NumberedQuery } from './ledger.js';

/** A session retention may act on: idle since before the cut, not pinned. */
export interface IdleSession {
  sid: string;
  archived: boolean;
}

export class SessionFlags {
  constructor(private readonly query: NumberedQuery) {}

  /** Archives it (`at`), or brings it back (null); false for a session the store does not hold. */
  async archive(sid: string, at: number | null): Promise<boolean> {
    const rows = await this.query('UPDATE sessions SET archived_at = $2 WHERE sid = $1 AND branch_of IS NULL RETURNING sid', [sid, at]);
    return rows.length > 0;
  }

  async pin(sid: string, pinned: boolean): Promise<boolean> {
    const rows = await this.query('UPDATE sessions SET pinned = $2 WHERE sid = $1 AND branch_of IS NULL RETURNING sid', [sid, pinned ? 1 : 0]);
    return rows.length > 0;
  }

  /**
   * Sessions whose last activity (their last turn, or a stop that finalized them) is before `before`
   * (ms), least recently active first; pinned ones never; `archived: false`: those not archived yet.
   */
  async idle(before: number, limit: number, which: { archived?: false } = {}): Promise<IdleSession[]> {
    const rows = await this.query<{ sid: string; archived_at: number | string | null }>(
      `SELECT sid, archived_at FROM sessions WHERE branch_of IS NULL AND pinned = 0 AND updated_at < $1${which.archived === false ? ' AND archived_at IS NULL' : ''}
       ORDER BY updated_at, sid LIMIT $2`,
      [before, limit],
    );
    return rows.map((row) => ({ sid: row.sid, archived: row.archived_at !== null }));
  }

  /**
   * The sweep's lease for `holder` until `until` (ms): taken when free or expired, or kept when it
   * is already this holder's. False while another holds it.
   */
  async takeSweep(name: string, holder: string, until: number, now: number): Promise<boolean> {
    const rows = await this.query(
      `INSERT INTO sweeps (name, holder, until) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until WHERE sweeps.until < $4 OR sweeps.holder = $2
       RETURNING holder`,
      [name, holder, until, now],
    );
    return rows.length > 0;
  }
}
