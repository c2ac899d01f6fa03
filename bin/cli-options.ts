// The option values and options several commands share (PROTOCOL.md §3), each value checked by
// commander as the command line is read, so that a bad one is one line and exit 1 before anything
// runs.
import { InvalidArgumentError, Option } from 'commander';
import { STORE_ENV, storeLocation } from '../persistence/store-location.js';

export function parsePositiveInteger(text: string): number | undefined {
  if (!/^\s*\d+\s*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

export function positiveInteger(text: string): number {
  const value = parsePositiveInteger(text);
  if (value === undefined) throw new InvalidArgumentError('must be a positive integer');
  return value;
}

export function positiveNumber(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0) throw new InvalidArgumentError('must be a positive number');
  return value;
}

export function seconds(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError('must be a number of seconds');
  return value;
}

export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export const homeOption = () => new Option('--home <dir>', 'home folder (default: $TURNHOST_HOME, else ~/.turnhost)');

/**
 * `--store`: checked by the command that uses it, not by commander, whose error would repeat the
 * value, password and all.
 */
export const storeOption = () =>
  new Option('--store <sqlite|postgres://…>', "where sessions live: sqlite (the home's turnhost.db) or a PostgreSQL URL (default: $TURNHOST_STORE, else sqlite)");

/**
 * A daemon started in the background learns the store from its environment, not its argv: other
 * users of the machine can read argv, and a PostgreSQL URL carries a password.
 */
export function storeForChildren(opts: { store?: string }): void {
  storeLocation(opts.store, ''); // a bad value is one line here, its password hidden
  if (opts.store !== undefined) process.env[STORE_ENV] = opts.store;
}

export const maxClientsOption = () =>
  new Option('--max-clients <n>', 'open client connections past which a new one is refused (default 1024)').argParser(positiveInteger);

export const maxUnreadOption = () =>
  new Option('--max-unread-mib <n>', "a client's unread output past which it is cut off when it stops reading (default 8; one that reads may lag 8 times that)").argParser(positiveInteger);

export const loginDaysOption = () => new Option('--login-days <n>', 'how long a page login lasts (default 7)').argParser(positiveInteger);
