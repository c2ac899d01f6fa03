// A CLI command that reads or writes the store itself, with or without a running daemon: people,
// budgets, the ledger. The store is opened for the command and closed after it.
import { type SideStore } from '../persistence/side-store.js';
import { openSideStore } from '../persistence/open-store.js';
import { storeLocation } from '../persistence/store-location.js';
import { homePaths } from '../protocol/home-paths.js';
import { ensureHome } from './home.js';

export interface StoreFlag {
  store?: string;
}

/** `work` on the home's store; null (said on stderr, after `turnhost <command>:`) when the store cannot be opened or the work fails. */
export async function withSideStore<T>(home: string, options: StoreFlag, command: string, work: (side: SideStore) => Promise<T>): Promise<T | null> {
  let side: SideStore | null = null;
  try {
    const location = storeLocation(options.store, homePaths(home).database);
    if (location.kind === 'sqlite') ensureHome(home);
    side = await openSideStore(location);
    return await work(side);
  } catch (err) {
    process.stderr.write(`turnhost ${command}: ${(err as Error).message}\n`);
    return null;
  } finally {
    await side?.close();
  }
}
