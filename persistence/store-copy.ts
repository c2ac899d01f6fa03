// Moving a whole store (PROTOCOL.md §2.3, §6): every table that holds what people made (sessions
// and their branches, messages, turns, the ledger, people and shares, schedules, webhook delivery
// state, guest homes, tombstones) from one store to another, SQLite or PostgreSQL either way. Not
// copied: what a running cluster holds for itself (leases, nodes, its secret, the sweep's lease).
//
// Streamed: each table is read in key order, a batch at a time (keyset, never OFFSET), and each
// batch is written in a transaction of its own that leaves a row already there as it is. So memory
// stays flat whatever the store's size, and a copy cut anywhere (kill -9 included) is finished by
// running it again (`--resume`) without doubling anything. At the end, every table's count and
// each session's messages (a SHA-256 over them, in order) are checked on both sides.
import { createHash, type Hash } from 'node:crypto';

/** A table copied, and its key: what orders it and tells a row already copied. */
export interface CopiedTable {
  name: string;
  /** Its primary key; `ordinal`: the store's own row order (SQLite's rowid, PostgreSQL's serial `ord`). */
  key: readonly string[] | 'ordinal';
}

export const COPIED_TABLES: readonly CopiedTable[] = [
  { name: 'sessions', key: ['sid'] },
  { name: 'messages', key: ['sid', 'seq'] },
  { name: 'turns', key: ['turn_id'] },
  { name: 'server_requests', key: ['id'] },
  { name: 'boots', key: ['boot_id'] },
  { name: 'queue', key: ['queue_id'] },
  { name: 'submits', key: 'ordinal' },
  { name: 'users', key: ['name'] },
  { name: 'session_access', key: ['sid', 'user_name'] },
  { name: 'schedules', key: ['schedule_id'] },
  { name: 'webhook_outbox', key: ['seq'] },
  { name: 'webhook_deliveries', key: ['id'] },
  { name: 'usage_daily', key: ['day', 'by_user', 'sid', 'model'] },
  { name: 'budgets', key: ['user_name'] },
  { name: 'home_contents', key: ['sha256'] },
  { name: 'content_chunks', key: ['sha256', 'seq'] },
  { name: 'home_snapshots', key: ['sid'] },
  { name: 'home_entries', key: ['sid', 'path'] },
  { name: 'deleted_sessions', key: ['sid'] },
  { name: 'session_blobs', key: ['sid', 'sha256'] },
  { name: 'blob_uploads', key: ['sha256', 'by_user'] },
];

/** Rows a batch reads and writes: a few MiB of messages. */
export const COPY_BATCH_ROWS = 2000;

/** A batch of a table as read: its rows (the copied columns, in order) and where the next starts. */
export interface Batch {
  rows: unknown[][];
  /** The key of the last row, for the next read; null when the table has no more. */
  next: unknown[] | null;
}

/** One side of a copy: a store, as the copy reads and writes it. */
export interface CopyEnd {
  readonly shown: string;
  /** The table's columns, in the store's order. */
  columns(table: string): Promise<string[]>;
  count(table: string): Promise<number>;
  /** The rows after `after` (the key of the last row read; null: from the start), in key order. */
  read(table: CopiedTable, columns: readonly string[], after: unknown[] | null, limit: number): Promise<Batch>;
  /** Writes the rows in one transaction; a row whose key is there already is left as it is. */
  write(table: string, columns: readonly string[], rows: readonly unknown[][]): Promise<void>;
  /** After the last batch: what the store needs to go on from the rows it got (PostgreSQL's sequences). */
  finish(table: string): Promise<void>;
  /** Each stored session row's messages in key order (for the digests). */
  messages(after: unknown[] | null, limit: number): Promise<Batch>;
  close(): Promise<void>;
}

export interface CopyProgress {
  table: string;
  /** Rows of every table copied so far, and of all. */
  done: number;
  total: number;
}

export interface CopyReport {
  tables: { table: string; rows: number }[];
  sessions: number;
  messages: number;
  ms: number;
}

/** The copy's check failed: what differs. */
export class CopyMismatch extends Error {}

/**
 * Columns one kind of store has and the other not: the row order of `submits` (SQLite's rowid,
 * PostgreSQL's `ord`), and the node a boot was of (nodes are PostgreSQL's alone).
 */
const STORE_OWN_COLUMNS: Readonly<Record<string, readonly string[]>> = { submits: ['ord'], boots: ['node_id'] };

/** The columns both stores have; a column of the source the target lacks is refused (another schema). */
export function copiedColumns(table: string, source: readonly string[], target: readonly string[]): string[] {
  const own = STORE_OWN_COLUMNS[table] ?? [];
  const missing = source.filter((column) => !target.includes(column) && !own.includes(column));
  if (missing.length > 0) throw new Error(`the target's ${table} has no column ${missing.join(', ')}: are both stores of this turnhost's version?`);
  return source.filter((column) => target.includes(column));
}

export interface CopyWatch {
  progress(p: CopyProgress): void;
  /** After each batch is committed: where a test stops the copy (stop-points.ts). */
  written?(table: string): void;
}

export async function copyStore(from: CopyEnd, to: CopyEnd, watch: CopyWatch): Promise<CopyReport> {
  const started = performance.now();
  const counts = await Promise.all(COPIED_TABLES.map((table) => from.count(table.name)));
  const total = counts.reduce((sum, n) => sum + n, 0);
  let done = 0;
  const tables: CopyReport['tables'] = [];
  for (const table of COPIED_TABLES) {
    const columns = copiedColumns(table.name, await from.columns(table.name), await to.columns(table.name));
    let after: unknown[] | null = null;
    let rows = 0;
    do {
      const batch: Batch = await from.read(table, columns, after, COPY_BATCH_ROWS);
      if (batch.rows.length > 0) {
        await to.write(table.name, columns, batch.rows);
        watch.written?.(table.name);
      }
      rows += batch.rows.length;
      done += batch.rows.length;
      after = batch.next;
      watch.progress({ table: table.name, done, total });
    } while (after !== null);
    await to.finish(table.name);
    tables.push({ table: table.name, rows });
  }
  const { sessions, messages } = await checkCopy(from, to);
  return { tables, sessions, messages, ms: performance.now() - started };
}

/** Every table's count, then each session's messages by digest; CopyMismatch naming what differs. */
async function checkCopy(from: CopyEnd, to: CopyEnd): Promise<{ sessions: number; messages: number }> {
  for (const table of COPIED_TABLES) {
    const [source, target] = await Promise.all([from.count(table.name), to.count(table.name)]);
    if (source !== target) throw new CopyMismatch(`${table.name}: ${source} row(s) in ${from.shown}, ${target} in ${to.shown}`);
  }
  const [source, target] = await Promise.all([sessionDigests(from), sessionDigests(to)]);
  for (const [sid, digest] of source) {
    if (target.get(sid) !== digest) throw new CopyMismatch(`session ${sid}: its messages differ in ${to.shown}`);
  }
  if (target.size !== source.size) throw new CopyMismatch(`${to.shown} holds messages of ${target.size} session(s), ${from.shown} of ${source.size}`);
  const messages = await from.count('messages');
  return { sessions: source.size, messages };
}

/**
 * Each session row's digest over its messages in order (position, role, content, turn, tool
 * calls, time): read a batch at a time, so only the digests are held, one per session.
 */
async function sessionDigests(end: CopyEnd): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  let current = null as { sid: string; hash: Hash } | null;
  let after: unknown[] | null = null;
  do {
    const batch: Batch = await end.messages(after, COPY_BATCH_ROWS);
    for (const row of batch.rows) {
      const sid = String(row[0]);
      if (current?.sid !== sid) {
        if (current !== null) digests.set(current.sid, current.hash.digest('hex'));
        current = { sid, hash: createHash('sha256') };
      }
      current.hash.update(`${JSON.stringify(row.slice(1).map((value) => (typeof value === 'bigint' ? Number(value) : value)))}\n`);
    }
    after = batch.next;
  } while (after !== null);
  if (current !== null) digests.set(current.sid, current.hash.digest('hex'));
  return digests;
}

/** The message columns a digest covers, the session first. */
export const DIGEST_COLUMNS = ['sid', 'seq', 'role', 'content', 'turn_id', 'tool_calls', 'tool_call_id', 'parts', 'created_at'] as const;
