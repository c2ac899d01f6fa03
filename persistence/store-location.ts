// Where a home's sessions live (PROTOCOL.md §6.1): `--store`, else $TURNHOST_STORE, else SQLite
// in the home. The PostgreSQL driver is loaded only when a URL names it.
import type { SideStore } from './side-store.js';
import type { Reader } from './reader.js';
import { SqliteReader } from './sqlite/sqlite-reader.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

export type StoreLocation = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; shown: string };

/** The variable read when `--store` is not given. */
export const STORE_ENV = 'TURNHOST_STORE';

/** The store named by `--store` (or the environment), or why the name is not one. */
export function storeLocation(option: string | undefined, databaseFile: string, env: NodeJS.ProcessEnv = process.env): StoreLocation {
  const value = option ?? (env[STORE_ENV] || undefined) ?? 'sqlite';
  if (value === 'sqlite') return { kind: 'sqlite', file: databaseFile };
  if (/^postgres(ql)?:\/\//.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error(`--store: not a URL: ${hidePassword(value)}`);
    }
    return { kind: 'postgres', url: value, shown: hidePassword(url.toString()) };
  }
  throw new Error(`--store: expected "sqlite" or a postgres:// URL, got ${JSON.stringify(hidePassword(value))}`);
}

/** The store as it may be shown: `sqlite <file>`, or the URL without its password. */
export function describeLocation(location: StoreLocation): string {
  return location.kind === 'sqlite' ? `sqlite ${location.file}` : location.shown;
}

/** The URL as it may be shown: its password, wherever it is, as `***`. */
export function hidePassword(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)\S*@/gi, '$1***@').replace(/([?&]password=)[^&\s]*/g, '$1***');
}

export interface OpenOptions {
  historyCacheMib?: number;
  /** One node of several on the database (PROTOCOL.md §6.2): PostgreSQL only. */
  node?: { id: string; leaseSecs: number; url?: string; catalogue?: () => string };
}

export async function openStore(location: StoreLocation, options: OpenOptions = {}): Promise<Store> {
  if (location.kind === 'sqlite') {
    if (options.node !== undefined) throw new Error('--node-id needs a PostgreSQL store (--store postgres://…): nodes share their sessions through it');
    return SqliteStore.open(location.file, options);
  }
  const { PostgresStore } = await import('./postgres/postgres-store.js');
  return PostgresStore.open(location, options);
}

/** Null when there is nothing to read yet (no database file, or no schema in it). */
export async function openReader(location: StoreLocation): Promise<Reader | null> {
  if (location.kind === 'sqlite') return SqliteReader.open(location.file);
  const { PostgresReader } = await import('./postgres/postgres-reader.js');
  return PostgresReader.open(location);
}

/**
 * The store's reader for a long-running process: opened on first use, opened again later when
 * there was nothing to read yet or the store could not be reached.
 */
export function readerOnDemand(location: StoreLocation): OnDemand<Reader> {
  return onDemand(() => openReader(location));
}

/** The store's side connection (people, schedules, the outbox) for a long-running process, as the reader is opened. */
export function sideOnDemand(location: StoreLocation): OnDemand<SideStore> {
  return onDemand(async () => (await import('./side-store.js')).openSideStore(location));
}

export interface OnDemand<T extends { close(): Promise<void> }> {
  get(): Promise<T | null>;
  close(): Promise<void>;
}

function onDemand<T extends { close(): Promise<void> }>(open: () => Promise<T | null>): OnDemand<T> {
  let opening: Promise<T | null> | null = null;
  return {
    get: () => {
      const current = (opening ??= open());
      current.then(
        (opened) => {
          if (opened === null && opening === current) opening = null;
        },
        () => {
          if (opening === current) opening = null;
        },
      );
      return current;
    },
    close: async () => {
      const opened = await opening?.catch(() => null);
      await opened?.close();
    },
  };
}
