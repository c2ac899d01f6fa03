// Syncs the WAL file to disk every WAL_SYNC_INTERVAL_MS on libuv's thread pool, off the event loop.
// With synchronous=NORMAL SQLite fsyncs only at checkpoints, so without this a power loss could
// take every commit since the last checkpoint (up to 16 MiB of them), and the shutdown's one
// synchronous=FULL commit would have to push all of that to disk before the ack. This is only an
// fdatasync of the file, not a checkpoint: it takes no SQLite lock and never delays a commit.
import { close, fdatasync, open } from 'node:fs';

export const WAL_SYNC_INTERVAL_MS = 100;

export interface WalSync {
  stop(): void;
}

export function syncWalPeriodically(walFile: string): WalSync {
  let fd: number | null = null;
  let busy = false;
  let stopped = false;
  const release = (): void => {
    if (fd !== null) close(fd, () => {});
    fd = null;
  };
  const done = (): void => {
    busy = false;
    if (stopped) release();
  };
  const tick = (): void => {
    if (busy) return;
    busy = true;
    if (fd !== null) {
      fdatasync(fd, done);
      return;
    }
    // The WAL file appears with the first write; until then there is nothing to sync.
    open(walFile, 'r', (err, opened) => {
      if (err === null) fd = opened;
      if (stopped) release();
      if (err === null && !stopped) fdatasync(opened, done);
      else busy = false;
    });
  };
  const timer = setInterval(tick, WAL_SYNC_INTERVAL_MS);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
      if (!busy) release();
    },
  };
}
