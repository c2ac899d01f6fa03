// One coordinated shutdown (DESIGN.md "Shutdown"). Every live session is asked to drain; acks
// are collected until all are in or the drain deadline passes; then each session settles
// itself (idle → finalized, turn still live → retained) and all of it is written in one
// durable transaction, together with the end of this boot.
//
//   collecting ──all acked / deadline / second signal──▶ flushing ──committed──▶ done
import type { Work } from '../persistence/store.js';
import type { ShutdownReport } from '../protocol/outbound.js';
import type { CoordinatorMsg, HostMsg, SessionHandle, Settled, ShardMsg, ShutdownReason } from './messages.js';
import { ask, spawnActor, stopActor, tell, SECOND_MS, type ActorContext, type Ref, type SystemRef } from './runtime.js';
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
  listed: boolean;
  handles: SessionHandle[];
  acked: Set<string>;
  cancelDeadline: () => void;
  settled: Settled[];
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

export function spawnShutdownCoordinator(system: SystemRef, spec: CoordinatorSpec): Ref<CoordinatorMsg> {
  const log = spec.services.log.child({ actor: 'shutdown-coordinator', reason: spec.reason });
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
    listed: false,
    handles: [],
    acked: new Set(),
    cancelDeadline,
    settled: [],
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
    case 'sessions':
      state.listed = true;
      state.handles = msg.handles;
      if (state.phase === 'flushing') {
        settleAll(state, ctx, spec);
      } else if (state.phase === 'collecting') {
        for (const h of msg.handles) tell(h.ref, { kind: 'drain', replyTo: ctx.self });
        flushWhenDrained(state, ctx, spec);
      }
      return state;
    case 'drained':
      state.acked.add(msg.sid);
      if (state.phase === 'collecting') flushWhenDrained(state, ctx, spec);
      return state;
    case 'deadline':
      if (state.phase === 'collecting') startFlush(state, ctx, spec);
      return state;
    case 'force':
      if (state.phase === 'collecting') {
        spec.services.log.warn('second signal: skipping the rest of the drain');
        startFlush(state, ctx, spec);
      }
      return state;
    case 'settled':
      if (state.phase !== 'flushing') return state;
      state.settled.push(msg);
      if (state.settled.length === state.handles.length) commit(state, ctx, spec);
      return state;
    case 'flush-timeout':
      if (state.phase === 'flushing') {
        spec.services.log.error({ missing: state.handles.length - state.settled.length }, 'sessions did not settle in time; committing the rest');
        commit(state, ctx, spec);
      }
      return state;
  }
}

function enter(state: CoordinatorState, next: CoordinatorPhase, spec: CoordinatorSpec): void {
  if (!NEXT[state.phase].includes(next)) throw new IllegalTransition(state.phase, next);
  spec.services.log.info({ from: state.phase, to: next }, 'shutdown phase');
  state.phase = next;
}

function flushWhenDrained(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  if (state.listed && state.acked.size >= state.handles.length) startFlush(state, ctx, spec);
}

function startFlush(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  state.cancelDeadline();
  enter(state, 'flushing', spec);
  // Not a drain wait: a safety net for a session that never answers, so the flush still ends in budget.
  const spareMs = Math.max(0, state.plan.endMs - spec.services.clock.nowMs() - SAFETY_MARGIN_MS);
  const timer = setTimeout(() => tell(ctx.self, { kind: 'flush-timeout' }), spareMs);
  state.cancelSafetyNet = () => clearTimeout(timer);
  if (state.listed) settleAll(state, ctx, spec);
}

function settleAll(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  if (state.handles.length === 0) return commit(state, ctx, spec);
  const endReason = `compute_host_${spec.reason}`;
  for (const h of state.handles) tell(h.ref, { kind: 'finalize', endReason, replyTo: ctx.self });
}

function commit(state: CoordinatorState, ctx: ActorContext<CoordinatorMsg>, spec: CoordinatorSpec): void {
  const { store, clock, bootId, log } = spec.services;
  state.cancelSafetyNet();
  enter(state, 'done', spec);
  const works: Work[] = [];
  for (const s of state.settled) if (s.work) works.push(s.work);
  let error: string | undefined;
  try {
    store.commitNow(
      (w) => {
        for (const work of works) work(w);
        w.endBoot(bootId, `compute_host_${spec.reason}`);
      },
      { durable: true },
    );
  } catch (err) {
    error = (err as Error).message;
    log.error({ err }, 'shutdown flush failed');
  }
  const report: ShutdownReport = {
    reason: spec.reason,
    finalized: error ? [] : sidsWith(state.settled, 'finalized'),
    retained: error ? [] : sidsWith(state.settled, 'retained'),
    elapsed_ms: Math.round(clock.nowMs() - state.plan.startMs),
    ...(error ? { error } : {}),
  };
  log.info({ finalized: report.finalized.length, retained: report.retained.length, elapsedMs: report.elapsed_ms }, 'shutdown flushed');
  tell(spec.host, { kind: 'shutdown-done', report });
  stopActor(ctx.self);
}

function sidsWith(settled: Settled[], outcome: Settled['outcome']): string[] {
  return settled.filter((s) => s.outcome === outcome).map((s) => s.sid);
}
