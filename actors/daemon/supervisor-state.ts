// The supervisor actor's state and wiring, apart from its handlers so that the files that
// handle it (supervisor.ts, supervisor-calls.ts) import it without importing each other.
import type { Logger } from 'pino';
import type { ProcessProbe } from '../../persistence/registry.js';
import type { HelloFrame } from '../../protocol/outbound.js';
import type { Clock } from '../clock.js';
import type { Ref } from '../runtime.js';
import type { HostChildEvents, HostHandle } from './host-child.js';
import type { OutputGate } from './output-gate.js';
import type { PendingControls } from './pending-controls.js';
import type { CallReply, GatewayMsg, HostCall, HostPhase, StopReport } from './supervisor-messages.js';

export interface SupervisorConfig {
  home: string;
  buildSha: string;
  hostEntry: string;
  /** Made at each spawn: a node advertises its edge's address, known only once the edge listens. */
  hostArgs: () => string[];
  /** The catalogue's default agent (for host.status): it changes at a reload. */
  agent: () => string;
  /** Made at each spawn: the host's allowlisted environment. */
  hostEnv: () => NodeJS.ProcessEnv;
  /**
   * Made at each spawn: what the host reads on its catalogue descriptor (catalogue-handoff.ts), the
   * catalogue as validated and the values its agents need. The first host is spawned before the
   * daemon validated its file: this settles then.
   */
  hostHandoff: () => Promise<string>;
  registryPath: string;
  probe: ProcessProbe;
  clock: Clock;
  log: Logger;
  /** The host's stderr lines, for the log file: anything may write there (an SDK, a user agent). */
  onHostStderr(line: string): void;
  /** The host's own log records, from its log descriptor. */
  onHostLog(line: string): void;
  /** Once stopped: the daemon may close its sockets and exit. */
  onStopped(report: StopReport): void;
  /** The daemon's first host said hello: what its start leaves for after that runs now. */
  onFirstHello(): void;
  /** The daemon's first host could not load its agent (exit 78: a config, or a machine without the sandbox it needs): the daemon cannot serve. `why`: the host's last line. */
  onFirstHostRefused(why: string): void;
  helloTimeoutMs: number;
  controlTimeoutMs: number;
  respondTimeoutMs: number;
  /** The seam for spawning the host; tests may give a stand-in. */
  spawnHost?: (entry: string, args: readonly string[], env: NodeJS.ProcessEnv, events: HostChildEvents, handoff: Promise<string>) => HostHandle;
}

/**
 * A prompt.submit the host has not yet committed (PROTOCOL.md §2.1): until its turn.started,
 * turn.queued, turn.steered, turn.duplicate or turn.error, a host that dies leaves it to the next
 * one, which gets the same turn.start (same turn id and client_message_id, so it never runs twice).
 */
export interface PendingSubmit {
  sid: string;
  turnId: string;
  frame: Record<string, unknown>;
  /** The submitter, until it has its answer. */
  replyTo: Ref<CallReply> | null;
  /** Sent again to a new host: a duplicate answer then means the dead host had it. */
  resent: boolean;
}

/** The turn a session runs, as the host said (turn.started): for host.status and the crash path. */
export interface RunningTurn {
  requestId: string;
  turnId: string;
  queueId?: string;
}

export interface SupervisorState {
  phase: HostPhase;
  child: HostHandle | null;
  hello: HelloFrame | null;
  restarts: number[];
  restartCount: number;
  lastError: string | null;
  /** Why the supervisor itself ended the current host (rejected hello, no hello, missed heartbeats). */
  killedBecause: string | null;
  lastFrameMs: number;
  lastHeartbeatMs: number | null;
  heartbeatMs: number;
  lastBeat: { rssMb: number; loopLagMs: number; storeProblem: string | null } | null;
  submits: Map<string, PendingSubmit>;
  running: Map<string, RunningTurn>;
  /** Sessions a client attached to while this daemon runs: their queues may run. */
  attached: Set<string>;
  /** Sessions whose queue the current host holds paused until a client attaches (PROTOCOL.md §2.1). */
  pausedQueues: Set<string>;
  replies: PendingControls<ReplyEntry>;
  nextRequest: number;
  /** The current host's one-shot timers (hello, kill deadlines, the respawn delay). */
  cancelTimers: (() => void)[];
  /** The heartbeat watchdog's next look: one slot, since it re-arms every second for the host's life. */
  cancelWatchdog: () => void;
  stop: { waiters: Ref<StopReport>[]; report: StopReport } | null;
  /** Calls that came while the host was starting or restarting: answered once it says hello (PROTOCOL.md §2 readiness). */
  parkedCalls: Map<number, ParkedCall>;
  nextParked: number;
  startedAt: string;
}

export interface SupervisorWiring {
  config: SupervisorConfig;
  gateway: Ref<GatewayMsg>;
  /** Shared with the gateway: the host's output is read only while the gateway keeps up. */
  gate: OutputGate;
}

export interface ReplyEntry {
  replyTo: Ref<CallReply>;
  kind: 'interrupt' | 'control' | 'respond' | 'debug' | 'queue' | 'agents';
  what: string;
  sid: string | null;
  timeoutMs: number;
}

export interface ParkedCall {
  call: HostCall;
  replyTo: Ref<CallReply>;
  cancelTimer: () => void;
}
