// A control ack racing its waiter's timeout, in the supervisor actor: consumed exactly once,
// by the waiter or by the late handler, whether it comes just before, at or just after the
// timeout. The host is a stand-in (only its frames matter here) and the clock is manual, so
// "at the timeout" is exact.
import { OutputGate } from '../../actors/daemon/output-gate.js';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Clock } from '../../actors/clock.js';
import type { HostChildEvents, HostHandle } from '../../actors/daemon/host-child.js';
import { ask, spawnActor, startSystem, stopSystem, tell, type Ref, type SystemRef } from '../../actors/runtime.js';
import { spawnSupervisor } from '../../actors/daemon/supervisor.js';
import type { CallReply, GatewayMsg, HostStatus, SupervisorMsg } from '../../actors/daemon/supervisor-messages.js';
import { realProbe } from '../../persistence/proc.js';

const CONTROL_TIMEOUT_MS = 30_000;

class ManualClock implements Clock {
  now = 0;
  private timers: { at: number; fn: () => void }[] = [];
  nowMs = () => this.now;
  hostNs = () => BigInt(Math.round(this.now * 1e6));
  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.now + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((t) => t !== timer));
  }
  advance(ms: number): void {
    this.now += ms;
    const due = this.timers.filter((t) => t.at <= this.now).sort((a, b) => a.at - b.at);
    this.timers = this.timers.filter((t) => !due.includes(t));
    for (const t of due) t.fn();
  }
}

class StandInHost implements HostHandle {
  readonly argv = ['node', 'stand-in', 'host'];
  readonly pid = 999_999;
  readonly startTime = null;
  readonly stderrTail: string[] = [];
  alive = true;
  readonly sent: Record<string, unknown>[] = [];
  private onSent: (frame: Record<string, unknown>) => void = () => {};
  constructor(readonly events: HostChildEvents) {}
  send(frame: object): void {
    this.sent.push(frame as Record<string, unknown>);
    this.onSent(frame as Record<string, unknown>);
  }
  signalGroup(): void {}
  pauseOutput(): void {}
  resumeOutput(): void {}
  /** The next frame the supervisor sends. */
  nextSent(): Promise<Record<string, unknown>> {
    return new Promise((resolve) => (this.onSent = resolve));
  }
  say(frame: object): void {
    this.events.lines(this, [JSON.stringify(frame)]);
  }
}

interface Rig {
  system: SystemRef;
  clock: ManualClock;
  supervisor: Ref<SupervisorMsg>;
  gateway: Ref<GatewayMsg>;
  host: StandInHost;
  lateEvents: GatewayMsg[];
  dir: string;
}

async function rig(): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'turnhost-late-'));
  const system = startSystem();
  const clock = new ManualClock();
  const log = pino({ level: 'silent' });
  const lateEvents: GatewayMsg[] = [];
  // Records the late handlers' events; answers request-session, which the test uses as a barrier.
  const gateway = spawnActor<null, GatewayMsg>(system, 'gateway', (state, msg) => {
    if (msg.kind === 'event' && msg.type === 'status.update') lateEvents.push(msg);
    if (msg.kind === 'request-session') tell(msg.replyTo, null);
    return state;
  }, { log, init: () => null });
  let spawned: (host: StandInHost) => void = () => {};
  const hostReady = new Promise<StandInHost>((resolve) => (spawned = resolve));
  const supervisor = spawnSupervisor(system, {
    gateway,
    gate: new OutputGate(),
    config: {
      home: '/home/rig',
      buildSha: 'build-1',
      hostEntry: 'stand-in',
      hostArgs: () => [],
      agent: () => 'script',
      hostEnv: () => ({}),
      hostHandoff: () => Promise.resolve(''),
      registryPath: join(dir, 'state', 'compute-host.json'),
      probe: realProbe({ graceMs: 10, killWaitMs: 10 }),
      clock,
      log,
      onHostStderr: () => {},
      onHostLog: () => {},
      onStopped: () => {},
      onFirstHello: () => {},
      onFirstHostRefused: () => {},
      helloTimeoutMs: 10_000,
      controlTimeoutMs: CONTROL_TIMEOUT_MS,
      respondTimeoutMs: 15_000,
      spawnHost: (_entry, _args, _env, events) => {
        const host = new StandInHost(events);
        spawned(host);
        return host;
      },
    },
  });
  tell(supervisor, { kind: 'spawn' });
  const host = await hostReady;
  host.say({ type: 'hello', host_pid: host.pid, boot_id: 'b'.repeat(32), build_sha: 'build-1', cwd: '/', home: '/home/rig', protocol: 1, workers: 8, heartbeat_secs: 0, recovered: [] });
  await barrier(supervisor);
  return { system, clock, supervisor, gateway, host, lateEvents, dir };
}

/** A status query: answered after everything sent to the supervisor before it. */
function barrier(supervisor: Ref<SupervisorMsg>): Promise<HostStatus> {
  return ask(supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), 1000);
}

async function sendControl(r: Rig): Promise<{ reply: Promise<CallReply>; requestId: string }> {
  const sent = r.host.nextSent();
  const reply = ask(r.supervisor, (replyTo: Ref<CallReply>): SupervisorMsg => ({ kind: 'call', call: { op: 'control', sid: 's1', route: 'slash.model', params: { model: 'm' } }, replyTo }), 5000);
  const frame = await sent;
  expect(frame['type']).to.equal('control');
  return { reply, requestId: String(frame['request_id']) };
}

const ack = (requestId: string) => ({ type: 'control.ack', sid: 's1', request_id: requestId, route_name: 'slash.model', result: { output: 'ok' }, session_key: 's1', history_version: 2, message_count: 2, host_ns: 1 });

describe('late control acks (supervisor actor, manual clock)', () => {
  let r: Rig;
  beforeEach(async () => (r = await rig()));
  afterEach(() => {
    stopSystem(r.system);
    rmSync(r.dir, { recursive: true, force: true });
  });

  /** Waits for the supervisor and then the recording gateway to process everything sent so far. */
  async function settled(): Promise<void> {
    await barrier(r.supervisor);
    await ask(r.gateway, (replyTo: Ref<string | null>): GatewayMsg => ({ kind: 'request-session', requestId: 'barrier', replyTo }), 1000);
  }

  it('just before the timeout: the waiter gets the ack; the timeout finds nothing; no late handler runs', async () => {
    const { reply, requestId } = await sendControl(r);
    r.host.say(ack(requestId));
    await settled();
    r.clock.advance(CONTROL_TIMEOUT_MS);
    await settled();
    expect(await reply).to.deep.include({ ok: true });
    expect(r.lateEvents).to.deep.equal([]);
  });

  it('at the timeout, ack first: the waiter gets it, once', async () => {
    const { reply, requestId } = await sendControl(r);
    r.host.say(ack(requestId));
    r.clock.advance(CONTROL_TIMEOUT_MS);
    await settled();
    expect(await reply).to.deep.include({ ok: true });
    expect(r.lateEvents).to.deep.equal([]);
  });

  it('at the timeout, timeout first: the waiter times out and the late handler gets the ack, once', async () => {
    const { reply, requestId } = await sendControl(r);
    r.clock.advance(CONTROL_TIMEOUT_MS);
    r.host.say(ack(requestId));
    await settled();
    const outcome = await reply;
    expect(outcome.ok).to.equal(false);
    expect(r.lateEvents).to.have.length(1);
    expect(r.lateEvents[0]).to.deep.include({ sid: 's1', type: 'status.update' });
  });

  it('just after the timeout: the late handler gets the ack once, and a duplicate ack is nobody\'s', async () => {
    const { reply, requestId } = await sendControl(r);
    r.clock.advance(CONTROL_TIMEOUT_MS);
    await settled();
    expect((await reply).ok).to.equal(false);
    r.host.say(ack(requestId));
    r.host.say(ack(requestId));
    await settled();
    expect(r.lateEvents).to.have.length(1);
  });

  it('answers a control still waiting when the host dies with 5019 (crash)', async () => {
    const { reply } = await sendControl(r);
    r.host.alive = false;
    r.host.events.exit(r.host, null, 'SIGKILL');
    const outcome = await reply;
    expect(outcome.ok).to.equal(false);
    expect(!outcome.ok && outcome.error).to.deep.include({ code: 5019, data: { reason: 'crash' } });
    await settled();
    expect(r.lateEvents).to.deep.equal([]);
  });

  it('fails a late handler once with control.error when the host dies', async () => {
    const { reply } = await sendControl(r);
    r.clock.advance(CONTROL_TIMEOUT_MS);
    await settled();
    expect((await reply).ok).to.equal(false);
    r.host.alive = false;
    r.host.events.exit(r.host, null, 'SIGKILL');
    await settled();
    expect(r.lateEvents).to.have.length(1);
    expect((r.lateEvents[0] as { payload: { kind: string } }).payload.kind).to.equal('control.failed');
  });
});
