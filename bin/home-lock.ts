// One daemon and one compute host per home, each held by something the kernel releases when its
// holder dies: a listening abstract-namespace unix socket named from the home's real path and the
// holder's role. Files in the home (socket, registry) are for finding a process, never proof that
// it is alive. The host's lock keeps a second host (one started by hand, say) from declaring the
// running host's turns lost and its sessions crashed, and from writing the same sessions.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:net';

export type LockHolder = 'daemon' | 'host';

export interface HomeLock {
  release(): void;
}

export function lockName(home: string, holder: LockHolder): string {
  return `\0turnhost-${holder}-${createHash('sha256').update(home).digest('hex').slice(0, 32)}`;
}

/** Resolves with the lock, or null when another live process holds it. */
export function acquireHomeLock(home: string, holder: LockHolder): Promise<HomeLock | null> {
  return new Promise((resolve, reject) => {
    const server: Server = createServer((socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen({ path: lockName(home, holder) }, () => {
      server.unref();
      resolve({ release: () => server.close() });
    });
  });
}
