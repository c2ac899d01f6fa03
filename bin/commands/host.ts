// `turnhost host`: the compute host on stdin/stdout. Process-level wiring only: options, the
// database, hello, stdin, signals, the parent guard; the behaviour lives in actors/.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { removeDeletedFiles } from '../../actors/host/session-delete.js';
import type { HomeStore } from '../../agents/acp/guest-agent.js';
import { Readable } from 'node:stream';
import { startTracing, type Tracing } from '../tracing.js';
import type { WebhookEvent } from '../../protocol/webhook-events.js';
import { randomBytes } from 'node:crypto';
import { startHost, DEFAULT_SHUTDOWN_WAIT_SEC } from '../../actors/host/host.js';
import type { ShutdownReason } from '../../actors/host/messages.js';
import { monotonicClock } from '../../actors/clock.js';
import { startSystem, stopSystem, SECOND_MS } from '../../actors/runtime.js';
import type { HostServices } from '../../actors/host/services.js';
import { fullQueueEvents, queueDeltas } from '../../actors/host/queue-events.js';
import { AgentLoadError, checkedCatalogue } from '../../agents/loader.js';
import { readHandedCatalogue } from '../../agents/catalogue-handoff.js';
import type { CheckedCatalogue } from '../../agents/catalogue-config.js';
import type { ConfigSource } from '../../agents/config-file.js';
import { EXIT_CONFIG } from '../../agents/loader-error.js';
import { catalogueEnvironment } from '../../agents/catalogue-config.js';
import { AgentCatalogue } from '../../agents/catalogue.js';
import { removeDeadProxies } from '../../agents/sandbox/proxy-folders.js';
import { ChangingRedactor } from '../../agents/model/key-redaction.js';
import { DEFAULT_LEASE_SECS, type Store } from '../../persistence/store.js';
import { storeLocation } from '../../persistence/store-location.js';
import { openStore } from '../../persistence/open-store.js';
import { FrameWriter, fdSink } from '../../protocol/frame-writer.js';
import { FRAME_TOO_LARGE, parseFrame } from '../../protocol/frames.js';
import { readFd } from '../../protocol/fd-reader.js';
import { LineReader } from '../../protocol/line-reader.js';
import { buildSha } from '../build-info.js';
import { enterHome, ensureHome } from '../home.js';
import { homePaths } from '../../protocol/home-paths.js';
import { acquireHomeLock } from '../home-lock.js';
import { resolveHeartbeatSecs, resolveWorkers } from '../host-options.js';
import { createLogger, type Logger } from '../logger.js';

export interface HostCommandOptions {
  home: string;
  agent?: string;
  agentConfig?: string;
  workers?: number;
  /** `--max-running-per-person` (PROTOCOL.md §5.7). */
  maxRunningPerPerson?: number;
  heartbeatSecs?: number;
  /** The parent makes the `session.queue` events from `queue.delta` frames (the daemon does). */
  queueDeltas?: boolean;
  /** Log records go to this descriptor instead of stderr (the daemon reads them apart from stderr). */
  logFd?: number;
  /** The catalogue the daemon validated is read from this descriptor (catalogue-handoff.ts) instead of the file. */
  catalogueFd?: number;
  /** The history cache's bound (default 64 MiB). */
  historyCacheMib?: number;
  /** `--store`: `sqlite` or a postgres:// URL; $TURNHOST_STORE, else SQLite, when absent. */
  store?: string;
  /** As one node of several on a PostgreSQL store: its id, and how long its leases last. */
  nodeId?: string;
  leaseSecs?: number;
  /** Where other nodes reach this node (its daemon's HTTP edge). */
  advertise?: string;
  /** The webhook events written to the outbox with what they report (PROTOCOL.md §8.2); none when absent. */
  webhookEvents?: WebhookEvent[];
  /** `--otlp-endpoint` (PROTOCOL.md §5.8): else the OTEL_ variables say whether spans are sent, and where. */
  otlpEndpoint?: string;
}

/** How long a node's lease on a session lasts unless renewed (`--lease-secs`). */

const STDIN_CLOSED_WAIT_SEC = 2;
const PARENT_CHECK_MS = SECOND_MS;
const DEFAULT_REQUEST_TIMEOUT_MS = 600 * SECOND_MS;
/** At the end, the spans still batched are sent, waiting at most this long for the collector. */
const TRACE_FLUSH_MS = 3 * SECOND_MS;

export async function hostCommand(options: HostCommandOptions): Promise<number> {
  const workers = resolveWorkers(process.env, options.workers);
  const heartbeatSecs = resolveHeartbeatSecs(process.env, options.heartbeatSecs);
  const home = ensureHome(options.home);
  enterHome(home);
  const source = { home, flag: options.agentConfig, env: process.env };
  let agents: AgentCatalogue;
  let log: Logger;
  let opened: Store | null = null;
  try {
    const checked = options.catalogueFd === undefined ? await checkedCatalogue(options.agent, source) : await handed(options.catalogueFd, source);
    const secrets = new ChangingRedactor(catalogueEnvironment(checked.catalogue).secrets);
    log = createLogger('host', { ...(options.logFd === undefined ? {} : { fd: options.logFd }), redact: secrets.redact });
    removeDeadProxies(home);
    // A guest's home follows its session through the store (AGENT.md §6), once the store is open.
    const homes = (): HomeStore | null => (opened === null ? null : { snapshots: opened.homes, shared: opened.kind === 'postgres' });
    agents = new AgentCatalogue(checked, { log, homes, spec: options.agent, source, onSecrets: (next) => secrets.set(next) }, options.nodeId ?? null);
    // A file of one agent works as it always has: that agent is made now, and a broken one is refused at start.
    if (!agents.isCatalogue) await agents.agent(agents.defaultName);
  } catch (err) {
    if (!(err instanceof AgentLoadError)) throw err;
    process.stderr.write(`turnhost host: ${err.message}\n`);
    return EXIT_CONFIG;
  }
  const lock = await acquireHomeLock(home, 'host');
  if (lock === null) {
    process.stderr.write(`turnhost host: another compute host is running for ${home}\n`);
    await agents.close();
    return 1;
  }
  const tracing = await startTracing({ env: process.env, agentName: agents.defaultName, log, ...(options.otlpEndpoint === undefined ? {} : { endpoint: options.otlpEndpoint }), ...(options.nodeId === undefined ? {} : { nodeId: options.nodeId }) });
  let store: Store;
  let bootId: string;
  try {
    store = await openStore(storeLocation(options.store, homePaths(home).database), {
      ...(options.historyCacheMib === undefined ? {} : { historyCacheMib: options.historyCacheMib }),
      ...(options.nodeId === undefined ? {} : { node: { id: options.nodeId, leaseSecs: options.leaseSecs ?? DEFAULT_LEASE_SECS, ...(options.advertise ? { url: options.advertise } : {}), catalogue: () => agents.digest } }),
    });
    opened = store;
  } catch (err) {
    process.stderr.write(`turnhost host: cannot open the store: ${(err as Error).message}\n`);
    await agents.close();
    lock.release();
    return 1;
  }
  try {
    bootId = await startBoot(store, log, tracing);
  } catch (err) {
    process.stderr.write(`turnhost host: cannot recover the store ${store.health().store}: ${(err as Error).message}\n`);
    await store.close().catch(() => {});
    await agents.close();
    lock.release();
    return 1;
  }

  const clock = monotonicClock;
  const writer = new FrameWriter(fdSink(1), clock.hostNs);
  writer.write({
    type: 'hello',
    host_pid: process.pid,
    boot_id: bootId,
    build_sha: buildSha(),
    cwd: process.cwd(),
    home,
    protocol: 1,
    workers,
    heartbeat_secs: heartbeatSecs,
    recovered: await store.retainedSessions(),
    queued: await store.queuedSessions(),
    sandbox: agents.sandbox,
  });
  writer.flush();

  const queueEvents = options.queueDeltas ? queueDeltas(writer) : fullQueueEvents(writer);
  const services: HostServices = { store, writer, queueEvents, agents, clock, log, bootId, requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS, webhookEvents: new Set(options.webhookEvents ?? []), tracing: tracing?.host ?? null };
  const system = startSystem();
  const host = startHost(system, services, { workers, heartbeatSecs, ...(options.maxRunningPerPerson === undefined ? {} : { maxRunningPerPerson: options.maxRunningPerPerson }) });
  const shutdown = (reason: ShutdownReason, waitSec: number): void => void host.shutdown(reason, waitSec).catch(() => {});
  void removeFilesOfDeleted(home, services);

  keepRunningOnStrayErrors(log);
  keepFrameDescriptors();
  readFrames(writer, host.submit, () => shutdown('stdin_closed', STDIN_CLOSED_WAIT_SEC));
  process.on('SIGTERM', () => shutdown('sigterm', DEFAULT_SHUTDOWN_WAIT_SEC));
  process.on('SIGINT', () => shutdown('sigterm', DEFAULT_SHUTDOWN_WAIT_SEC));
  const stopGuard = heartbeatSecs > 0 ? guardParent(writer, () => shutdown('orphan', DEFAULT_SHUTDOWN_WAIT_SEC)) : () => {};

  await host.stopped;
  stopGuard();
  writer.flush();
  await store.close();
  await tracing?.shutdown(TRACE_FLUSH_MS);
  // After the flush: ending the agents' MCP servers and guests may take seconds, and nothing waits on it.
  await agents.close().catch((err: unknown) => log.warn({ err }, 'the agents did not close cleanly'));
  stopSystem(system);
  lock.release();
  return 0;
}

/**
 * The files of sessions deleted while a crash came between the commit and the files, or since this
 * home's host last started (deleted on another node, which removed only its own copies): removed in
 * the background, out of the turns' way (PROTOCOL.md §2.3).
 */
async function removeFilesOfDeleted(home: string, services: HostServices): Promise<void> {
  const mark = join(home, 'state', 'deleted-swept-at');
  const since = existsSync(mark) ? Number(readFileSync(mark, 'utf8')) || 0 : 0;
  const now = Date.now();
  try {
    for (const tombstone of await services.store.tombstones(since)) await removeDeletedFiles(tombstone, services);
    mkdirSync(dirname(mark), { recursive: true, mode: 0o700 });
    writeFileSync(mark, String(now), { mode: 0o600 });
  } catch (err) {
    services.log.warn({ err }, "deleted sessions' files could not be looked for: the next start tries again");
  }
}

/**
 * The catalogue the daemon validated, with the values of the variables its agents need: they join
 * this host's environment, which its agents read (and the guests it starts inherit what their
 * definitions pass them).
 */
async function handed(fd: number, source: ConfigSource): Promise<CheckedCatalogue> {
  const { checked, env } = await readHandedCatalogue(fd, source);
  Object.assign(process.env, env);
  return checked;
}

/** Durability rule 5 for what a previous host left, then this boot's row: its id. */
async function startBoot(store: Store, log: Logger, tracing: Tracing | null): Promise<string> {
  const bootId = randomBytes(16).toString('hex');
  const { lost, ...recovery } = await store.recoverCrashedBoots();
  if (recovery.boots + recovery.retainedSessions > 0) log.warn(recovery, 'recovered from a host that died');
  tracing?.host.endLost(lost, 'crash');
  await store.commitNow((w) => w.startBoot(bootId, process.pid));
  return bootId;
}

function readFrames(writer: FrameWriter, submit: ReturnType<typeof startHost>['submit'], onEnd: () => void): void {
  const reader = new LineReader({
    line(text) {
      const parsed = parseFrame(text);
      if (parsed.ok) submit(parsed.frame);
      else writer.write(parsed.reply);
    },
    oversized() {
      writer.write(FRAME_TOO_LARGE);
    },
  });
  readFd(0, {
    chunk: (bytes) => reader.push(bytes),
    end: () => {
      reader.end();
      onEnd();
    },
  });
}

/** The parent died when our parent pid changes (we were reparented); checked every second. */
function guardParent(writer: FrameWriter, onOrphan: () => void): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    const now = process.ppid;
    if (now === parent) return;
    clearInterval(timer);
    writer.write({ type: 'orphan', old_ppid: parent, ppid: now });
    writer.flush();
    onOrphan();
  }, PARENT_CHECK_MS);
  return () => clearInterval(timer);
}

/**
 * Descriptors 0 and 1 carry the host's frames, read by readFd and written by the frame writer. An
 * agent made after the host started reading (AGENT.md §8: at its first use) may load a library
 * that imports `node:process` as a module (the MCP SDK does): that reads every property of
 * `process`, and `process.stdin` would open fd 0 a second time (libuv refuses: EEXIST), and
 * `process.stdout` would make fd 1 non-blocking. They stand in as an input that never has anything
 * and as stderr, so agent code that prints writes to the log, never into the frames.
 */
function keepFrameDescriptors(): void {
  const nothing = new Readable({ read: () => {} });
  Object.defineProperty(process, 'stdin', { configurable: true, enumerable: true, get: () => nothing });
  Object.defineProperty(process, 'stdout', { configurable: true, enumerable: true, get: () => process.stderr });
}

/** Agent code is user code: a stray throw or rejection is logged, and the host keeps serving. */
function keepRunningOnStrayErrors(log: Logger): void {
  process.on('uncaughtException', (err) => log.error({ err }, 'uncaught exception'));
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));
}
