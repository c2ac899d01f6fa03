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
  hostArgs: string[];
  /** The agent the host runs, as given to the daemon (for host.status). */
  agent: string;
  hostEnv: NodeJS.ProcessEnv;
  registryPath: string;
  probe: ProcessProbe;
  clock: Clock;
  log: Logger;
  /** The host's stderr lines, for the log file. */
  onHostStderr(line: string): void;
  /** Once stopped: the daemon may close its sockets and exit. */
  onStopped(report: StopReport): void;
  helloTimeoutMs: number;
  controlTimeoutMs: number;
  respondTimeoutMs: number;
  /** The seam for spawning the host; tests may give a stand-in. */
  spawnHost?: (entry: string, args: readonly string[], env: NodeJS.ProcessEnv, events: HostChildEvents) => HostHandle;
}

export interface PendingTurn {
  sid: string;
  turnId: string;
  /** The turn.start as sent: sent again to the next host when this one died before starting it. */
  frame: Record<string, unknown>;
  /** The host said turn.started: its prompt is committed, and it is never sent again. */
  started: boolean;
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
  activeTurns: number;
  lastBeat: { rssMb: number; loopLagMs: number } | null;
  pendingTurns: Map<string, PendingTurn>;
  busy: Map<string, string>;
  replies: PendingControls<ReplyEntry>;
  nextRequest: number;
  cancelTimers: (() => void)[];
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
  kind: 'interrupt' | 'control' | 'respond' | 'debug';
  what: string;
  sid: string | null;
  timeoutMs: number;
}

export interface ParkedCall {
  call: HostCall;
  replyTo: Ref<CallReply>;
  cancelTimer: () => void;
}
