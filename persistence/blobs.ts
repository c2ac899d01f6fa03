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

export const BLOB_BYTES_SQL = 'SELECT bytes FROM home_contents WHERE sha256 = $1';
export const BLOB_PUT_CONTENT_SQL = 'INSERT INTO home_contents (sha256, bytes) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING';
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
const FREE_CONTENT_SQL = `DELETE FROM home_contents WHERE sha256 = $1
  AND NOT EXISTS (SELECT 1 FROM session_blobs b WHERE b.sha256 = $1)
  AND NOT EXISTS (SELECT 1 FROM home_entries e WHERE e.sha256 = $1)
  AND NOT EXISTS (SELECT 1 FROM blob_uploads u WHERE u.sha256 = $1)`;

type InfoRow = { sha256: string; mime_type: string; size: number | string; name: string | null };
const toInfo = (row: InfoRow): BlobInfo => ({ sha256: row.sha256, mimeType: row.mime_type, size: Number(row.size), name: row.name });

export class Blobs {
  constructor(private readonly query: NumberedQuery) {}

  /** Stores the bytes once, and records who uploaded them (what they may name in a prompt). */
  async put(info: BlobInfo, bytes: Buffer, byUser: string, now = Date.now()): Promise<void> {
    await this.query(BLOB_PUT_CONTENT_SQL, [info.sha256, bytes]);
    await this.query(RECORD_UPLOAD_SQL, [info.sha256, byUser, info.mimeType, info.size, info.name, now]);
  }

  /** Bytes an agent sent back (a guest's image): kept once, and named by its session. */
  async keep(sid: string, info: BlobInfo, bytes: Buffer, now = Date.now()): Promise<void> {
    await this.query(BLOB_PUT_CONTENT_SQL, [info.sha256, bytes]);
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
    for (const sha256 of new Set(forgotten.map((row) => row.sha256))) await this.query(FREE_CONTENT_SQL, [sha256]);
    return forgotten.length;
  }

  async bytes(sha256: string): Promise<Buffer | null> {
    const [row] = await this.query<{ bytes: Buffer | Uint8Array }>(BLOB_BYTES_SQL, [sha256]);
    return row === undefined ? null : Buffer.isBuffer(row.bytes) ? row.bytes : Buffer.from(row.bytes);
  }
}
