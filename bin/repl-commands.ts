// REPL commands that need only the database and the log: shared by the daemon's REPL and
// `turnhost repl --offline`, for post-mortems with the daemon down.
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import type { REPLServer } from 'node:repl';
import { MUTATOR_ROUTE_TABLE } from '../actors/host/routes.js';
import type { ActorNode } from '../actors/runtime.js';
import type { Reader } from '../persistence/reader.js';
import { formatTable, type Cell } from './table.js';

export interface ReplOutput {
  write(text: string): void;
}

export type DefineCommand = (name: string, help: string, run: (arg: string) => Promise<void>) => void;

/**
 * Commands run async; a failure is printed in the REPL and never escapes into the process.
 * `track` is handed each command's work, so a connection can wait for it before it closes.
 */
/**
 * Commands run one after another, in the order they were typed (or piped): each waits for the one
 * before it, whose reads may wait on a database server.
 */
export function commandDefiner(r: REPLServer, out: ReplOutput, track: (work: Promise<void>) => void = () => {}): DefineCommand {
  let previous: Promise<void> = Promise.resolve();
  return (name, help, run) =>
    r.defineCommand(name, {
      help,
      action(arg: string) {
        const work = previous.then(() => run(arg.trim())).then(
          () => r.displayPrompt(),
          (err: unknown) => {
            out.write(`error: ${(err as Error).message}\n`);
            r.displayPrompt();
          },
        );
        previous = work;
        track(work);
      },
    });
}

const LOG_TAIL_BYTES = 1024 * 1024;
const DEFAULT_LOG_LINES = 20;

export function printRows(out: ReplOutput, headers: string[], rows: Cell[][]): void {
  out.write(rows.length === 0 ? '(none)\n' : formatTable(headers, rows));
}

/** The actor tree, one row an actor; shards that hold no session and have nothing to do share one counting row. */
export function flattenActors(nodes: ActorNode[], depth = 0): Cell[][] {
  const idle = nodes.filter(isIdleShard);
  const rows = nodes
    .filter((node) => !isIdleShard(node))
    .flatMap((node) => [[`${'  '.repeat(depth)}${node.name}`, node.mailbox, node.busy ? 'yes' : ''], ...flattenActors(node.children, depth + 1)]);
  if (idle.length > 0) rows.push([`${'  '.repeat(depth)}(${idle.length} empty shard${idle.length === 1 ? '' : 's'})`, 0, '']);
  return rows;
}

function isIdleShard(node: ActorNode): boolean {
  return /^shard-\d+$/.test(node.name) && node.children.length === 0 && node.mailbox === 0 && !node.busy;
}

async function requireReader(reader: () => Promise<Reader | null>): Promise<Reader> {
  const r = await reader();
  if (r === null) throw new Error('no database in this home yet');
  return r;
}

export function defineDatabaseCommands(command: DefineCommand, out: ReplOutput, reader: () => Promise<Reader | null>, logPath: string): void {
  command('queues', 'sessions with queued prompts: how many, the oldest', async () => {
    printRows(out, ['SESSION', 'QUEUED', 'OLDEST'], (await (await requireReader(reader)).queues()).map((q) => [q.session_id, q.queued, q.oldest]));
  });
  command('nodes', 'the nodes sharing the store: URL, heartbeat age, sessions (none on SQLite)', async () => {
    printRows(out, ['NODE', 'URL', 'HEARTBEAT', 'SESSIONS'], (await (await requireReader(reader)).nodes()).map((n) => [n.node_id, n.url ?? '', `${n.heartbeat_age_ms} ms ago`, n.sessions]));
  });
  command('sql', 'run a read-only SQL query on the database (writes are refused)', async (query) => {
    if (query === '') throw new Error('usage: .sql SELECT …');
    const { columns, rows } = await (await requireReader(reader)).query(query);
    printRows(out, columns, rows.map((row) => columns.map((c) => cell(row[c]))));
  });
  command('log', 'the last n log records (default 20)', async (arg) => {
    const n = arg === '' ? DEFAULT_LOG_LINES : Number(arg);
    if (!Number.isSafeInteger(n) || n <= 0) throw new Error('usage: .log [n], n a positive integer');
    out.write(tail(logPath, n).map((line) => `${line}\n`).join('') || '(no log records)\n');
  });
  command('routes', 'the mutator route table', async () => {
    printRows(out, ['ROUTE', 'CLASS'], Object.entries(MUTATOR_ROUTE_TABLE));
  });
}

/** Offline, .sessions has no running turns to show: only the database's view. */
export function defineOfflineSessions(command: DefineCommand, out: ReplOutput, reader: () => Promise<Reader | null>): void {
  command('sessions', 'sessions in the database: status, message count, last update', async () => {
    const sessions = await (await requireReader(reader)).sessions();
    printRows(out, ['SESSION', 'STATUS', 'REASON', 'MESSAGES', 'UPDATED'], sessions.map((s) => [s.session_id, s.status, s.end_reason ?? s.retained_reason ?? '', s.message_count, s.updated_at]));
  });
}

function cell(value: unknown): Cell {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return value as Cell;
}

/** The last n lines of a file, reading at most its last MiB. */
function tail(path: string, n: number): string[] {
  if (!existsSync(path)) return [];
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, LOG_TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return buffer.toString('utf8').split('\n').filter((l) => l !== '').slice(-n);
  } finally {
    closeSync(fd);
  }
}
