// `turnhost store copy --to URL [--from URL] [--resume]` (PROTOCOL.md §2.3): a whole store moved,
// SQLite to PostgreSQL or back (persistence/store-copy.ts). Refused while a daemon or a host uses
// either side: the copy holds their locks (the home's, or PostgreSQL's host lock) until it ends,
// so none can start meanwhile. A bar on stderr at a terminal, plain lines otherwise.
import pg from 'pg';
import { clientConfig } from '../../persistence/postgres/connection.js';
import { HOST_LOCK } from '../../persistence/postgres/schema.js';
import { COPIED_TABLES, copyStore, CopyMismatch, type CopyEnd, type CopyProgress } from '../../persistence/store-copy.js';
import { describeLocation, storeLocation, type StoreLocation } from '../../persistence/store-location.js';
import { homePaths } from '../../protocol/home-paths.js';
import { stopPoint } from '../../persistence/stop-points.js';
import { acquireHomeLock } from '../home-lock.js';
import { ensureHome } from '../home.js';

export interface StoreCopyOptions {
  to: string;
  from?: string;
  resume?: boolean;
}

/** A plain progress line at most this often (and at each table's end). */
const LINE_EVERY_MS = 2000;
/** The bar is drawn again at most this often. */
const BAR_EVERY_MS = 100;
const BAR_WIDTH = 30;

interface Held {
  release(): Promise<void>;
}

export async function storeCopyCommand(home: string, options: StoreCopyOptions): Promise<number> {
  const fail = (message: string, code = 1) => {
    process.stderr.write(`turnhost store copy: ${message}\n`);
    return code;
  };
  let from: StoreLocation;
  let to: StoreLocation;
  try {
    from = storeLocation(options.from, homePaths(home).database);
    to = storeLocation(options.to, homePaths(home).database);
  } catch (err) {
    return fail((err as Error).message.replace('--store', options.from === undefined ? '--to' : '--from/--to'), 2);
  }
  if (describeLocation(from) === describeLocation(to)) return fail(`--from and --to are the same store (${describeLocation(to)})`, 2);
  const held: Held[] = [];
  const ends: CopyEnd[] = [];
  try {
    for (const location of [from, to]) {
      const refusal = await holdStore(home, location, held);
      if (refusal !== null) return fail(refusal);
    }
    const source = await openEnd(from, home);
    ends.push(source);
    const target = await openEnd(to, home);
    ends.push(target);
    if (options.resume !== true) {
      const there = (await Promise.all(['sessions', 'users', 'deleted_sessions'].map((table) => target.count(table)))).reduce((sum, n) => sum + n, 0);
      if (there > 0) return fail(`${target.shown} already holds sessions or people: give --resume to finish a copy into it that was cut short`);
    }
    const stopHere = stopPoint('store-copy-messages-written');
    const report = await copyStore(source, target, { progress: progressWriter(process.stderr), written: (table) => table === 'messages' && stopHere?.() });
    const rows = report.tables.reduce((sum, t) => sum + t.rows, 0);
    process.stdout.write(
      `copied ${rows} row(s) of ${COPIED_TABLES.length} tables (${report.messages} message(s) in ${report.sessions} histories: sessions and their branches) from ${source.shown} to ${target.shown} in ${(report.ms / 1000).toFixed(1)} s; counts and each history's digest checked\n`,
    );
    return 0;
  } catch (err) {
    if (err instanceof CopyMismatch) return fail(`the copy does not match its source: ${err.message}`);
    return fail((err as Error).message);
  } finally {
    for (const end of ends) await end.close().catch(() => {});
    for (const lock of held) await lock.release();
  }
}

/** Null when the store is held for the copy now; else why not (a daemon or a host uses it). */
async function holdStore(home: string, location: StoreLocation, held: Held[]): Promise<string | null> {
  if (location.kind === 'sqlite') {
    ensureHome(home);
    for (const holder of ['daemon', 'host'] as const) {
      const lock = await acquireHomeLock(home, holder);
      if (lock === null) return `a ${holder} is running for ${home}: stop it first (turnhost stop)`;
      held.push({ release: async () => lock.release() });
    }
    return null;
  }
  const client = new pg.Client(clientConfig(location, 'store copy lock'));
  await client.connect();
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [HOST_LOCK]);
  held.push({ release: () => client.end() });
  return rows[0]?.locked === true ? null : `a turnhost host or node is using ${location.shown}: stop every daemon on it first`;
}

async function openEnd(location: StoreLocation, home: string): Promise<CopyEnd> {
  if (location.kind === 'sqlite') {
    ensureHome(home);
    return (await import('../../persistence/sqlite/sqlite-copy-end.js')).openSqliteCopyEnd(location.file);
  }
  return (await import('../../persistence/postgres/postgres-copy-end.js')).openPostgresCopyEnd(location);
}

/** A bar redrawn in place at a terminal; plain lines now and then (and at each table's end) otherwise. */
export function progressWriter(stream: NodeJS.WriteStream, now: () => number = () => performance.now()): (p: CopyProgress) => void {
  let lastAt = -Infinity;
  let lastTable = '';
  const terminal = stream.isTTY === true;
  return (p) => {
    const tableEnded = p.table !== lastTable && lastTable !== '';
    const every = terminal ? BAR_EVERY_MS : LINE_EVERY_MS;
    const finished = p.done === p.total;
    if (!tableEnded && !finished && now() - lastAt < every) {
      lastTable = p.table;
      return;
    }
    lastAt = now();
    lastTable = p.table;
    const share = p.total === 0 ? 1 : p.done / p.total;
    const percent = Math.floor(share * 100);
    if (terminal) {
      const filled = Math.round(share * BAR_WIDTH);
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${String(percent).padStart(3)}% ${p.done}/${p.total} rows (${p.table})\u001b[K${finished ? '\n' : ''}`);
    } else {
      stream.write(`store copy: ${p.done} of ${p.total} rows (${percent}%), at ${p.table}\n`);
    }
  };
}
