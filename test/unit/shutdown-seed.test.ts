// The seed's four shutdown tests (seed/test_compute_host_phase1.py), ported against the
// TypeScript modules in this process, on a real SQLite file.
import { expect } from 'chai';
import type { Clock } from '../../actors/clock.js';
import { monotonicClock } from '../../actors/clock.js';
import type { HostMsg, SessionHandle, SessionMsg, Settled, ShardMsg } from '../../actors/host/messages.js';
import { ask, spawnActor, type Ref } from '../../actors/runtime.js';
import { drainPlan, spawnShutdownCoordinator } from '../../actors/host/shutdown-coordinator.js';
import type { Agent } from '../../agents/agent.js';
import type { Work } from '../../persistence/store.js';
import type { StoreWriter } from '../../persistence/store-writer.js';
import type { ShutdownReport } from '../../protocol/outbound.js';
import { startInProcessHost, type InProcessHost } from '../helpers/in-process-host.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A test agent: "quick" ends at once, "ends after 300" ends after 0.3 s, "stuck" waits for
 * release() and ignores interrupts, like the seed's stuck turn.
 */
function seedAgent(events: string[]) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const agent: Agent = {
    name: 'seed',
    async runTurn(turn) {
      if (turn.prompt === 'ends after 300') {
        await sleep(300);
        events.push('turn_end');
      } else if (turn.prompt === 'stuck') {
        // Bounded, and the bound ends with the turn: a pending 30 s timer kept a serial run's
        // process alive for 30 s after its last test.
        let bound: NodeJS.Timeout | undefined;
        await Promise.race([released, new Promise((resolve) => (bound = setTimeout(resolve, 30_000)))]);
        clearTimeout(bound);
      }
      return { reply: 'done' };
    },
  };
  return { agent, release: () => release() };
}

/** Records which sessions the shutdown flush finalizes and retains, in order with the test's own events. */
function recordSettlements(h: InProcessHost, events: string[]): void {
  const commitNow = h.store.commitNow.bind(h.store);
  h.store.commitNow = (work: Work, options?: { durable?: boolean }) =>
    commitNow((w) => {
      events.push(`transaction:${options?.durable ? 'durable' : 'normal'}`);
      const spy = new Proxy(w, {
        get(target, key: keyof StoreWriter) {
          if (key === 'finalizeSession') return (sid: string, reason: string) => (events.push(`finalize:${sid}:${reason}`), target.finalizeSession(sid, reason));
          if (key === 'retainSession') return (sid: string, reason: string) => (events.push(`retain:${sid}:${reason}`), target.retainSession(sid, reason));
          const value = target[key];
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      work(spy);
    }, options);
}

async function startTurn(h: InProcessHost, sid: string, text: string): Promise<void> {
  h.host.submit({ type: 'turn.start', sid, request_id: `r-${sid}`, text });
  await h.frame('turn.started', (f) => f['sid'] === sid);
}

async function runQuickTurn(h: InProcessHost, sid: string): Promise<void> {
  h.host.submit({ type: 'turn.start', sid, request_id: `q-${sid}`, text: 'quick' });
  await h.frame('turn.end', (f) => f['sid'] === sid);
}

describe('shutdown (the seed rules, in process)', () => {
  let h: InProcessHost | undefined;
  let release: () => void = () => {};
  afterEach(async () => {
    release();
    await h?.close();
    h = undefined;
  });

  /** The seed's scene: session "idle" ran a turn; session "live" is stuck in one. */
  async function stuckAndIdle(record: boolean): Promise<{ host: InProcessHost; events: string[] }> {
    const events: string[] = [];
    const seed = seedAgent(events);
    release = seed.release;
    const host = await startInProcessHost(seed.agent);
    h = host;
    if (record) recordSettlements(host, events);
    await runQuickTurn(host, 'idle');
    await startTurn(host, 'live', 'stuck');
    return { host, events };
  }

  it('drains a turn that ends after 0.3 s, then finalizes its session, in that order; no live turn is left', async () => {
    const events: string[] = [];
    const seed = seedAgent(events);
    h = await startInProcessHost(seed.agent);
    recordSettlements(h, events);
    await startTurn(h, 's1', 'ends after 300');
    const report = await h.host.shutdown('sigterm', 3);
    expect(events).to.deep.equal(['turn_end', 'transaction:durable', 'finalize:s1:compute_host_sigterm']);
    expect(report).to.include({ reason: 'sigterm' });
    expect(report.finalized).to.deep.equal(['s1']);
    expect(report.retained).to.deep.equal([]);
    expect((await h.sessions()).map((s) => [s.session_id, s.status, s.end_reason])).to.deep.equal([['s1', 'finalized', 'compute_host_sigterm']]);
    const stats = await h.host.stats();
    expect([stats.activeTurns, stats.queuedTurns]).to.deep.equal([0, 0]);
  });

  it('retains a stuck session at the drain deadline and finalizes the idle one in the same pass, within wait', async () => {
    const { host: rig, events } = await stuckAndIdle(true);
    const wait = 1.0;
    const started = performance.now();
    const report = await rig.host.shutdown('sigterm', wait);
    const elapsedSec = (performance.now() - started) / 1000;
    expect(events.filter((e) => e.startsWith('finalize'))).to.deep.equal(['finalize:idle:compute_host_sigterm']);
    // One durable transaction holds the whole pass: the finalized and the retained session alike.
    expect(events.filter((e) => e.startsWith('transaction'))).to.deep.equal(['transaction:durable']);
    expect(events.slice(events.indexOf('transaction:durable'))).to.have.members([
      'transaction:durable',
      'finalize:idle:compute_host_sigterm',
      'retain:live:drain_deadline',
    ]);
    expect(report.retained).to.deep.equal(['live']);
    expect(elapsedSec).to.be.lessThan(wait);
    const byId = Object.fromEntries((await rig.sessions()).map((s) => [s.session_id, s]));
    expect(byId['live']).to.include({ status: 'retained', retained_reason: 'drain_deadline', end_reason: null });
    expect(byId['idle']).to.include({ status: 'finalized', end_reason: 'compute_host_sigterm' });
  });

  it('uses the whole drain budget of a stdin_closed shutdown (wait 2.0) and still returns before wait', async () => {
    const { host: rig, events } = await stuckAndIdle(true);
    const wait = 2.0;
    const drainBudget = wait - Math.min(1.0, wait / 2);
    const started = performance.now();
    await rig.host.shutdown('stdin_closed', wait);
    const elapsedSec = (performance.now() - started) / 1000;
    expect(events.filter((e) => e.startsWith('finalize'))).to.deep.equal(['finalize:idle:compute_host_stdin_closed']);
    expect(elapsedSec, 'the drain must use its full window').to.be.at.least(drainBudget - 1e-3);
    expect(elapsedSec).to.be.lessThan(wait);
  });

  for (const wait of [0.34, 2, 10]) {
    it(`never asks for more waiting than the drain budget (wait = ${wait} s, injected clock)`, async () => {
      const { host: rig } = await stuckAndIdle(false);
      // The coordinator under test gets the recording clock; the long case runs 50× faster than real time.
      const clock = recordingClock(wait >= 10 ? 50 : 1);
      const report = await runCoordinator(rig, clock, wait);
      const plan = drainPlan(0, wait);
      expect(clock.waits.length, 'the drain should have waited for the stuck turn').to.be.greaterThan(0);
      const asked = clock.waits.reduce((a, b) => a + b, 0);
      expect(asked).to.be.at.most(plan.deadlineMs + 1e-6);
      expect(report.finalized).to.deep.equal(['idle']);
      expect(report.retained).to.deep.equal(['live']);
    });
  }

  it('spends the finalize latch once: a second finalize does nothing; a retain leaves it unspent', async () => {
    const seed = seedAgent([]);
    h = await startInProcessHost(seed.agent);
    await runQuickTurn(h, 'a');
    await runQuickTurn(h, 'b');
    const handles = (await Promise.all(h.host.shards.map((shard) => ask(shard, (replyTo: Ref<SessionHandle[]>): ShardMsg => ({ kind: 'list', replyTo }), 1000)))).flat();
    const session = (sid: string) => handles.find((x) => x.sid === sid)!.ref;
    const settle = (sid: string, kind: 'drain' | 'retain') =>
      ask(
        session(sid),
        (replyTo: Ref<Settled>): SessionMsg =>
          kind === 'drain' ? { kind, endReason: 'compute_host_test', replyTo } : { kind, reason: 'drain_deadline', replyTo },
        1000,
      );
    const first = await settle('a', 'drain');
    expect(first.outcome).to.equal('finalized');
    expect(first.work).to.be.a('function');
    const second = await settle('a', 'drain');
    expect(second).to.deep.equal({ kind: 'settled', answering: 'drain', sid: 'a', outcome: 'skipped', work: null });
    expect((await settle('b', 'retain')).outcome).to.equal('retained');
    expect((await settle('b', 'drain')).outcome, 'a retained session keeps its latch').to.equal('finalized');
    expect((await settle('b', 'drain')).outcome).to.equal('skipped');
    expect((await settle('b', 'retain')).outcome).to.equal('skipped');
  });

  it('waits not at all when no turn is live', async () => {
    const seed = seedAgent([]);
    h = await startInProcessHost(seed.agent);
    await runQuickTurn(h, 'a');
    await runQuickTurn(h, 'b');
    const started = performance.now();
    const report = await h.host.shutdown('sigterm', 10);
    expect(performance.now() - started).to.be.lessThan(500);
    expect(report.finalized.sort()).to.deep.equal(['a', 'b']);
  });
});

interface RecordingClock extends Clock {
  waits: number[];
}

/** The real monotonic clock, optionally sped up, recording every wait asked of it. */
function recordingClock(speedup: number): RecordingClock {
  const origin = monotonicClock.nowMs();
  const waits: number[] = [];
  return {
    waits,
    nowMs: () => origin + (monotonicClock.nowMs() - origin) * speedup,
    hostNs: monotonicClock.hostNs,
    after(ms, fn) {
      waits.push(ms);
      return monotonicClock.after(ms / speedup, fn);
    },
  };
}

/** Runs the shutdown coordinator itself against the host's live sessions, with the given clock. */
function runCoordinator(h: InProcessHost, clock: Clock, waitSec: number): Promise<ShutdownReport> {
  return new Promise((resolve) => {
    const hostStandIn = spawnActor<null, HostMsg>(
      h.host.system,
      'host-stand-in',
      (state, msg) => {
        if (msg.kind === 'shutdown-done') resolve(msg.report);
        return state;
      },
      { log: h.services.log, init: () => null },
    );
    spawnShutdownCoordinator(h.host.system, {
      reason: 'sigterm',
      waitSec,
      shards: h.host.shards,
      host: hostStandIn,
      services: { ...h.services, clock },
    });
  });
}
