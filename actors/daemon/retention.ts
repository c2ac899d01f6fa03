// Retention (PROTOCOL.md §2.3), off unless asked: every sweep, sessions idle longer than
// `--retention-days` are deleted and those idle longer than `--archive-after-days` archived, pinned
// ones never. Always: a file uploaded and not named by any session within `--unnamed-upload-hours`
// (a prompt never sent) is forgotten, its bytes freed when nothing else holds them (§2.4). Each goes the way a person's delete or archive goes (the method, as `retention`), so
// a running turn keeps its session until the next sweep, and a session another node owns is
// deleted there. On several nodes one sweeps at a time: the sweep's lease in the store.
import type { Logger } from 'pino';
import type { SideStore } from '../../persistence/side-store.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { WakeLoop } from './wake-loop.js';

export const DAY_MS = 86_400_000;
export const DEFAULT_SWEEP_SECS = 3600;
export const DEFAULT_UNNAMED_UPLOAD_HOURS = 24;
const HOUR_MS = 3_600_000;
/** At most this many sessions a sweep deletes (and as many it archives): the rest wait for the next. */
const SWEEP_BATCH = 1000;
/** A sweep that could not run (the store or the host away) is tried again this soon. */
const RETRY_MS = 30_000;
const SWEEP_LEASE = 'retention';

export interface RetentionPolicy {
  /** Sessions idle longer than this are deleted; null: never. */
  deleteAfterMs: number | null;
  /** Sessions idle longer than this are archived; null: never. */
  archiveAfterMs: number | null;
  /** An upload no session names is forgotten this long after it was made. */
  unnamedUploadMs: number;
  sweepMs: number;
}

export interface RetentionOptions {
  policy: RetentionPolicy;
  side(): Promise<SideStore | null>;
  /** A client method, as the sweep's own identity. */
  call(method: string, params: Record<string, unknown>): Promise<unknown>;
  /** Who holds the sweep's lease: this node. */
  holder: string;
  log: Logger;
  /** How many sessions a sweep deleted and archived (for /metrics). */
  swept(action: 'deleted' | 'archived', count: number): void;
}

export interface SweepReport {
  deleted: number;
  archived: number;
  /** Uploads no session named, forgotten. */
  uploads: number;
  /** Sessions a running turn kept, or whose node could not be reached: tried again next sweep. */
  skipped: number;
}

/** The policy the options ask for: sessions are kept for ever unless a bound is given. */
export function retentionPolicy(options: { retentionDays?: number; archiveAfterDays?: number; retentionSweepSecs?: number; unnamedUploadHours?: number }): RetentionPolicy {
  return {
    deleteAfterMs: options.retentionDays === undefined ? null : options.retentionDays * DAY_MS,
    archiveAfterMs: options.archiveAfterDays === undefined ? null : options.archiveAfterDays * DAY_MS,
    unnamedUploadMs: (options.unnamedUploadHours ?? DEFAULT_UNNAMED_UPLOAD_HOURS) * HOUR_MS,
    sweepMs: (options.retentionSweepSecs ?? DEFAULT_SWEEP_SECS) * 1000,
  };
}

export class Retention {
  private readonly loop = new WakeLoop(() => this.look());

  constructor(private readonly options: RetentionOptions) {}

  /** The first sweep now, then one every `sweepMs`. */
  start(): void {
    this.loop.wake();
  }

  close(): Promise<void> {
    return this.loop.close();
  }

  private async look(): Promise<number> {
    const { policy, log } = this.options;
    try {
      const side = await this.options.side();
      if (side === null) return RETRY_MS;
      const now = Date.now();
      if (!(await side.flags.takeSweep(SWEEP_LEASE, this.options.holder, now + policy.sweepMs, now))) return policy.sweepMs;
      const report = await this.sweep(side, now);
      this.options.swept('deleted', report.deleted);
      this.options.swept('archived', report.archived);
      log.info({ name: 'retention-sweep', ...report }, `retention: ${report.deleted} session(s) deleted, ${report.archived} archived, ${report.uploads} unnamed upload(s) forgotten`);
      return policy.sweepMs;
    } catch (err) {
      log.warn({ name: 'retention-sweep', why: (err as Error).message }, 'retention: the sweep could not run now; trying again soon');
      return Math.min(RETRY_MS, policy.sweepMs);
    }
  }

  private async sweep(side: SideStore, now: number): Promise<SweepReport> {
    const { policy } = this.options;
    const report: SweepReport = { deleted: 0, archived: 0, skipped: 0, uploads: await side.blobs.forgetUnnamed(now - policy.unnamedUploadMs) };
    if (policy.deleteAfterMs !== null) {
      for (const idle of await side.flags.idle(now - policy.deleteAfterMs, SWEEP_BATCH)) {
        if (await this.done('session.delete', idle.sid, report)) report.deleted++;
      }
    }
    if (policy.archiveAfterMs !== null) {
      for (const idle of await side.flags.idle(now - policy.archiveAfterMs, SWEEP_BATCH, { archived: false })) {
        if (await this.done('session.archive', idle.sid, report)) report.archived++;
      }
    }
    return report;
  }

  /** True when the method did it; a refusal that the next sweep may get past is counted as skipped. */
  private async done(method: string, sid: string, report: SweepReport): Promise<boolean> {
    try {
      await this.options.call(method, { session_id: sid });
      return true;
    } catch (err) {
      if (!(err instanceof RpcError)) throw err;
      // Deleted meanwhile by someone else: nothing left to do.
      if (err.code === ErrorCodes.sessionNotFound) return false;
      // The daemon stops, its host or the store is away: the sweep ends, and is tried again soon.
      if (err.code === ErrorCodes.shuttingDown || err.code === ErrorCodes.hostUnavailable || err.code === ErrorCodes.internal) throw err;
      this.options.log.info({ name: 'retention-skip', sid, why: err.message }, 'retention: a session is kept until the next sweep');
      report.skipped++;
      return false;
    }
  }
}
