// One daemon and one compute host per home, each held by something the kernel releases when its
// holder dies: a listening unix socket inside the home (`daemon.lock`, `host.lock`). The home is
// 0700, so only its owner can take or probe a lock; an abstract-namespace name, used before, had
// no permissions at all and any local user could squat it. The host's lock keeps a second host
// (one started by hand, say) from declaring the running host's turns lost and writing its sessions.
//
// A holder that died leaves its socket file behind: a file nobody accepts on is stale. Removing it
// is the one step two starters could race on (one removes the file the other has just bound), so
// it happens only under `<lock>.takeover`, a file made with O_EXCL, after a second probe.
import { closeSync, openSync, statSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

export type LockHolder = 'daemon' | 'host';

export interface HomeLock {
  release(): void;
}

/** A takeover file older than this was left by a starter that died in the middle of one. */
const TAKEOVER_STALE_MS = 10_000;
/** How often, and how long apart, a starter tries again while another one takes a stale lock over. */
const TAKEOVER_TRIES = 40;
const TAKEOVER_RETRY_MS = 50;

export function lockPath(home: string, holder: LockHolder): string {
  return join(home, `${holder}.lock`);
}

/** Resolves with the lock, or null when another live process holds it. */
export async function acquireHomeLock(home: string, holder: LockHolder): Promise<HomeLock | null> {
  const path = lockPath(home, holder);
  for (let tries = 0; tries < TAKEOVER_TRIES; tries++) {
    const server = await listenOn(path);
    if (server !== null) return held(server, path);
    if (await accepts(path)) return null;
    const outcome = await takeOverStale(path);
    if (outcome !== 'busy') return outcome;
    await new Promise((resolve) => setTimeout(resolve, TAKEOVER_RETRY_MS));
  }
  throw new Error(`could not take ${path}: another start kept taking over a stale lock`);
}

function held(server: Server, path: string): HomeLock {
  server.unref();
  const { ino } = statSync(path);
  return {
    release: () => {
      server.close();
      // Only our own file: after a takeover by another process it would be theirs.
      if (inodeOf(path) === ino) unlinkSync(path);
    },
  };
}

/** Null when the path is taken (by a live holder or by a stale file). */
function listenOn(path: string): Promise<Server | null> {
  return new Promise((resolve, reject) => {
    const server: Server = createServer((socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen({ path }, () => resolve(server));
  });
}

/** True when a live process listens on the path. */
function accepts(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Removes a stale lock file and takes the lock; null when a live holder got there first; `busy` when another starter is taking over. */
async function takeOverStale(path: string): Promise<HomeLock | null | 'busy'> {
  const takeover = `${path}.takeover`;
  if (!createExclusive(takeover)) {
    if (ageMs(takeover) > TAKEOVER_STALE_MS) removeIfPresent(takeover);
    return 'busy';
  }
  try {
    if (await accepts(path)) return null;
    removeIfPresent(path);
    const server = await listenOn(path);
    return server === null ? null : held(server, path);
  } finally {
    removeIfPresent(takeover);
  }
}

function createExclusive(path: string): boolean {
  try {
    closeSync(openSync(path, 'wx', 0o600));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function inodeOf(path: string): number | null {
  try {
    return statSync(path).ino;
  } catch {
    return null;
  }
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
