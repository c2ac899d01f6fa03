// Opens the store a location names (store-location.ts): the one file that knows both
// implementations. The PostgreSQL driver is loaded only when a URL names it, and the side store's
// modules only when something writes beside the host.
import type { SideStore } from './side-store.js';
import type { Reader } from './reader.js';
import { SqliteReader } from './sqlite/sqlite-reader.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';
import type { StoreLocation } from './store-location.js';

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

export async function openSideStore(location: StoreLocation): Promise<SideStore> {
  if (location.kind === 'sqlite') return (await import('./sqlite/sqlite-side.js')).openSqliteSide(location.file);
  return (await import('./postgres/postgres-side.js')).openPostgresSide(location);
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
  return onDemand(() => openSideStore(location));
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
