// Starts and stops the background checkpoint worker for one database file.
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints; between two, the WAL holds at most this much of the host's writes. */
export const CHECKPOINT_INTERVAL_MS = 100;

export interface Checkpointer {
  /** Settles once the worker has its connection open (or has failed, and inline checkpoints took over). */
  readonly ready: Promise<void>;
  stop(): void;
}

export function startCheckpointer(file: string, onFailure: (message: string) => void): Checkpointer {
  const source = import.meta.url.endsWith('.ts') ? './checkpoint-worker.ts' : './checkpoint-worker.js';
  const worker = new Worker(new URL(source, import.meta.url), { workerData: { file, intervalMs: CHECKPOINT_INTERVAL_MS } });
  worker.unref();
  let stopped = false;
  let settle: () => void = () => {};
  const ready = new Promise<void>((resolve) => (settle = resolve));
  const fail = (message: string): void => {
    settle();
    if (!stopped) onFailure(message);
  };
  worker.on('message', (msg: { ready?: boolean; error?: string }) => {
    if (msg.ready) settle();
    if (msg.error) fail(msg.error);
  });
  worker.on('error', (err) => fail(err.message));
  worker.on('exit', () => fail('checkpoint worker exited'));
  return {
    ready,
    stop: () => {
      stopped = true;
      settle();
      void worker.terminate();
    },
  };
}
