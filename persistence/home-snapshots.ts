// A guest's home in the store (AGENT.md §6, "A guest's memory on every node"): each session's agent
// home as a snapshot of entries (files, links, folders, with their modes), whose contents are kept
// once by SHA-256 whatever the sessions and snapshots that hold them. A snapshot is swapped whole
// in one transaction, after the contents it names are in: a store that goes away in the middle
// leaves the earlier snapshot whole, and at most contents nobody names yet. Never part of a turn's
// commit. The SQL is the same for SQLite and PostgreSQL (`$n`, bound by number); each store runs it
// on a connection of its own, out of the turns' way.

/** One entry of a home, by its path inside the home (`/`-separated, no leading slash). */
export interface HomeEntry {
  path: string;
  kind: 'file' | 'link' | 'dir';
  /** The permission bits (0o777 and the sticky, setuid, setgid bits). */
  mode: number;
  /** A file's contents' SHA-256 (hex); null for a link or a folder. */
  sha256: string | null;
  /** A link's target, as the link holds it (never followed); null otherwise. */
  target: string | null;
  size: number;
}

export interface HomeSnapshot {
  /** 0 when the session has none. */
  version: number;
  entries: HomeEntry[];
}

export interface HomeSnapshots {
  /** The version of the session's latest snapshot; 0 when it has none. */
  version(sid: string): Promise<number>;
  snapshot(sid: string): Promise<HomeSnapshot>;
  /** Which of these contents the store does not hold yet. */
  missing(hashes: readonly string[]): Promise<string[]>;
  /** Contents, each kept once (one already held is left as it is). */
  putContents(contents: readonly { sha256: string; bytes: Buffer }[]): Promise<void>;
  contents(hashes: readonly string[]): Promise<Map<string, Buffer>>;
  /**
   * The session's next snapshot, in one transaction: `changed` entries written, `removed` paths
   * gone, the version one more. Null (nothing written) when the stored version is not `base` (a
   * snapshot was taken elsewhere since) or another node holds the session.
   */
  commit(sid: string, base: number, changed: readonly HomeEntry[], removed: readonly string[], now?: number): Promise<number | null>;
}

export const HOME_VERSION_SQL = 'SELECT version FROM home_snapshots WHERE sid = $1';
export const HOME_ENTRIES_SQL = 'SELECT path, kind, mode, sha256, target, size FROM home_entries WHERE sid = $1 ORDER BY path';
export const HOME_UPSERT_ENTRY_SQL = `INSERT INTO home_entries (sid, path, kind, mode, sha256, target, size) VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (sid, path) DO UPDATE SET kind = excluded.kind, mode = excluded.mode, sha256 = excluded.sha256, target = excluded.target, size = excluded.size`;
export const HOME_DELETE_ENTRY_SQL = 'DELETE FROM home_entries WHERE sid = $1 AND path = $2';
/**
 * The version moves from `$2` to `$2 + 1` (a first snapshot from 0): no row changed means another
 * took it first, or the session was deleted (PROTOCOL.md §2.3: a snapshot under way then writes nothing).
 */
export const HOME_NEXT_VERSION_SQL = `INSERT INTO home_snapshots (sid, version, taken_at)
  SELECT $1, $2 + 1, $3 WHERE NOT EXISTS (SELECT 1 FROM deleted_sessions WHERE sid = $1)
  ON CONFLICT (sid) DO UPDATE SET version = excluded.version, taken_at = excluded.taken_at WHERE home_snapshots.version = $2`;

/** What a row holds, as both stores answer (PostgreSQL's bigint as a string). */
export function toHomeEntry(row: { path: string; kind: string; mode: number; sha256: string | null; target: string | null; size: number | string }): HomeEntry {
  return { path: row.path, kind: row.kind as HomeEntry['kind'], mode: Number(row.mode), sha256: row.sha256, target: row.target, size: Number(row.size) };
}
