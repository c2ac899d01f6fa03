// Runs in a worker thread with its own connection: moves WAL frames into the database file
// (and fsyncs it) off the host's event loop, so a checkpoint never stalls a turn or a heartbeat.
// PASSIVE never blocks the writer; the writer restarts the WAL once it is fully checkpointed.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new Database(file);
db.pragma('busy_timeout = 1000');
parentPort?.postMessage({ ready: true });

setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    parentPort?.postMessage({ error: (err as Error).message });
  }
}, intervalMs);
