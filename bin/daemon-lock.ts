// One daemon per home, held by something the kernel releases when its holder dies: a listening
// abstract-namespace unix socket named from the home's real path. Files in the home (socket,
// registry) are for finding the daemon, never proof that it is alive.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:net';

export interface DaemonLock {
  release(): void;
}

export function lockName(home: string): string {
  return `\0turnhost-daemon-${createHash('sha256').update(home).digest('hex').slice(0, 32)}`;
}

/** Resolves with the lock, or null when another live process holds it. */
export function acquireDaemonLock(home: string): Promise<DaemonLock | null> {
  return new Promise((resolve, reject) => {
    const server: Server = createServer((socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen({ path: lockName(home) }, () => {
      server.unref();
      resolve({ release: () => server.close() });
    });
  });
}
