import { expect } from 'chai';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { syncWalPeriodically, WAL_SYNC_INTERVAL_MS } from '../../persistence/sqlite/wal-sync.js';

/** This process's descriptors open on `file`. */
function descriptorsOn(file: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) count++;
    } catch {
      // closed while we listed
    }
  }
  return count;
}

/** Resolves once `holds()` is true, checking every 10 ms; fails after `boundMs`. */
async function within(boundMs: number, holds: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + boundMs;
  while (!holds()) {
    if (performance.now() > deadline) throw new Error(`not within ${boundMs} ms: ${what}`);
    await delay(10);
  }
}

describe('WAL sync', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'turnhost-walsync-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('opens the WAL once it exists, keeps one descriptor across syncs, and closes it on stop', async () => {
    const wal = join(dir, 'turnhost.db-wal');
    const sync = syncWalPeriodically(wal);
    await delay(3 * WAL_SYNC_INTERVAL_MS);
    expect(descriptorsOn(wal)).to.equal(0); // no file yet, and no error either
    writeFileSync(wal, 'frames');
    await within(20 * WAL_SYNC_INTERVAL_MS, () => descriptorsOn(wal) === 1, 'the WAL opened');
    await delay(3 * WAL_SYNC_INTERVAL_MS);
    expect(descriptorsOn(wal)).to.equal(1);
    sync.stop();
    await within(20 * WAL_SYNC_INTERVAL_MS, () => descriptorsOn(wal) === 0, 'the descriptor closed');
  });
});
