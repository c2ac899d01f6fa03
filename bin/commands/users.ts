// `turnhost user add | list | remove` (PROTOCOL.md §5.6): the people of a turnhost, in its store,
// so that every node of a cluster knows every user. A token is printed once, at `add`; only its
// SHA-256 is kept. A removal is seen by every daemon within a second (actors/daemon/user-directory.ts).
import { appendLogRecord } from '../../persistence/log.js';
import { newPersonalToken, tokenDigest, validUserName, type People } from '../../persistence/people.js';
import { openSideStore, type SideStore } from '../../persistence/side-store.js';
import { storeLocation } from '../../persistence/store-location.js';
import { ensureHome } from '../home.js';
import { homePaths } from '../../protocol/home-paths.js';
import { printTable } from '../table.js';

interface StoreFlag {
  store?: string;
}

export async function userAddCommand(home: string, name: string, options: StoreFlag & { admin?: boolean }): Promise<number> {
  if (!validUserName(name)) {
    process.stderr.write(`turnhost user add: a name is 1–64 letters, digits and . _ @ + - (and not "owner"): ${JSON.stringify(name.slice(0, 80))}\n`);
    return 2;
  }
  const token = newPersonalToken();
  const admin = options.admin === true;
  const added = await withPeople(home, options, (people) => people.addUser({ name, admin, token_sha256: tokenDigest(token), created_at: Date.now() }));
  if (added === null) return 1;
  if (!added) {
    process.stderr.write(`turnhost user add: a user named ${name} exists (remove them first to give a new token)\n`);
    return 1;
  }
  audit(home, 'user add', { name, admin });
  process.stdout.write(`${token}\n`);
  return 0;
}

export async function userListCommand(home: string, options: StoreFlag & { json?: boolean }): Promise<number> {
  const users = await withPeople(home, options, (people) => people.users());
  if (users === null) return 1;
  const shown = users.map((user) => ({
    name: user.name,
    role: user.admin ? 'admin' : 'member',
    created_at: new Date(user.created_at).toISOString(),
    last_seen_at: user.last_seen_at === null ? null : new Date(user.last_seen_at).toISOString(),
  }));
  if (options.json) {
    process.stdout.write(`${JSON.stringify(shown)}\n`);
    return 0;
  }
  printTable(['USER', 'ROLE', 'MADE', 'LAST SEEN'], shown.map((user) => [user.name, user.role, user.created_at, user.last_seen_at ?? '']));
  return 0;
}

export async function userRemoveCommand(home: string, name: string, options: StoreFlag): Promise<number> {
  const removed = await withPeople(home, options, (people) => people.removeUser(name));
  if (removed === null) return 1;
  if (!removed) {
    process.stderr.write(`turnhost user remove: no user named ${name}\n`);
    return 4;
  }
  audit(home, 'user remove', { name });
  process.stdout.write(`removed: ${name} (their tokens fail now; their connections close within 2 s)\n`);
  return 0;
}

/** The store's people for one command; null (said on stderr) when the store cannot be opened. */
async function withPeople<T>(home: string, options: StoreFlag, work: (people: People) => Promise<T>): Promise<T | null> {
  let side: SideStore | null = null;
  try {
    const location = storeLocation(options.store, homePaths(home).database);
    if (location.kind === 'sqlite') ensureHome(home);
    side = await openSideStore(location);
    return await work(side.people);
  } catch (err) {
    process.stderr.write(`turnhost user: ${(err as Error).message}\n`);
    return null;
  } finally {
    await side?.close();
  }
}

function audit(home: string, action: string, detail: Record<string, unknown>): void {
  appendLogRecord(homePaths(home).audit, { at: new Date().toISOString(), user: 'owner', action, detail });
}
