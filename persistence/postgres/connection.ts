// How turnhost connects to PostgreSQL, and how it speaks of what went wrong. Every wait has a
// bound: connecting, each statement, each lock. The password is never in what we say: errors are
// the server's or the driver's (neither repeats it), and the URL is shown with `***`.
import pg from 'pg';
import type { StoreLocation } from '../store-location.js';
import { SCHEMA } from './schema.js';

/** A server that does not answer a connection in this long is unreachable. */
const CONNECT_TIMEOUT_MS = 5_000;
/** Far longer than any healthy statement: a group waiting on a row lock fails here, not forever. */
const STATEMENT_TIMEOUT_MS = 30_000;
/**
 * A transaction left open by a client that stopped talking (paused, cut off, or dead behind a
 * connection the server still believes in) ends after this long, with its locks: our
 * transactions are pipelined and take milliseconds, so only a stuck client reaches it.
 */
export const IDLE_IN_TRANSACTION_MS = 5_000;
/** The reads the daemon and the host run at once on their own connections. */
const READ_POOL_SIZE = 4;

/** bigint (int8) columns hold epoch milliseconds and counts: numbers, not the driver's strings. */
export const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

export function clientConfig(location: Extract<StoreLocation, { kind: 'postgres' }>, role: string): pg.ClientConfig {
  return {
    connectionString: location.url,
    application_name: `turnhost ${role}`,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    options: `-c search_path=${SCHEMA} -c statement_timeout=${STATEMENT_TIMEOUT_MS} -c lock_timeout=${STATEMENT_TIMEOUT_MS} -c idle_in_transaction_session_timeout=${IDLE_IN_TRANSACTION_MS}`,
    types,
  };
}

/** The reading connections of a host or a daemon, made as reads need them. */
export function readPool(location: Extract<StoreLocation, { kind: 'postgres' }>): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(location, 'reader'), max: READ_POOL_SIZE, idleTimeoutMillis: 10_000 });
  pool.on('error', () => {}); // an idle reader's server went away: the pool drops it, the next read reconnects
  return pool;
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', '57P01', '57P02', '57P03', '25P03']);

/** Whether the error says the server went away (as opposed to a statement it refused). */
export function isConnectionError(err: Error): boolean {
  const code = (err as Error & { code?: string }).code;
  if (code !== undefined && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  return /Connection terminated|not queryable|timeout exceeded when trying to connect|Query read timeout/.test(err.message);
}

/** The server's error with what an operator needs to find it: the table, and the SQLSTATE code. */
export function describeError(err: Error): string {
  const e = err as Error & { code?: string; table?: string; constraint?: string };
  const where = [e.table && `table ${e.table}`, e.constraint && `constraint ${e.constraint}`].filter(Boolean).join(', ');
  const code = e.code && /^[0-9A-Z]{5}$/.test(e.code) ? ` [${e.code}]` : '';
  return `${err.message}${where ? ` (${where})` : ''}${code}`;
}

/** An error that keeps the driver's code (so callers can tell a lost server) with a message that names the table. */
export function described(err: Error): Error {
  const wrapped = new Error(describeError(err)) as Error & { code?: string };
  wrapped.code = (err as Error & { code?: string }).code;
  return wrapped;
}
