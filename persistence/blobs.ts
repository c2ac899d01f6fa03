// A prompt's files (PROTOCOL.md §2.4), in the store's one content store: `home_contents`, where the
// agent homes' snapshots keep their files (home-snapshots.ts), each content once by SHA-256 however
// many prompts, sessions and homes hold it. A session may read the blobs it names (`session_blobs`:
// its prompts', and what was uploaded to it); a person may name in a prompt what they uploaded
// (`blob_uploads`). A content goes when the last session and home that hold it are deleted
// (session-life.ts). Written by the daemon on its side connection, never on a turn's path; the host
// reads the bytes it hands an agent through its own connection. The SQL is the same for SQLite and
// PostgreSQL (`$n`, bound by number).
import type { NumberedQuery } from './ledger.js';

/** What is known of a blob besides its bytes. */
export interface BlobInfo {
  /** Hex, without `sha256:`. */
  sha256: string;
  mimeType: string;
  size: number;
  name: string | null;
}

/**
 * A content past this size is stored as its first chunk (in home_contents) and the rest (in
 * content_chunks, by `seq` from 1): a statement that binds a whole 20 MiB file costs three copies
 * of it in memory (the binding's, the record's, the pager's), a chunk's cost a few MiB.
 */
export const CONTENT_CHUNK_BYTES = 1024 * 1024;
export const BLOB_BYTES_SQL = 'SELECT bytes FROM home_contents WHERE sha256 = $1';
/** A content's chunks after its first, in order: what follows its head row's bytes. */
export const CONTENT_CHUNKS_SQL = 'SELECT bytes FROM content_chunks WHERE sha256 = $1 ORDER BY seq';
const BLOB_PUT_CONTENT_SQL = 'INSERT INTO home_contents (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING';
/** Not for a content already held (whole, as a home's file may be): its head row has all its bytes. */
const CHUNK_PUT_SQL = `INSERT INTO content_chunks (sha256, seq, bytes) SELECT $1, $2, $3
  WHERE NOT EXISTS (SELECT 1 FROM home_contents WHERE sha256 = $1) ON CONFLICT (sha256, seq) DO NOTHING`;

/**
 * The statements that store a content, both stores: its later chunks first, its head row last, so
 * that a content whose head is there is whole (a crash in between leaves chunks nothing reads).
 */
export function contentStatements(sha256: string, bytes: Buffer): { sql: string; params: unknown[] }[] {
  const statements: { sql: string; params: unknown[] }[] = [];
  for (let seq = 1; seq * CONTENT_CHUNK_BYTES < bytes.length; seq++) {
    statements.push({ sql: CHUNK_PUT_SQL, params: [sha256, seq, bytes.subarray(seq * CONTENT_CHUNK_BYTES, (seq + 1) * CONTENT_CHUNK_BYTES)] });
  }
  statements.push({ sql: BLOB_PUT_CONTENT_SQL, params: [sha256, bytes.subarray(0, CONTENT_CHUNK_BYTES)] });
  return statements;
}

/** A content's bytes from its head row's and its chunks'. */
export function wholeContent(head: Buffer | Uint8Array, chunks: readonly (Buffer | Uint8Array)[]): Buffer {
  const first = Buffer.isBuffer(head) ? head : Buffer.from(head);
  return chunks.length === 0 ? first : Buffer.concat([first, ...chunks]);
}
const RECORD_UPLOAD_SQL = `INSERT INTO blob_uploads (sha256, by_user, mime_type, size, name, at) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (sha256, by_user) DO UPDATE SET mime_type = excluded.mime_type, name = excluded.name, at = excluded.at`;
export const BLOB_NAME_SQL = `INSERT INTO session_blobs (sid, sha256, mime_type, size, name, at) VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (sid, sha256) DO NOTHING`;
/** Only while its bytes are there: an upload whose content went with the last session that named it names nothing. */
const UPLOADED_SQL = `SELECT u.sha256, u.mime_type, u.size, u.name FROM blob_uploads u
  WHERE u.sha256 = $1 AND u.by_user = $2 AND EXISTS (SELECT 1 FROM home_contents c WHERE c.sha256 = u.sha256)`;
const NAMED_SQL = 'SELECT sha256, mime_type, size, name FROM session_blobs WHERE sid = $1 AND sha256 = $2';
/** A fork reads its source's prompts: it names their blobs too (PROTOCOL.md §2.2). */
export const FORK_BLOBS_SQL = `INSERT INTO session_blobs (sid, sha256, mime_type, size, name, at)
  SELECT $1, sha256, mime_type, size, name, at FROM session_blobs WHERE sid = $2 ON CONFLICT (sid, sha256) DO NOTHING`;

/** Uploads made before `$1` that no session names: forgotten. */
const FORGET_UNNAMED_SQL = `DELETE FROM blob_uploads WHERE at < $1
  AND NOT EXISTS (SELECT 1 FROM session_blobs b WHERE b.sha256 = blob_uploads.sha256) RETURNING sha256`;
/** A content that nothing names any more (no session, no home, no upload): its bytes go. */
const UNHELD = `NOT EXISTS (SELECT 1 FROM session_blobs b WHERE b.sha256 = $1)
  AND NOT EXISTS (SELECT 1 FROM home_entries e WHERE e.sha256 = $1)
  AND NOT EXISTS (SELECT 1 FROM blob_uploads u WHERE u.sha256 = $1)`;
/** Its chunks first, its head last: a content whose head is there stays whole. */
const FREE_CONTENT_SQL = [`DELETE FROM content_chunks WHERE sha256 = $1 AND ${UNHELD}`, `DELETE FROM home_contents WHERE sha256 = $1 AND ${UNHELD}`];

type InfoRow = { sha256: string; mime_type: string; size: number | string; name: string | null };
const toInfo = (row: InfoRow): BlobInfo => ({ sha256: row.sha256, mimeType: row.mime_type, size: Number(row.size), name: row.name });

export class Blobs {
  constructor(private readonly query: NumberedQuery) {}

  /** Stores the bytes once, and records who uploaded them (what they may name in a prompt). */
  async put(info: BlobInfo, bytes: Buffer, byUser: string, now = Date.now()): Promise<void> {
    await this.putContent(info.sha256, bytes);
    await this.query(RECORD_UPLOAD_SQL, [info.sha256, byUser, info.mimeType, info.size, info.name, now]);
  }

  /** Bytes an agent sent back (a guest's image): kept once, and named by its session. */
  async keep(sid: string, info: BlobInfo, bytes: Buffer, now = Date.now()): Promise<void> {
    await this.putContent(info.sha256, bytes);
    await this.name(sid, info, now);
  }

  /** The session may read it from now on. */
  async name(sid: string, info: BlobInfo, now = Date.now()): Promise<void> {
    await this.query(BLOB_NAME_SQL, [sid, info.sha256, info.mimeType, info.size, info.name, now]);
  }

  /** The blob as the session names it; null when it names none such. */
  async named(sid: string, sha256: string): Promise<BlobInfo | null> {
    const [row] = await this.query<InfoRow>(NAMED_SQL, [sid, sha256]);
    return row === undefined ? null : toInfo(row);
  }

  /** The blob as this person uploaded it, while its bytes are held; null otherwise. */
  async uploaded(sha256: string, byUser: string): Promise<BlobInfo | null> {
    const [row] = await this.query<InfoRow>(UPLOADED_SQL, [sha256, byUser]);
    return row === undefined ? null : toInfo(row);
  }

  /** Forgets the uploads made before `before` that no session names, freeing bytes nothing else holds; how many. */
  async forgetUnnamed(before: number): Promise<number> {
    const forgotten = await this.query<{ sha256: string }>(FORGET_UNNAMED_SQL, [before]);
    for (const sha256 of new Set(forgotten.map((row) => row.sha256))) {
      for (const sql of FREE_CONTENT_SQL) await this.query(sql, [sha256]);
    }
    return forgotten.length;
  }

  async bytes(sha256: string): Promise<Buffer | null> {
    const [row] = await this.query<{ bytes: Buffer | Uint8Array }>(BLOB_BYTES_SQL, [sha256]);
    if (row === undefined) return null;
    const chunks = await this.query<{ bytes: Buffer | Uint8Array }>(CONTENT_CHUNKS_SQL, [sha256]);
    return wholeContent(row.bytes, chunks.map((chunk) => chunk.bytes));
  }

  private async putContent(sha256: string, bytes: Buffer): Promise<void> {
    for (const { sql, params } of contentStatements(sha256, bytes)) await this.query(sql, params);
  }
}
