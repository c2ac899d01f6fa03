// One coordinated shutdown (DESIGN.md "Shutdown"). Every live session is asked to drain; a
// session acks once idle, and its ack finalizes it (it spends its latch and hands over its rows).
// Acks are collected until all are in or the drain deadline passes; every session that has not
// acked by then is a laggard and is retained. All the rows are written in one durable
// transaction, together with the end of this boot.
//
//   collecting ──all acked / deadline / second signal──▶ flushing ──committed──▶ done
import { storageProblem, type Work } from '../../persistence/store.js';
import type { ShutdownReport } from '../../protocol/outbound.js';
import type { CoordinatorMsg, HostMsg, SessionHandle, Settled, ShardMsg, ShutdownReason } from './messages.js';
import { ask, spawnActor, stopActor, tell, SECOND_MS, type ActorContext, type Ref, type SystemRef } from '../runtime.js';
import type { HostServices } from './services.js';

/** The flush reserve is min(1 s, budget / 2): the flush must never race the supervisor's SIGKILL. */
const MAX_RESERVE_MS = SECOND_MS;

export interface DrainPlan {
  startMs: number;
  budgetMs: number;
  /** When the drain stops waiting for acks. */
  deadlineMs: number;
  /** When the whole shutdown must be over. */
  endMs: number;
}

export function drainPlan(startMs: number, waitSec: number): DrainPlan {
  const budgetMs = Math.max(0, waitSec) * 1000;
  const reserveMs = Math.min(MAX_RESERVE_MS, budgetMs / 2);
  return { startMs, budgetMs, deadlineMs: startMs + budgetMs - reserveMs, endMs: startMs + budgetMs };
}

export type CoordinatorPhase = 'collecting' | 'flushing' | 'done';

const NEXT: Record<CoordinatorPhase, readonly CoordinatorPhase[]> = {
  collecting: ['flushing'],
  flushing: ['done'],
  done: [],
};

export class IllegalTransition extends Error {
  constructor(from: CoordinatorPhase, to: CoordinatorPhase) {
    super(`shutdown coordinator cannot go from ${from} to ${to}`);
  }
}

interface CoordinatorState {
  phase: CoordinatorPhase;
  plan: DrainPlan;
  flushStartMs: number;
  overshootMs: number | null;
  listed: boolean;
  handles: SessionHandle[];
  /** Every session's rows, from its drain ack (finalized) or its answer to retain. */
  settled: Settled[];
  drained: Set<string>;
  /** Laggards told to retain that have not answered yet. */
  awaitingRetain: Set<string>;
  cancelDeadline: () => void;
  cancelSafetyNet: () => void;
}

export interface CoordinatorSpec {
  reason: ShutdownReason;
  waitSec: number;
  shards: readonly Ref<ShardMsg>[];
  host: Ref<HostMsg>;
  services: HostServices;
}

/** Time kept between a stuck flush's safety net and the end of the budget. */
const SAFETY_MARGIN_MS = 50;

export function spawnShutdownCoordinator(system: SystemRef, given: CoordinatorSpec): Ref<CoordinatorMsg> {
  const log = given.services.log.child({ actor: 'shutdown-coordinator', reason: given.reason });
  const spec: CoordinatorSpec = { ...given, services: { ...given.services, log } };
  return spawnActor<CoordinatorState, CoordinatorMsg>(system, `shutdown-${Date.now().toString(36)}`, (state, msg, ctx) => handle(state, msg, ctx, spec), {
    log,
    onCrash: 'resume',
    init: (ctx) => begin(ctx, spec),
  });
}

function begin(ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): CoordinatorState {
  const { clock, log } = spec.services;
  const plan = drainPlan(clock.nowMs(), spec.waitSec);
  log.info({ waitSec: spec.waitSec, drainMs: plan.deadlineMs - plan.startMs }, 'shutdown started');
  // Exactly the time left: a fixed tick could overshoot the deadline into the flush reserve.
  const cancelDeadline = clock.after(plan.deadlineMs - clock.nowMs(), () => tell(ctx.self, { kind: 'deadline' }));
  listSessions(spec.shards, plan.endMs - clock.nowMs()).then((handles) => tell(ctx.self, { kind: 'sessions', handles }));
  return {
    phase: 'collecting',
    plan,
    flushStartMs: 0,
    overshootMs: null,
    listed: false,
    handles: [],
    settled: [],
    drained: new Set(),
    awaitingRetain: new Set(),
    cancelDeadline,
    cancelSafetyNet: () => {},
  };
}

async function listSessions(shards: readonly Ref<ShardMsg>[], timeoutMs: number): Promise<SessionHandle[]> {
  const lists = await Promise.all(
    shards.map((shard) => ask(shard, (replyTo: Ref<SessionHandle[]>): ShardMsg => ({ kind: 'list', replyTo }), Math.max(1, timeoutMs)).catch(() => [])),
  );
  return lists.flat();
}

function handle(state: CoordinatorState, msg: CoordinatorMsg, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): CoordinatorState {
  switch (msg.kind) {
    case 'sessions': {
      state.listed = true;
      state.handles = msg.handles;
      const endReason = `compute_host_${spec.reason}`;
      for (const h of msg.handles) tell(h.ref, { kind: 'drain', endReason, replyTo: ctx.self });
      if (state.phase === 'collecting') flushWhenDrained(state, ctx, spec);
      else if (state.phase === 'flushing') retainLaggards(state, ctx, spec);
      return state;
    }
    case 'settled':
      onSettled(state, msg, ctx, spec);
      return state;
    case 'deadline':
      // One wait, never re-armed: Node's timers count whole loop milliseconds, so this may run up
      // to 1 ms before the deadline by performance.now(); asking again would exceed the budget.
      if (state.phase !== 'collecting') return state;
      state.overshootMs = spec.services.clock.nowMs() - state.plan.deadlineMs;
      startFlush(state, ctx, spec);
      return state;
    case 'force':
      if (state.phase === 'collecting') {
        spec.services.log.warn('second signal: skipping the rest of the drain');
        startFlush(state, ctx, spec);
      }
      return state;
    case 'flush-timeout':
      if (state.phase === 'flushing') {
        spec.services.log.error({ missing: state.awaitingRetain.size }, 'sessions did not settle in time; committing the rest');
        commit(state, ctx, spec);
      }
      return state;
  }
}

function onSettled(state: CoordinatorState, msg: Settled, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  if (state.phase === 'done') return;
  // A drain ack after the deadline still counts: that session finalized itself, and its retain answer will be `skipped`.
  state.settled.push(msg);
  if (msg.answering === 'drain') {
    state.drained.add(msg.sid);
    if (state.phase === 'collecting') flushWhenDrained(state, ctx, spec);
    return;
  }
  state.awaitingRetain.delete(msg.sid);
  if (state.phase === 'flushing' && state.awaitingRetain.size === 0) commit(state, ctx, spec);
}

function enter(state: CoordinatorState, next: CoordinatorPhase, spec: CoordinatorSpec): void {
  if (!NEXT[state.phase].includes(next)) throw new IllegalTransition(state.phase, next);
  spec.services.log.info({ from: state.phase, to: next }, 'shutdown phase');
  state.phase = next;
}

function flushWhenDrained(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  if (state.listed && state.drained.size >= state.handles.length) startFlush(state, ctx, spec);
}

function startFlush(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  state.cancelDeadline();
  state.flushStartMs = spec.services.clock.nowMs();
  enter(state, 'flushing', spec);
  // Not a drain wait: a safety net for a session that never answers, so the flush still ends in budget.
  const spareMs = Math.max(0, state.plan.endMs - spec.services.clock.nowMs() - SAFETY_MARGIN_MS);
  const timer = setTimeout(() => tell(ctx.self, { kind: 'flush-timeout' }), spareMs);
  state.cancelSafetyNet = () => clearTimeout(timer);
  if (state.listed) retainLaggards(state, ctx, spec);
}

/** Every session that has not drained is a laggard: its turn is still live at the deadline. */
function retainLaggards(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  for (const h of state.handles) {
    if (state.drained.has(h.sid)) continue;
    state.awaitingRetain.add(h.sid);
    tell(h.ref, { kind: 'retain', reason: 'drain_deadline', replyTo: ctx.self });
  }
  if (state.awaitingRetain.size === 0) commit(state, ctx, spec);
}

/** The shutdown flush: once every session has settled, one durable transaction; then the report. */
function commit(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  state.cancelSafetyNet();
  enter(state, 'done', spec);
  const works: Work[] = [];
  for (const s of state.settled) if (s.work) works.push(s.work);
  void flush(works, spec).then((error) => report(state, ctx, spec, error));
}

/** Every settled session's last writes and the boot's end in one durable transaction; why it failed, if it did. */
async function flush(works: Work[], spec: CoordinatorSpec): Promise<string | undefined> {
  const { store, bootId, log } = spec.services;
  try {
    await store.commitNow(
      (w) => {
        for (const work of works) work(w);
        w.endBoot(bootId, `compute_host_${spec.reason}`);
      },
      { durable: true },
    );
    return undefined;
  } catch (err) {
    log.error({ err }, 'shutdown flush failed');
    return `the shutdown flush could not be written (${storageProblem(err as Error)}): every session is kept for recovery at the next start`;
  }
}

function report(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec, error: string | undefined): void {
  const { clock, log } = spec.services;
  const now = clock.nowMs();
  const report: ShutdownReport = {
    reason: spec.reason,
    // Nothing of a failed flush was written: every session stays as stored (active, or retained
    // by its turn's last commit), and the next start recovers them all.
    finalized: error ? [] : sidsWith(state.settled, 'finalized'),
    retained: error ? state.settled.map((s) => s.sid) : sidsWith(state.settled, 'retained'),
    elapsed_ms: Math.round(now - state.plan.startMs),
    drain_ms: round(state.flushStartMs - state.plan.startMs),
    deadline_overshoot_ms: state.overshootMs === null ? null : round(state.overshootMs),
    flush_ms: round(now - state.flushStartMs),
    ...(error ? { error } : {}),
  };
  log.info({ finalized: report.finalized.length, retained: report.retained.length, elapsedMs: report.elapsed_ms }, 'shutdown flushed');
  tell(spec.host, { kind: 'shutdown-done', report });
  stopActor(ctx.self);
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function sidsWith(settled: Settled[], outcome: Settled['outcome']): string[] {
  return settled.filter((s) => s.outcome === outcome).map((s) => s.sid);
}
