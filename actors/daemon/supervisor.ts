// The supervisor actor: owns the compute host child (spawn, hello, registry, heartbeat
// watchdog, restarts, stop) and everything pending on it (turns, control replies, late
// handlers). One actor owns all of it, so a reply racing its waiter's timeout is consumed
// exactly once: the mailbox orders the two.
import { EXIT_CONFIG } from '../../agents/loader-error.js';
import type { Logger } from 'pino';
import { removeRegistry, reconcile, writeRegistry } from '../../persistence/registry.js';
import type { HelloFrame, QueueDeltaFrame } from '../../protocol/outbound.js';
import type { TurnUsage } from '../../protocol/usage.js';
import type { EventPayloads } from '../../protocol/rpc.js';
import { RpcError } from '../../protocol/client-rpc.js';
import { eventLine } from '../../protocol/event-line.js';
import { HOST_CATALOGUE_FD, HOST_LOG_FD, HostChild, type HostChildEvents, type HostHandle } from './host-child.js';
import { PendingControls } from './pending-controls.js';
import { afterCrash } from './restart-policy.js';
import { spawnActor, tell, waitingMessages, SECOND_MS, type ActorContext, type Ref, type SystemRef } from '../runtime.js';
import { answerCall, expireParkedCall, failEverything, onTurnFrame, releaseParkedCalls, resumeQueue, settleReply } from './supervisor-calls.js';
import type { ReplyEntry, SupervisorConfig, SupervisorState, SupervisorWiring } from './supervisor-state.js';
import type { GatewayMsg, HostFrameIn, HostStatus, StopReport, SupervisorMsg } from './supervisor-messages.js';

const WATCHDOG_MISSES = 3;
const KILL_WAIT_MS = 2 * SECOND_MS;


export function spawnSupervisor(system: SystemRef, wiring: SupervisorWiring): Ref<SupervisorMsg> {
  const { config } = wiring;
  return spawnActor<SupervisorState, SupervisorMsg>(system, 'supervisor', (state, msg, ctx) => handle(state, msg, ctx, wiring), {
    log: config.log.child({ actor: 'supervisor' }),
    init: () => ({
      phase: 'starting',
      child: null,
      hello: null,
      restarts: [],
      restartCount: 0,
      lastError: null,
      killedBecause: null,
      lastFrameMs: config.clock.nowMs(),
      lastHeartbeatMs: null,
      heartbeatMs: 0,
      lastBeat: null,
      submits: new Map(),
      running: new Map(),
      attached: new Set(),
      pausedQueues: new Set(),
      replies: new PendingControls<ReplyEntry>(() => config.clock.nowMs()),
      nextRequest: 0,
      cancelTimers: [],
      cancelWatchdog: () => {},
      stop: null,
      parkedCalls: new Map(),
      nextParked: 0,
      startedAt: new Date().toISOString(),
    }),
  });
}

async function handle(s: SupervisorState, msg: SupervisorMsg, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): Promise<SupervisorState> {
  const { config } = wiring;
  switch (msg.kind) {
    case 'spawn':
      await spawnHost(s, ctx, wiring);
      return s;
    case 'host-frames':
      if (msg.child !== s.child) return s; // a replaced host's last words
      s.lastFrameMs = config.clock.nowMs();
      for (const frame of msg.frames) onFrame(s, frame, ctx, wiring);
      return s;
    case 'host-exit':
      if (msg.child === s.child) onExit(s, msg.code, msg.signal, ctx, wiring);
      return s;
    case 'hello-timeout':
      if (msg.child === s.child && s.hello === null) {
        s.killedBecause = `compute host did not send hello within ${config.helloTimeoutMs} ms; stderr: ${msg.child.stderrTail.slice(-5).join(' | ')}`;
        config.log.error({ pid: msg.child.pid }, s.killedBecause);
        msg.child.signalGroup('SIGKILL');
      }
      return s;
    case 'watchdog':
      checkHeartbeat(s, ctx, wiring);
      return s;
    case 'reply-timeout':
      expireReply(s, msg.requestId, wiring);
      return s;
    case 'parked-timeout':
      expireParkedCall(s, msg.id);
      return s;
    case 'kill-deadline':
      if (msg.child === s.child && msg.child.alive) {
        config.log.warn({ pid: msg.child.pid }, 'host still running after its stop window: SIGKILL to its group');
        msg.child.signalGroup('SIGKILL');
      }
      return s;
    case 'call':
      answerCall(s, msg.call, msg.replyTo, ctx, wiring);
      return s;
    case 'attached':
      s.attached.add(msg.sid);
      if (s.pausedQueues.delete(msg.sid)) resumeQueue(s, msg.sid);
      return s;
    case 'take-over':
      s.attached.add(msg.sid);
      s.pausedQueues.delete(msg.sid);
      if (s.phase === 'running') resumeQueue(s, msg.sid);
      return s;
    case 'status':
      tell(msg.replyTo, status(s, config));
      return s;
    case 'restart':
      if (s.phase === 'failed') {
        config.log.info('host.restart: crash loop cleared, spawning');
        s.restarts = [];
        s.phase = 'restarting';
        tell(ctx.self, { kind: 'spawn' });
      }
      tell(msg.replyTo, { state: stateName(s) });
      return s;
    case 'stop':
      beginStop(s, msg.waitSec, msg.replyTo, ctx, wiring);
      return s;
  }
}

function stateName(s: SupervisorState): HostStatus['host']['state'] {
  switch (s.phase) {
    case 'starting':
    case 'running':
    case 'restarting':
    case 'failed':
      return s.phase;
    case 'stopping':
    case 'stopped':
      return s.hello ? 'running' : 'starting';
  }
}

function status(s: SupervisorState, config: SupervisorConfig): HostStatus {
  const now = config.clock.nowMs();
  return {
    supervisor: { pid: process.pid, home: config.home, started_at: s.startedAt, agent: config.agent() },
    sandbox: s.hello === null ? null : (s.hello.sandbox ?? { mode: 'unused', mechanism: null }),
    host: {
      pid: s.child?.alive ? s.child.pid : null,
      boot_id: s.hello?.boot_id ?? null,
      state: stateName(s),
      restarts: s.restartCount,
      last_hb_ms: s.lastHeartbeatMs === null ? null : Math.round(now - s.lastHeartbeatMs),
      // The turns running now (turn.started seen, no end yet), not the last heartbeat's figure.
      active_turns: s.running.size,
      last_error: s.lastError,
      heartbeat_secs: s.hello?.heartbeat_secs ?? null,
      rss_mb: s.lastBeat?.rssMb ?? null,
      loop_lag_ms: s.lastBeat?.loopLagMs ?? null,
      store_problem: s.lastBeat?.storeProblem ?? null,
    },
    running_sids: [...s.running.keys()],
    running_turns: Object.fromEntries([...s.running].map(([sid, turn]) => [sid, turn.turnId])),
  };
}

async function spawnHost(s: SupervisorState, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): Promise<void> {
  const { config } = wiring;
  if (s.phase === 'stopping' || s.phase === 'stopped' || s.phase === 'failed' || s.child?.alive) return;
  const outcome = await reconcile(config.registryPath, config.probe);
  config.log.info({ reconcile: outcome.result, pid: outcome.pid, detail: outcome.detail }, `reconcile: ${outcome.result}`);
  const events: HostChildEvents = {
    lines: (child, texts) => routeHostLines(child, texts, ctx.self, wiring, config.log),
    stderr: (_child, text) => config.onHostStderr(text),
    log: (_child, text) => config.onHostLog(text),
    // The supervisor's messages waiting now may each send a frame (a turn start per client call).
    moreToSend: () => waitingMessages(ctx.self) > 0,
    exit: (child, code, signal) => tell(ctx.self, { kind: 'host-exit', child, code, signal }),
  };
  const spawn = config.spawnHost ?? HostChild.spawn;
  const args = ['host', '--home', config.home, '--queue-deltas', '--log-fd', String(HOST_LOG_FD), '--catalogue-fd', String(HOST_CATALOGUE_FD), ...config.hostArgs()];
  const child = spawn(config.hostEntry, args, config.hostEnv(), events, config.hostHandoff());
  wiring.gate.attach(() => child.pauseOutput(), () => child.resumeOutput());
  s.child = child;
  s.hello = null;
  s.lastFrameMs = config.clock.nowMs();
  config.log.info({ pid: child.pid }, 'host spawned');
  s.cancelTimers.push(config.clock.after(config.helloTimeoutMs, () => tell(ctx.self, { kind: 'hello-timeout', child })));
}

/**
 * Every host line is parsed once here (an event line only cut, see event-line.ts). Client-visible messages and turn lifecycle frames go to the
 * gateway straight from here, in the order the host wrote them; the supervisor sees the rest
 * (and the turn frames too, for its own bookkeeping). Each actor gets one message per read: nact
 * handles one message per event-loop turn, so a message per line would spread one read over
 * dozens of loop turns and one socket write each.
 */
function routeHostLines(child: HostHandle, texts: string[], supervisor: Ref<SupervisorMsg>, wiring: SupervisorWiring, log: Logger): void {
  const forClients: GatewayMsg[] = [];
  const forSupervisor: HostFrameIn[] = [];
  for (const text of texts) {
    const event = eventLine(text);
    if (event !== null) {
      forClients.push({ kind: 'session-message', sid: event.sid, json: '', eventParams: event.paramsJson });
      continue;
    }
    const frame = parseHostLine(text, log);
    if (frame !== null) routeHostFrame(frame, forClients, forSupervisor);
  }
  if (forClients.length > 0) {
    wiring.gate.handedOver();
    tell(wiring.gateway, { kind: 'batch', messages: forClients });
  }
  if (forSupervisor.length > 0) tell(supervisor, { kind: 'host-frames', child, frames: forSupervisor });
}

function parseHostLine(text: string, log: Logger): HostFrameIn | null {
  try {
    return JSON.parse(text) as HostFrameIn;
  } catch {
    log.warn({ line: text.slice(0, 200) }, 'host wrote a line that is not JSON');
    return null;
  }
}

function routeHostFrame(frame: HostFrameIn, forClients: GatewayMsg[], forSupervisor: HostFrameIn[]): void {
  if (frame.type === 'rpc') {
    const message = frame['message'] as { id?: unknown; method?: string; params?: { type?: string; payload?: { id?: string } } };
    const sid = String(frame['sid']);
    if (message.method === 'compute_host.activity') {
      forSupervisor.push(frame);
      return;
    }
    const request = typeof message.id === 'string' && typeof message.method === 'string' ? { id: message.id, method: message.method } : undefined;
    const cancelled = message.params?.type === 'request.cancel' ? message.params.payload?.id : undefined;
    const isEvent = message.method === 'event' && request === undefined && typeof message.params === 'object' && message.params !== null;
    forClients.push({
      kind: 'session-message',
      sid,
      json: isEvent ? '' : JSON.stringify(message),
      ...(isEvent ? { eventParams: JSON.stringify(message.params) } : {}),
      ...(request ? { request } : {}),
      ...(cancelled ? { cancelled } : {}),
    });
    return;
  }
  if (frame.type === 'queue.delta') {
    forClients.push({ kind: 'queue-delta', delta: frame as unknown as QueueDeltaFrame });
    return;
  }
  if (frame.type === 'hello') forClients.push({ kind: 'host-hello' });
  if (frame.type === 'turn.started' || frame.type === 'turn.end' || frame.type === 'turn.error') turnEvents(frame, forClients);
  forSupervisor.push(frame);
}

/**
 * A turn's frames become client events. A turn.error without a turn id refused a submit (busy,
 * shutting down, invalid): no turn existed, and only its submitter hears of it, as the answer.
 */
function turnEvents(frame: HostFrameIn, forClients: GatewayMsg[]): void {
  const sid = frame['sid'];
  if (typeof sid !== 'string') return;
  if (frame.type === 'turn.error' && typeof frame['turn_id'] !== 'string') return;
  const turn_id = String(frame['turn_id'] ?? frame['request_id']);
  const queued = typeof frame['queue_id'] === 'string' ? { queue_id: frame['queue_id'] } : {};
  if (frame.type === 'turn.started') {
    const scheduled = typeof frame['schedule_id'] === 'string' ? { schedule_id: frame['schedule_id'] } : {};
    forClients.push({ kind: 'event', sid, type: 'turn.started', payload: { turn_id, ...queued, ...scheduled } });
    return;
  }
  if (frame.type === 'turn.error') {
    forClients.push({ kind: 'event', sid, type: 'turn.error', payload: { turn_id, ...queued, message: String(frame['message']), reason: String(frame['reason'] ?? 'exception') } });
  } else {
    const payload: EventPayloads['turn.end'] = { turn_id, ...queued, interrupted: frame['interrupted'] === true };
    if (typeof frame['message_count'] === 'number') payload.message_count = frame['message_count'];
    if (typeof frame['history_version'] === 'number') payload.history_version = frame['history_version'];
    if (typeof frame['usage'] === 'object' && frame['usage'] !== null) payload.usage = frame['usage'] as TurnUsage;
    if (frame['finish_reason'] === 'length') payload.finish_reason = 'length';
    forClients.push({ kind: 'event', sid, type: 'turn.end', payload });
  }
  forClients.push({ kind: 'turn-ended', sid });
}

function onFrame(s: SupervisorState, frame: HostFrameIn, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const { config } = wiring;
  switch (frame.type) {
    case 'hello':
      acceptHello(s, frame as unknown as HelloFrame, ctx, wiring);
      return;
    case 'hb':
      s.lastHeartbeatMs = config.clock.nowMs();
      s.lastBeat = {
        rssMb: Number(frame['rss_mb'] ?? 0),
        loopLagMs: Number(frame['loop_lag_ms'] ?? 0),
        storeProblem: typeof frame['store_problem'] === 'string' ? frame['store_problem'] : null,
      };
      return;
    case 'turn.accepted':
    case 'turn.queued':
    case 'turn.steered':
    case 'turn.duplicate':
    case 'turn.started':
    case 'turn.end':
    case 'turn.error':
      onTurnFrame(s, frame, wiring);
      return;
    case 'shutdown.ack':
      if (s.stop !== null) {
        s.stop.report = {
          finalized: Array.isArray(frame['finalized']) ? frame['finalized'].length : 0,
          retained: Array.isArray(frame['retained']) ? frame['retained'].length : 0,
        };
      }
      return;
    case 'orphan':
    case 'rpc':
      return;
    default:
      if (typeof frame['request_id'] === 'string') settleReply(s, frame, wiring);
  }
}

function acceptHello(s: SupervisorState, hello: HelloFrame, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const { config } = wiring;
  const child = s.child!;
  const mismatch =
    hello.home !== config.home
      ? `hello from another home: ${hello.home} (expected ${config.home})`
      : hello.build_sha !== config.buildSha
        ? `hello from another build: ${hello.build_sha} (expected ${config.buildSha})`
        : null;
  if (mismatch !== null) {
    s.killedBecause = `rejected the compute host: ${mismatch}`;
    config.log.error({ pid: child.pid }, s.killedBecause);
    child.signalGroup('SIGTERM');
    s.cancelTimers.push(config.clock.after(KILL_WAIT_MS, () => tell(ctx.self, { kind: 'kill-deadline', child })));
    return;
  }
  s.hello = hello;
  const first = s.phase === 'starting';
  if (s.phase !== 'stopping') s.phase = 'running';
  s.heartbeatMs = hello.heartbeat_secs * SECOND_MS;
  s.lastFrameMs = config.clock.nowMs();
  writeRegistry(config.registryPath, {
    host_pid: hello.host_pid,
    boot_id: hello.boot_id,
    build_sha: hello.build_sha,
    argv: child.argv,
    started_at: new Date().toISOString(),
    host_start_time: child.startTime ?? -1,
    supervisor_pid: process.pid,
  });
  config.log.info({ pid: hello.host_pid, bootId: hello.boot_id, recovered: hello.recovered.length }, 'host ready');
  if (s.heartbeatMs > 0) scheduleWatchdog(s, ctx, config);
  tell(wiring.gateway, { kind: 'host-ready', recovered: hello.recovered });
  if (s.phase === 'stopping') child.send({ type: 'shutdown', request_id: 'daemon-stop', wait: 0 });
  holdOrResumeQueues(s, hello.queued ?? []);
  releaseParkedCalls(s, ctx, wiring);
  if (first) config.onFirstHello();
}

/**
 * A new host holds every stored queue paused. Those of sessions a client attached to while this
 * daemon runs go on now (a crash must not stop them); the others wait for a client to attach, so
 * nothing runs with no one to see it (PROTOCOL.md §2.1).
 */
function holdOrResumeQueues(s: SupervisorState, queued: readonly string[]): void {
  s.pausedQueues.clear();
  for (const sid of queued) {
    if (s.attached.has(sid)) resumeQueue(s, sid);
    else s.pausedQueues.add(sid);
  }
}

function cancelTimers(s: SupervisorState): void {
  for (const cancel of s.cancelTimers.splice(0)) cancel();
  s.cancelWatchdog();
}

function scheduleWatchdog(s: SupervisorState, ctx: ActorContext<SupervisorMsg>, config: SupervisorConfig): void {
  const periodMs = Math.min(SECOND_MS, s.heartbeatMs);
  s.cancelWatchdog = config.clock.after(periodMs, () => tell(ctx.self, { kind: 'watchdog' }));
}

/** No frame for 3 × heartbeat: the host is wedged (a blocked loop, SIGSTOP); kill its group, the crash path respawns it. */
function checkHeartbeat(s: SupervisorState, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const { config } = wiring;
  if (s.phase !== 'running' || s.child === null || !s.child.alive) return;
  const silentMs = config.clock.nowMs() - s.lastFrameMs;
  if (silentMs > WATCHDOG_MISSES * s.heartbeatMs) {
    s.killedBecause = `missed heartbeats: no frame for ${Math.round(silentMs)} ms`;
    config.log.error({ pid: s.child.pid, silentMs: Math.round(silentMs) }, 'missed heartbeats: SIGKILL to the host group');
    s.child.signalGroup('SIGKILL');
    return;
  }
  scheduleWatchdog(s, ctx, config);
}

function expireReply(s: SupervisorState, requestId: string, wiring: SupervisorWiring): void {
  const entry = s.replies.expire(requestId);
  if (entry === null) return; // the reply won the race
  tell(entry.replyTo, { ok: false, error: new RpcError(5000, `the host did not answer ${entry.what} within ${entry.timeoutMs} ms`).toJson() });
  wiring.config.log.warn({ requestId, what: entry.what }, 'host reply timed out; a late reply goes to its late handler');
}

function onExit(s: SupervisorState, code: number | null, signal: NodeJS.Signals | null, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const { config } = wiring;
  const child = s.child!;
  cancelTimers(s);
  removeRegistry(config.registryPath);
  // What a dead host leaves in its group (a guest agent, an MCP server) goes with it, at once:
  // a host killed with -9 could not end them itself (AGENT.md §6).
  child.signalGroup('SIGKILL');
  s.child = null;
  s.hello = null;
  if (s.phase === 'stopping') {
    finishStop(s, ctx, wiring);
    return;
  }
  const lastWords = child.stderrTail.at(-1);
  const message = s.killedBecause ?? `compute host exited (code ${code}, signal ${signal})${lastWords ? `: ${lastWords.slice(0, 300)}` : ''}`;
  s.killedBecause = null;
  s.lastError = message;
  config.log.error({ code, signal, cause: message }, 'compute host exited');
  if (code === EXIT_CONFIG) {
    // The agent or its config cannot be loaded: every respawn would fail the same way.
    const first = s.phase === 'starting';
    s.phase = 'failed';
    failEverything(s, message, 'crash', wiring);
    config.log.error(first ? 'the first host cannot load its agent; the daemon stops' : 'the host cannot load its agent; not respawning (fix it, then host.restart)');
    releaseParkedCalls(s, ctx, wiring);
    if (first) config.onFirstHostRefused(lastWords ?? message);
    return;
  }
  const decision = afterCrash(s.restarts, config.clock.nowMs());
  s.restarts = decision.restarts;
  failEverything(s, message, 'crash', wiring, decision.respawn);
  if (!decision.respawn) {
    s.phase = 'failed';
    s.lastError = `crash loop: more than ${s.restarts.length} restarts in 300 s; not respawning (host.restart clears it). Last: ${message}`;
    config.log.error(s.lastError);
    releaseParkedCalls(s, ctx, wiring);
    return;
  }
  s.phase = 'restarting';
  s.restartCount++;
  config.log.warn({ delayMs: decision.delayMs, restarts: s.restarts.length }, 'respawning the host');
  s.cancelTimers.push(config.clock.after(decision.delayMs, () => tell(ctx.self, { kind: 'spawn' })));
}

/** Graceful stop: the host's coordinated shutdown, SIGKILL of its group after wait + 1 s. */
function beginStop(s: SupervisorState, waitSec: number, replyTo: Ref<StopReport> | undefined, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const { config } = wiring;
  if (s.stop !== null) {
    if (replyTo) s.stop.waiters.push(replyTo);
    if (s.child?.alive) s.child.signalGroup('SIGKILL'); // asked twice: stop now
    return;
  }
  s.stop = { waiters: replyTo ? [replyTo] : [], report: { finalized: 0, retained: 0 } };
  const running = s.child !== null && s.child.alive;
  s.phase = 'stopping';
  releaseParkedCalls(s, ctx, wiring);
  cancelTimers(s);
  if (!running) {
    finishStop(s, ctx, wiring);
    return;
  }
  const child = s.child!;
  config.log.info({ waitSec }, 'stopping: coordinated shutdown of the host');
  if (s.hello) child.send({ type: 'shutdown', request_id: 'daemon-stop', wait: waitSec });
  else child.signalGroup('SIGTERM');
  s.cancelTimers.push(config.clock.after((waitSec + 1) * SECOND_MS, () => tell(ctx.self, { kind: 'kill-deadline', child })));
}

function finishStop(s: SupervisorState, ctx: ActorContext<SupervisorMsg>, wiring: SupervisorWiring): void {
  const { config } = wiring;
  s.phase = 'stopped';
  releaseParkedCalls(s, ctx, wiring);
  failEverything(s, 'the daemon stopped', 'shutting_down', wiring);
  removeRegistry(config.registryPath);
  const report = s.stop?.report ?? { finalized: 0, retained: 0 };
  for (const waiter of s.stop?.waiters ?? []) tell(waiter, report);
  config.log.info(report, 'stopped');
  config.onStopped(report);
}
