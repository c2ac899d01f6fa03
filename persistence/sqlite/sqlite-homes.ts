// A guest's home in SQLite (persistence/home-snapshots.ts), on the host's own database: each call
// a transaction of its own, between the turns' group commits (SQLite has one writer).
import { CONTENT_CHUNKS_SQL, wholeContent } from '../blobs.js';
import type Database from 'better-sqlite3';
import {
  HOME_DELETE_ENTRY_SQL,
  HOME_ENTRIES_SQL,
  HOME_NEXT_VERSION_SQL,
  HOME_UPSERT_ENTRY_SQL,
  HOME_VERSION_SQL,
  toHomeEntry,
  type HomeEntry,
  type HomeSnapshot,
  type HomeSnapshots,
} from '../home-snapshots.js';

const bound = (params: readonly unknown[]) => Object.fromEntries(params.map((value, i) => [i + 1, value]));

export class SqliteHomes implements HomeSnapshots {
  private readonly statements;

  constructor(private readonly db: Database.Database) {
    this.statements = {
      version: db.prepare(HOME_VERSION_SQL),
      entries: db.prepare(HOME_ENTRIES_SQL),
      upsert: db.prepare(HOME_UPSERT_ENTRY_SQL),
      remove: db.prepare(HOME_DELETE_ENTRY_SQL),
      next: db.prepare(HOME_NEXT_VERSION_SQL),
      has: db.prepare('SELECT 1 FROM home_contents WHERE sha256 = ?'),
      put: db.prepare('INSERT INTO home_contents (sha256, bytes) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING'),
      content: db.prepare('SELECT bytes FROM home_contents WHERE sha256 = ?'),
      chunks: db.prepare(CONTENT_CHUNKS_SQL.replace('$1', '?')),
    };
  }

  async version(sid: string): Promise<number> {
    return (this.statements.version.get(bound([sid])) as { version: number } | undefined)?.version ?? 0;
  }

  async snapshot(sid: string): Promise<HomeSnapshot> {
    return this.db.transaction(() => ({
      version: (this.statements.version.get(bound([sid])) as { version: number } | undefined)?.version ?? 0,
      entries: (this.statements.entries.all(bound([sid])) as Parameters<typeof toHomeEntry>[0][]).map(toHomeEntry),
    }))();
  }

  async missing(hashes: readonly string[]): Promise<string[]> {
    return hashes.filter((hash) => this.statements.has.get(hash) === undefined);
  }

  async putContents(contents: readonly { sha256: string; bytes: Buffer }[]): Promise<void> {
    this.db.transaction(() => {
      for (const { sha256, bytes } of contents) this.statements.put.run(sha256, bytes);
    })();
  }

  async contents(hashes: readonly string[]): Promise<Map<string, Buffer>> {
    const found = new Map<string, Buffer>();
    for (const hash of hashes) {
      const row = this.statements.content.get(hash) as { bytes: Buffer } | undefined;
      if (row !== undefined) found.set(hash, wholeContent(row.bytes, (this.statements.chunks.all(hash) as { bytes: Buffer }[]).map((chunk) => chunk.bytes)));
    }
    return found;
  }

  async commit(sid: string, base: number, changed: readonly HomeEntry[], removed: readonly string[], now = Date.now()): Promise<number | null> {
    return this.db.transaction((): number | null => {
      if (this.statements.next.run(bound([sid, base, now])).changes === 0) return null;
      for (const e of changed) this.statements.upsert.run(bound([sid, e.path, e.kind, e.mode, e.sha256, e.target, e.size]));
      for (const path of removed) this.statements.remove.run(bound([sid, path]));
      return base + 1;
    })();
  }
}
