// The host actor: takes parsed frames, routes session frames to their shard, admits turns (at
// most `workers` at once, FIFO), answers debug, and runs the coordinated shutdown. It never
// waits on a turn, so interrupt, respond, control and shutdown are answered at once.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { AgentsFrame, HostInFrame } from '../../protocol/frames.js';
import type { DebugTopic, ShutdownReport } from '../../protocol/outbound.js';
import type { CoordinatorMsg, FinishedTurn, HostMsg, HostStats, SessionDescription, ShardMsg, ShutdownReason, TurnTicket } from './messages.js';
import { parseControl } from './routes.js';
import { ask, describeActors, spawnActor, tell, SECOND_MS, type ActorContext, type Ref, type SystemRef } from '../runtime.js';
import type { HostServices } from './services.js';
import { shardIndex, spawnShards } from './session-shard.js';
import { spawnShutdownCoordinator } from './shutdown-coordinator.js';
import { personOf, TurnAdmission } from './turn-admission.js';

export const DEFAULT_SHUTDOWN_WAIT_SEC = 10;

/** Finished turns kept for debug `turns`. */
const RECENT_TURNS = 50;
const DEBUG_TIMEOUT_MS = 5 * SECOND_MS;

export interface HostOptions {
  workers: number;
  /** `--max-running-per-person` (PROTOCOL.md §5.7); absent: no cap. */
  maxRunningPerPerson?: number;
  heartbeatSecs: number;
}

interface HostState {
  admission: TurnAdmission;
  sessions: number;
  progressCounter: number;
  recent: FinishedTurn[];
  shutdown: { coordinator: Ref<CoordinatorMsg>; requestIds: string[]; waiters: Ref<ShutdownReport>[] } | null;
}

interface HostWiring {
  system: SystemRef;
  services: HostServices;
  shards: Ref<ShardMsg>[];
  loopDelay: ReturnType<typeof monitorEventLoopDelay>;
  onStopped: (report: ShutdownReport) => void;
}

export interface HostHandle {
  readonly system: SystemRef;
  readonly ref: Ref<HostMsg>;
  /** The 64 shard actors that parent the sessions. */
  readonly shards: readonly Ref<ShardMsg>[];
  submit(frame: HostInFrame): void;
  shutdown(reason: ShutdownReason, waitSec: number): Promise<ShutdownReport>;
  stats(): Promise<HostStats>;
  /** Resolves once a shutdown has flushed; the process may exit then. */
  readonly stopped: Promise<ShutdownReport>;
}

export function startHost(system: SystemRef, services: HostServices, options: HostOptions): HostHandle {
  let onStopped: (report: ShutdownReport) => void = () => {};
  const stopped = new Promise<ShutdownReport>((resolve) => (onStopped = resolve));
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const wiring: HostWiring = { system, services, shards: [], loopDelay, onStopped };
  const ref = spawnActor<HostState, HostMsg>(system, 'host', (state, msg, ctx) => handle(state, msg, ctx, wiring), {
    log: services.log.child({ actor: 'host' }),
    init: () => ({ admission: new TurnAdmission(options.workers, options.maxRunningPerPerson ?? Infinity), sessions: 0, progressCounter: 0, recent: [], shutdown: null }),
  });
  wiring.shards = spawnShards(system, services, ref);
  const stopHeartbeat = options.heartbeatSecs > 0 ? startHeartbeat(ref, services, options.heartbeatSecs * SECOND_MS) : () => {};
  stopped.then(() => {
    stopHeartbeat();
    loopDelay.disable();
  });
  return {
    system,
    ref,
    shards: wiring.shards,
    stopped,
    submit: (frame) => tell(ref, { kind: 'frame', frame }),
    shutdown: (reason, waitSec) =>
      ask(ref, (replyTo: Ref<ShutdownReport>): HostMsg => ({ kind: 'shutdown', reason, waitSec, replyTo }), (waitSec + 5) * SECOND_MS),
    stats: () => ask(ref, (replyTo: Ref<HostStats>): HostMsg => ({ kind: 'stats', replyTo }), DEBUG_TIMEOUT_MS),
  };
}

function startHeartbeat(host: Ref<HostMsg>, services: HostServices, periodMs: number): () => void {
  let cancel = (): void => {};
  const tick = (): void => {
    tell(host, { kind: 'heartbeat' });
    cancel = services.clock.after(periodMs, tick);
  };
  cancel = services.clock.after(periodMs, tick);
  return () => cancel();
}

function grant(tickets: readonly TurnTicket[]): void {
  for (const ticket of tickets) tell(ticket.session, { kind: 'slot', ticketId: ticket.id });
}

function handle(state: HostState, msg: HostMsg, ctx: ActorContext<HostMsg>, wiring: HostWiring): HostState {
  switch (msg.kind) {
    case 'frame':
      onFrame(state, msg.frame, ctx, wiring);
      return state;
    case 'admit': {
      if (state.shutdown !== null) {
        // Every turn.start reaching a session now was accepted before the shutdown (new ones are
        // refused above): it starts if a worker is free, and is refused rather than queued otherwise.
        const free = state.admission.admitIfFree(msg.ticket);
        tell(msg.ticket.session, free ? { kind: 'slot', ticketId: msg.ticket.id } : { kind: 'admission-refused', ticketId: msg.ticket.id });
        return state;
      }
      grant(state.admission.admit(msg.ticket));
      return state;
    }
    case 'withdraw':
    case 'release': {
      grant(state.admission.release(msg.ticketId));
      if (msg.kind === 'release' && msg.finished) recordFinished(state, msg.finished);
      return state;
    }
    case 'session-count':
      state.sessions += msg.delta;
      return state;
    case 'heartbeat':
      writeHeartbeat(state, wiring);
      return state;
    case 'shutdown':
      beginShutdown(state, msg, ctx, wiring);
      return state;
    case 'shutdown-done':
      finishShutdown(state, msg.report, wiring);
      return state;
    case 'stats':
      tell(msg.replyTo, stats(state));
      return state;
  }
}

function recordFinished(state: HostState, finished: FinishedTurn): void {
  if (finished.outcome !== 'failed') state.progressCounter++;
  state.recent.push(finished);
  if (state.recent.length > RECENT_TURNS) state.recent.shift();
}

function onFrame(state: HostState, frame: HostInFrame, ctx: ActorContext<HostMsg>, wiring: HostWiring): void {
  const { writer } = wiring.services;
  switch (frame.type) {
    case 'turn.start':
      if (state.shutdown !== null) {
        writer.write({ type: 'turn.error', sid: frame.sid, request_id: frame.request_id, message: 'host shutting down', reason: 'shutting_down' });
        return;
      }
      tell(shardFor(frame.sid, wiring), { kind: 'frame', frame, ticket: state.admission.arrive(personOf(frame.by)) });
      return;
    case 'interrupt':
    case 'respond':
    case 'reload_mcp':
    case 'queue':
    case 'session.create':
    case 'session.delete':
      tell(shardFor(frame.sid, wiring), { kind: 'frame', frame });
      return;
    case 'control': {
      const parsed = parseControl(frame);
      if (!parsed.ok) {
        writer.write({ type: 'control.error', sid: frame.sid, request_id: frame.request_id, message: parsed.message });
        return;
      }
      tell(shardFor(frame.sid, wiring), { kind: 'frame', frame, control: parsed.request });
      return;
    }
    case 'shutdown':
      beginShutdown(state, { kind: 'shutdown', reason: 'shutdown', waitSec: frame.wait ?? DEFAULT_SHUTDOWN_WAIT_SEC, requestId: frame.request_id }, ctx, wiring);
      return;
    case 'debug':
      answerDebug(state, frame.request_id, frame.what, wiring);
      return;
    case 'agents':
      answerAgents(frame, wiring);
      return;
  }
}

function shardFor(sid: string, wiring: HostWiring): Ref<ShardMsg> {
  return wiring.shards[shardIndex(sid)]!;
}

function beginShutdown(state: HostState, msg: Extract<HostMsg, { kind: 'shutdown' }>, ctx: ActorContext<HostMsg>, wiring: HostWiring): void {
  if (state.shutdown !== null) {
    // A second SIGTERM/SIGINT skips what is left of the drain; the flush still runs.
    if (msg.reason === 'sigterm') tell(state.shutdown.coordinator, { kind: 'force' });
    if (msg.requestId) state.shutdown.requestIds.push(msg.requestId);
    if (msg.replyTo) state.shutdown.waiters.push(msg.replyTo);
    return;
  }
  for (const ticket of state.admission.drainWaiting()) {
    tell(ticket.session, { kind: 'admission-refused', ticketId: ticket.id });
  }
  const coordinator = spawnShutdownCoordinator(wiring.system, {
    reason: msg.reason,
    waitSec: msg.waitSec,
    shards: wiring.shards,
    host: ctx.self,
    services: wiring.services,
  });
  state.shutdown = { coordinator, requestIds: msg.requestId ? [msg.requestId] : [], waiters: msg.replyTo ? [msg.replyTo] : [] };
}

function finishShutdown(state: HostState, report: ShutdownReport, wiring: HostWiring): void {
  const { writer } = wiring.services;
  if (state.shutdown === null) return;
  for (const requestId of state.shutdown.requestIds) writer.write({ type: 'shutdown.ack', request_id: requestId, ...report });
  for (const waiter of state.shutdown.waiters) tell(waiter, report);
  wiring.onStopped(report);
}

function writeHeartbeat(state: HostState, wiring: HostWiring): void {
  const lagMs = wiring.loopDelay.count > 0 ? wiring.loopDelay.max / 1e6 : 0;
  wiring.loopDelay.reset();
  const { problem } = wiring.services.store.health();
  wiring.services.writer.write({
    type: 'hb',
    active_turns: state.admission.activeTurns,
    queued_turns: state.admission.queuedTurns,
    sessions: state.sessions,
    progress_counter: state.progressCounter,
    rss_mb: Math.round(process.memoryUsage.rss() / 104857.6) / 10,
    loop_lag_ms: Math.round(lagMs * 10) / 10,
    ...(problem === undefined ? {} : { store_problem: problem }),
  });
}

function stats(state: HostState): HostStats {
  return {
    workers: state.admission.workers,
    activeTurns: state.admission.activeTurns,
    queuedTurns: state.admission.queuedTurns,
    sessions: state.sessions,
    progressCounter: state.progressCounter,
    shuttingDown: state.shutdown !== null,
    recentTurns: state.recent.slice(),
  };
}

/** Debug answers are gathered off the host's mailbox, so a slow gather never delays a frame. */
/** The catalogue (AGENT.md §8), listed or read again from the file; a file that does not validate leaves the old one. */
function answerAgents(frame: AgentsFrame, wiring: HostWiring): void {
  const { writer, agents } = wiring.services;
  const answer = frame.op === 'list' ? Promise.resolve(agents.view()) : agents.reread(frame.env);
  answer.then(
    (result) => writer.write({ type: 'agents.result', request_id: frame.request_id, result }),
    (err: unknown) => writer.write({ type: 'agents.error', request_id: frame.request_id, message: (err as Error).message }),
  );
}

function answerDebug(state: HostState, requestId: string, what: DebugTopic, wiring: HostWiring): void {
  const { writer, log } = wiring.services;
  const snapshot = stats(state);
  debugResult(what, snapshot, wiring).then(
    (result) => writer.write({ type: 'debug.result', request_id: requestId, what, result }),
    (err: unknown) => {
      log.error({ err, what }, 'debug failed');
      writer.write({ type: 'error', request_id: requestId, message: `debug ${what} failed: ${(err as Error).message}` });
    },
  );
}

async function debugResult(what: DebugTopic, snapshot: HostStats, wiring: HostWiring): Promise<unknown> {
  switch (what) {
    case 'stats':
      return {
        ...snapshot,
        recentTurns: undefined,
        rssMb: Math.round(process.memoryUsage.rss() / 104857.6) / 10,
        uptimeSec: Math.round(process.uptime()),
        pid: process.pid,
        bootId: wiring.services.bootId,
      };
    case 'actors':
      return describeActors(wiring.system);
    case 'sessions':
      return describeSessions(wiring);
    case 'requests':
      return (await describeSessions(wiring)).flatMap((s) => s.open_requests ?? []);
    case 'turns': {
      const sessions = await describeSessions(wiring);
      return {
        workers: snapshot.workers,
        active: snapshot.activeTurns,
        queued: snapshot.queuedTurns,
        running: sessions.filter((s) => s.phase === 'running').map((s) => ({ sid: s.sid, turn_id: s.turn_id })),
        waiting: sessions.filter((s) => s.phase === 'waiting').map((s) => ({ sid: s.sid, turn_id: s.turn_id })),
        recent: snapshot.recentTurns,
      };
    }
  }
}

async function describeSessions(wiring: HostWiring): Promise<Partial<SessionDescription>[]> {
  const perShard = await Promise.all(
    wiring.shards.map((shard) =>
      ask(shard, (replyTo: Ref<unknown[]>): ShardMsg => ({ kind: 'describe', replyTo }), DEBUG_TIMEOUT_MS),
    ),
  );
  return perShard.flat() as Partial<SessionDescription>[];
}
