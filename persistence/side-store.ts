// What the daemon and the CLI write in the store beside the host (PROTOCOL.md §2.2, §5.6, §8):
// forks, people, schedules, the webhook outbox and a prompt's files, on one connection of their own (SQLite: WAL lets it write
// beside the host, each waiting at most its busy timeout for the other; PostgreSQL: a small pool).
// None of it is on a turn's path. The schema is made when missing: a CLI may come before any host.
import type { SessionFlags } from './session-flags.js';
import type { ImportMade, ImportPlan, ImportRequest } from './session-export.js';
import type { Blobs } from './blobs.js';
import type { Ledger } from './ledger.js';
import type { Outbox } from './outbox.js';
import type { People } from './people.js';
import type { Schedules } from './schedules.js';

/** A fork's request (PROTOCOL.md §2.2): the new session, its folder (null: a new workspace), the source, the turn (null: its last ended one). */
export interface ForkRequest {
  sid: string;
  sessionKey: string;
  cwd: string | null;
  source: string;
  atTurnId: string | null;
  /** Another agent for the fork (AGENT.md §8); null: its source's. */
  agent: string | null;
}

/** What a fork took: the turn, and how many messages of the source's line it shares. */
export interface ForkMade {
  turn_id: string;
  upto: number;
}

export interface SideStore {
  /** Makes the fork in one statement; null when the source or the turn is not there (nothing written). */
  fork(request: ForkRequest, now?: number): Promise<ForkMade | null>;
  people: People;
  schedules: Schedules;
  outbox: Outbox;
  ledger: Ledger;
  /** A prompt's files (PROTOCOL.md §2.4). */
  blobs: Blobs;
  /** Archived and pinned (PROTOCOL.md §2.3), and the retention sweep's lease. */
  flags: SessionFlags;
  /** A session file (session-export.ts) as a new session, in one transaction; ImportRefused when its id is taken. */
  importSession(plan: ImportPlan, request: ImportRequest, now?: number): Promise<ImportMade>;
  close(): Promise<void>;
}
