// `turnhost daemon`: the supervisor in the foreground. Process-level wiring: the home, the lock,
// the log, the sockets and signals; the behaviour lives in actors/daemon/.
import { chmodSync, fstatSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import pino from 'pino';
import { acceptClient, unixTransport, type ClientLines } from '../../actors/daemon/client-connection.js';
import { unreadLimits } from '../../actors/daemon/unread-bound.js';
import { invokeMethod } from '../../actors/daemon/client-methods.js';
import { clientContext, type AuditRecord, type SharedContext } from '../../actors/daemon/client-context.js';
import { fireOutcomeOf, Scheduler, type FireOutcome } from '../../actors/daemon/scheduler.js';
import { Retention, retentionPolicy } from '../../actors/daemon/retention.js';
import { InnerClient } from '../../actors/daemon/inner-client.js';
import { shownWebhookUrl, WebhookDelivery } from '../../actors/daemon/webhook-delivery.js';
import type { Identity } from '../../actors/daemon/identity.js';
import { OWNER } from '../../persistence/people.js';
import type { ScheduleRow } from '../../persistence/schedules.js';
import type { UrlBacklog } from '../../persistence/outbox.js';
import { watchedWebhookSecret } from '../../persistence/webhook-secret.js';
import { HOME_OWNER, RETENTION } from '../../actors/daemon/identity.js';
import { SessionAccess } from '../../actors/daemon/session-access.js';
import type { Cluster } from '../../actors/daemon/peer-links.js';
import { monotonicClock } from '../../actors/clock.js';
import { spawnGateway } from '../../actors/daemon/gateway.js';
import { OutputGate } from '../../actors/daemon/output-gate.js';
import { hostEnvironment, variableValues } from '../../actors/daemon/host-child.js';
import { ask, spawnActor, startSystem, stopSystem, tell, SECOND_MS, type Ref } from '../../actors/runtime.js';
import { spawnSupervisor } from '../../actors/daemon/supervisor.js';
import { TakeoverWatch } from '../../actors/daemon/takeover-watch.js';
import { ClusterSecret } from '../../actors/daemon/cluster-secret.js';
import type { GatewayMsg, HostStatus, StopReport, SupervisorMsg } from '../../actors/daemon/supervisor-messages.js';
import { AgentLoadError } from '../../agents/loader.js';
import { EXIT_CONFIG } from '../../agents/loader-error.js';
import { catalogueHandoff } from '../../agents/catalogue-handoff.js';
import { catalogueEnvironment, needsSandbox, readCatalogue } from '../../agents/catalogue-config.js';
import { AgentChoices } from '../../actors/daemon/agent-choice.js';
import { reloadAgents } from '../../actors/daemon/agents-reload.js';
import { hiddenPlaces, sandboxOnly, type SandboxConfig } from '../../agents/sandbox/sandbox-config.js';
import { ChangingRedactor } from '../../agents/model/key-redaction.js';
import { DEFAULT_CONTENT_BOUNDS, type ContentBounds } from '../../protocol/content.js';
import { ErrorCodes, errorLine, RpcError } from '../../protocol/client-rpc.js';
import { isRecord } from '../../protocol/fields.js';
import { AuditLog } from '../../persistence/audit-log.js';
import { LogFile } from '../../persistence/log.js';
import type { Reader } from '../../persistence/reader.js';
import { DEFAULT_LEASE_SECS, nodeLockWaitMs } from '../../persistence/store.js';
import { realProbe } from '../../persistence/proc.js';
import { describeLocation, STORE_ENV, storeLocation, type StoreLocation } from '../../persistence/store-location.js';
import { openReader, readerOnDemand, sideOnDemand } from '../../persistence/open-store.js';
import { buildSha, cliEntry } from '../build-info.js';
import { onceASecond } from '../log-repeats.js';
import { stopPoint } from '../../persistence/stop-points.js';
import { acquireHomeLock } from '../home-lock.js';
import { enterHome, ensureHome } from '../home.js';
import { homePaths } from '../../protocol/home-paths.js';
import { hostArgs, type HostPassOptions } from '../host-options.js';
import { startRepl } from '../repl-server.js';
import type { Edge } from '../../edge/edge-server.js';
import type { JwtOptions } from '../../edge/jwt-verifier.js';
import { Places } from '../../edge/places.js';
import { MAX_WAITING_FOR_AUTH } from '../../edge/pre-auth.js';
import type { ListenAddress } from '../../edge/listen-address.js';
import type { MetricSources } from '../../edge/metrics.js';
import { NO_COUNTERS, type DaemonCounters } from '../../actors/daemon/daemon-counters.js';

export interface DaemonOptions extends HostPassOptions {
  home: string;
  /** `--store`: `sqlite` or a postgres:// URL; $TURNHOST_STORE, else SQLite, when absent. */
  store?: string;
  /** Open client connections past which a new one is refused (default 1024). */
  maxClients?: number;
  /** Unread output in MiB past which a client that is not reading is cut off (default 8). */
  maxUnreadMib?: number;
  /** Also log to stderr (the foreground daemon), unless stderr is the log file itself (`turnhost start`). */
  echoLog?: boolean;
  /** The HTTP edge (PROTOCOL.md §5); none when absent. */
  http?: HttpOptions;
  /** `--webhook`: where each event of `webhookEvents` is POSTed, signed (PROTOCOL.md §8.2). */
  webhooks?: string[];
  /** Retention (PROTOCOL.md §2.3): off unless one of the two is given. */
  retentionDays?: number;
  archiveAfterDays?: number;
  retentionSweepSecs?: number;
  /** An upload no session names is forgotten after this many hours (PROTOCOL.md §2.4). */
  unnamedUploadHours?: number;
  /** What a prompt may carry beyond text (PROTOCOL.md §2.4); the defaults when absent. */
  content?: ContentBounds;
}

export interface HttpOptions {
  listen: ListenAddress;
  allowHosts: string[];
  corsOrigins: string[];
  metricsPublic: boolean;
  publicUrl?: string;
  /** How long a page login lasts (`--login-days`, default 7). */
  loginDays?: number;
  /** An identity provider's JWTs (`--jwt-jwks` and the rest, PROTOCOL.md §5.6). */
  jwt?: JwtOptions;
}

const DEFAULT_STOP_WAIT_SEC = 10;
export const DEFAULT_MAX_CLIENTS = 1024;
/** Connections the kernel queues before the daemon accepts them: a burst of thousands is queued, not refused. */
const LISTEN_BACKLOG = 4096;
const TERMINATE_GRACE_MS = 10 * SECOND_MS;
const TERMINATE_KILL_WAIT_MS = 2 * SECOND_MS;

/** Where other nodes reach this node's edge: `--advertise`, else the address the edge listens on. */
function advertisedUrl(options: DaemonOptions, edge: Edge | null): string | undefined {
  if (options.nodeId === undefined) return undefined;
  return options.advertise ?? edge?.url;
}

function quotedLine(name: string, line: string): string {
  return JSON.stringify({ level: 40, time: Date.now(), name, line });
}

/** A line that is one JSON object: a log record as pino writes it. */
function isRecordLine(line: string): boolean {
  try {
    return isRecord(JSON.parse(line));
  } catch {
    return false;
  }
}

export async function daemonCommand(options: DaemonOptions): Promise<number> {
  const home = ensureHome(options.home);
  enterHome(home);
  const paths = homePaths(home);
  const source = { home, flag: options.agentConfig, env: process.env };
  let location: StoreLocation;
  try {
    location = storeLocation(options.store, paths.database);
  } catch (err) {
    process.stderr.write(`turnhost daemon: ${(err as Error).message}\n`);
    return 2;
  }
  // An unreachable store (or a wrong password) is one line now, not a host that fails its starts.
  try {
    await (await openReader(location))?.close();
  } catch (err) {
    process.stderr.write(`turnhost daemon: cannot reach the store ${describeLocation(location)}: ${(err as Error).message}\n`);
    return 1;
  }
  const lock = await acquireHomeLock(home, 'daemon');
  if (lock === null) {
    process.stderr.write(`turnhost daemon: a daemon is already running for ${home}\n`);
    return 1;
  }
  const edgeModules = options.http === undefined ? null : importEdge();
  const logFile = new LogFile(paths.log);
  const streams: pino.StreamEntry[] = [{ stream: logFile }];
  if (options.echoLog && !sameFile(2, paths.log)) streams.push({ stream: pino.destination({ dest: 2, sync: true }) });
  const log = pino({ name: 'supervisor', level: process.env['TURNHOST_LOG_LEVEL'] ?? 'info', base: { pid: process.pid }, hooks: { logMethod: onceASecond() } }, pino.multistream(streams));
  // We hold the lock, so a socket file left here is stale.
  rmSync(paths.socket, { force: true });

  let exitCode = 0;
  let sandboxTried: Promise<void> = Promise.resolve();
  // Its first host could not load its agent, or the sandbox its agents need cannot be made here
  // (AGENT.md §7): a daemon that can serve no agent ends as a config error does, exit 78. Once
  // the daemon refused its own config, its host's end says nothing more.
  const refuseStart = (why: string): void => {
    if (exitCode !== 0) return;
    process.stderr.write(`turnhost daemon: ${why}\n`);
    exitCode = EXIT_CONFIG;
    stop();
  };
  // Set once the agent config validated (below, while the first host starts).
  let choices: AgentChoices;
  let sandbox: SandboxConfig;
  const hostNames = new Set<string>();
  const secrets = new ChangingRedactor([]);
  let validated: (valid: boolean) => void = () => {};
  const validation = new Promise<boolean>((resolve) => (validated = resolve));
  let hostStarting: () => void = () => {};
  const hostStarted = new Promise<void>((resolve) => (hostStarting = resolve));
  let onStopped: (report: StopReport) => void = () => {};
  const stopped = new Promise<StopReport>((resolve) => (onStopped = resolve));
  const system = startSystem();
  const gate = new OutputGate();
  let metrics: DaemonCounters = NO_COUNTERS;
  let edge: Edge | null = null;
  let delivery: WebhookDelivery | null = null;
  const gateway = spawnGateway(system, log, gate, (type, payload) => {
    metrics.turnEvent(type, payload);
    // A turn's end was committed with its webhook event: deliver it now, not at the next look.
    if (type !== 'turn.started') delivery?.wake();
  });
  const supervisor = spawnSupervisor(system, {
    gateway,
    gate,
    config: {
      home,
      buildSha: buildSha(),
      hostEntry: process.env['TURNHOST_HOST_ENTRY'] ?? cliEntry(),
      hostArgs: () => hostArgs({ ...options, advertise: advertisedUrl(options, edge) }),
      agent: () => choices.config.defaultAgent,
      // The store's URL goes by the environment, not argv: other users of the machine can read argv.
      hostEnv: () => ({ ...hostEnvironment(process.env), [STORE_ENV]: location.kind === 'sqlite' ? 'sqlite' : location.url }),
      // Empty when the config did not validate: that host ends, as the daemon does (exit 78).
      hostHandoff: () => {
        hostStarting();
        return validation.then((valid) => (valid ? catalogueHandoff({ checked: choices.checked, env: variableValues(process.env, hostNames) }) : ''));
      },
      registryPath: paths.registry,
      probe: realProbe({ graceMs: TERMINATE_GRACE_MS, killWaitMs: TERMINATE_KILL_WAIT_MS }),
      clock: monotonicClock,
      log,
      // Whatever the host's stderr says is quoted, never taken as a record: a model server's text
      // printed by a library there must not pass for a record of the supervisor's.
      onHostStderr: (line) => logFile.append(quotedLine('host-stderr', secrets.redact(line))),
      onHostLog: (line) => logFile.append(isRecordLine(line) ? secrets.redact(line) : quotedLine('host-log', secrets.redact(line))),
      onStopped,
      onFirstHello: () => (sandboxTried = trySandbox(choices, refuseStart)),
      onFirstHostRefused: refuseStart,
      // A node's host may first wait for its own lock, held by a dead earlier start of it (postgres-store.ts).
      helloTimeoutMs: 10 * SECOND_MS + (options.nodeId === undefined ? 0 : nodeLockWaitMs(options.leaseSecs ?? DEFAULT_LEASE_SECS)),
      controlTimeoutMs: 30 * SECOND_MS,
      respondTimeoutMs: 15 * SECOND_MS,
    },
  });
  const stop = (): void => tell(supervisor, { kind: 'stop', waitSec: DEFAULT_STOP_WAIT_SEC });
  // The first host loads its modules (hundreds of ms) while the daemon validates its agent config
  // (10 to 20 ms for a catalogue of ten): it reads the result on its catalogue descriptor. A node
  // that advertises its edge's own address starts its host once the edge listens.
  const spawnFirst = options.nodeId === undefined || options.advertise !== undefined;
  if (spawnFirst) {
    tell(supervisor, { kind: 'spawn' });
    // The spawn may first end a host a dead daemon left (reconcile), within the probe's bounds.
    await atMost(hostStarted, TERMINATE_GRACE_MS + TERMINATE_KILL_WAIT_MS + SECOND_MS);
  }
  try {
    const catalogue = await readCatalogue(options.agent, source);
    const needs = catalogueEnvironment(catalogue);
    sandbox = sandboxOnly(source);
    choices = new AgentChoices({ catalogue, mechanism: null });
    for (const name of needs.names) hostNames.add(name);
    secrets.set(needs.secrets);
    validated(true);
  } catch (err) {
    validated(false);
    if (!(err instanceof AgentLoadError)) throw err;
    process.stderr.write(`turnhost daemon: ${err.message}\n`);
    exitCode = err.exitCode;
    stop();
    await stopped;
    stopSystem(system);
    lock.release();
    logFile.close();
    return exitCode;
  }
  const database = readerOnDemand(location);
  const side = sideOnDemand(location);
  const people = async () => (await side.get())?.people ?? null;
  const audit = new AuditLog(paths.audit);
  const storeShown = describeLocation(location);
  const node = options.nodeId === undefined ? null : clusterView(options.nodeId, options.leaseSecs ?? DEFAULT_LEASE_SECS, database.get, supervisor, log);
  const cluster = node?.cluster ?? null;
  let scheduler: Scheduler | null = null;
  const shared: SharedContext = {
    supervisor,
    gateway,
    reader: database.get,
    storeShown,
    nodeId: options.nodeId ?? null,
    cluster,
    edgeUrl: () => edge?.url ?? null,
    identity: HOME_OWNER,
    workspacesRoot: sandbox.workspacesRoot,
    contentBounds: options.content ?? DEFAULT_CONTENT_BOUNDS,
    hiddenPlaces: hiddenPlaces(sandbox),
    agents: choices,
    sandboxMechanism: async () => {
      await sandboxTried;
      return choices.checked.mechanism;
    },
    reloadAgents: () => reloadAgents({ spec: options.agent, source, choices, hostNames, secrets, supervisor }),
    people,
    side: side.get,
    access: new SessionAccess(people),
    audit: (record: AuditRecord) => audit.append(record),
    scheduled: () => scheduler?.wake(),
  };
  const webhooks = options.webhooks ?? [];
  const loaded = await edgeModules;
  const edgeMetrics = loaded === null ? null : new loaded.metrics.DaemonMetrics(metricSources(shared, webhooks));
  metrics = edgeMetrics ?? NO_COUNTERS;
  delivery = webhooks.length === 0 ? null : webhookDelivery(home, webhooks, shared, metrics, log);
  scheduler = new Scheduler({
    side: side.get,
    submit: (row, clientMessageId) => submitFire(shared, row, clientMessageId),
    node: options.nodeId ?? 'local',
    log,
    submitted: stopPoint('schedule-fire-submitted'),
  });
  const retention = retentionSweep(options, shared, metrics, log);
  const clients = spawnActor<null, never>(system, 'clients', (state) => state, { log, init: () => null });
  // Every client's output, whatever its door: one cap, and each is ended when the daemon stops.
  const connections = new Set<ClientLines>();
  const track = (lines: ClientLines) => {
    connections.add(lines);
    return () => void connections.delete(lines);
  };
  const maxClients = options.maxClients ?? DEFAULT_MAX_CLIENTS;
  // Connections waiting to authenticate at the edge count too: they hold descriptors and memory.
  const preAuth = new Places(MAX_WAITING_FOR_AUTH);
  const admit = () => connections.size + preAuth.taken < maxClients;
  const limits = unreadLimits(options.maxUnreadMib);
  const server = createServer((socket) => {
    if (!admit()) {
      refuseClient(socket, maxClients, log);
      return;
    }
    socket.once('close', track(acceptClient(clients, unixTransport(socket, limits), shared, log, metrics)));
  });
  // The edge listens before the socket: whoever finds the daemon by its socket (`turnhost start`, `web`) finds its edge up.
  if (loaded !== null && edgeMetrics !== null && options.http !== undefined) {
    edge = await loaded.server.startEdge({ ...options.http, home, envToken: process.env['TURNHOST_TOKEN'] || undefined, shared, clients, limits, admit, preAuth, track, maxClients, metrics: edgeMetrics, log });
  }
  await listen(server, paths.socket);
  const repl = await startRepl({ path: paths.replSocket, home, supervisor, gateway, system, reader: shared.reader, side: side.get, logPath: paths.log, unreadLimits: limits });
  log.info({ home, socket: paths.socket, ...(edge === null ? {} : { http: edge.url }) }, 'daemon listening');
  if (!spawnFirst) tell(supervisor, { kind: 'spawn' });
  scheduler.start();
  delivery?.start();
  retention.start();

  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // SIGHUP reads the agent config again, as `turnhost agents reload` does (AGENT.md §8).
  process.on('SIGHUP', () => {
    shared.reloadAgents().then(
      (view) => log.info({ name: 'agents-reload', default: view.default, digest: view.digest, agents: view.agents.map((a) => a.name) }, 'agent config reloaded (SIGHUP)'),
      (err: unknown) => log.warn({ name: 'agents-reload', why: (err as Error).message }, 'agent config not reloaded (SIGHUP): the old catalogue stays'),
    );
  });
  process.on('uncaughtException', (err) => log.error({ err }, 'uncaught exception'));
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled rejection'));

  await stopped;
  await scheduler.close();
  await delivery?.close();
  await retention.close();
  await repl.close();
  await edge?.close();
  await closeServer(server, connections);
  rmSync(paths.socket, { force: true });
  node?.close();
  await database.close();
  await side.close();
  audit.close();
  stopSystem(system);
  lock.release();
  log.info('daemon exiting');
  logFile.close();
  return exitCode;
}

/** `promise`, or `ms` at most: for a wait that orders work for speed, never one whose result is needed. */
function atMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * The sandbox's try (AGENT.md §7) when an agent of the catalogue needs it, made once the first host
 * said hello; it settles when the try answered. Among the daemon's own start the try (a process)
 * cost 20 to 30 ms of start to hello on 2 cores, and 10 to 15 ms while the host started: the
 * fork and bwrap's namespaces take CPU from whatever else runs (agents/sandbox/sandbox-try.ts).
 * host.status waits for it to show bubblewrap's version; a machine that cannot make the sandbox
 * ends the daemon with exit 78 moments after the hello (`start` tries it before it starts one).
 * An agent made before it answered is no less safe: each agent tries its sandbox as it is made.
 */
function trySandbox(choices: AgentChoices, refuse: (why: string) => void): Promise<void> {
  const { catalogue } = choices.checked;
  if (!needsSandbox(catalogue.definitions.values())) return Promise.resolve();
  return import('../../agents/sandbox/sandbox-try.js')
    .then(({ triedSandbox }) => triedSandbox(catalogue.file))
    .then(
      (mechanism) => choices.sandboxTried(mechanism),
      (err: unknown) => refuse((err as Error).message),
    );
}

/**
 * What this node reads of the cluster to forward and to take sessions over, with the secret as the
 * store has it now; `close` stops the watches and the secret's reads.
 */
function clusterView(nodeId: string, leaseSecs: number, reader: () => Promise<Reader | null>, supervisor: Ref<SupervisorMsg>, log: pino.Logger): { cluster: Cluster; close(): void } {
  const lease = async (sid: string) => (await reader())?.lease(sid) ?? null;
  const takeovers = new TakeoverWatch({ lease, take: (sid) => tell(supervisor, { kind: 'take-over', sid }), leaseSecs, log });
  const secret = new ClusterSecret(async () => (await (await reader())?.clusterSecret()) ?? null);
  return {
    cluster: {
      nodeId,
      liveOwner: async (sid) => (await reader())?.liveOwner(sid, nodeId) ?? null,
      lease,
      follow: (sid) => takeovers.watch(sid),
      secret: () => secret.fresh(),
      onSecretRotated: (end) => secret.onRotated(end),
    },
    close: () => {
      takeovers.close();
      secret.close();
    },
  };
}

/**
 * The HTTP edge's modules, and the metrics' (only the edge serves /metrics), for a daemon that
 * listens: loaded while its first host starts. A daemon that does not listen never loads them.
 */
async function importEdge() {
  const [server, metrics] = await Promise.all([import('../../edge/edge-server.js'), import('../../edge/metrics.js')]);
  return { server, metrics };
}

/** The metrics read the supervisor, the database and the gateway when scraped; the deliveries when there are webhooks. */
function metricSources(shared: SharedContext, webhooks: readonly string[]): MetricSources {
  return {
    status: () => ask(shared.supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), SECOND_MS * 10),
    reader: shared.reader,
    openRequests: () => ask(shared.gateway, (replyTo: Ref<number>): GatewayMsg => ({ kind: 'count-open-requests', replyTo }), SECOND_MS * 10),
    webhookBacklogs: async () => (webhooks.length === 0 ? null : urlBacklogs(webhooks, (await (await shared.side())?.outbox.backlogs()) ?? [])),
  };
}

/** Each configured URL's backlog (none owed: zeros), then any other URL's still in the store, as shown. */
function urlBacklogs(urls: readonly string[], stored: readonly UrlBacklog[]): UrlBacklog[] {
  const configured = urls.map((url) => stored.find((b) => b.url === url) ?? { url, pending: 0, failed: 0 });
  const others = stored.filter((b) => !urls.includes(b.url));
  return [...configured, ...others].map((b) => ({ ...b, url: shownWebhookUrl(b.url) }));
}

function webhookDelivery(home: string, urls: string[], shared: SharedContext, metrics: DaemonCounters, log: pino.Logger): WebhookDelivery {
  const secret = watchedWebhookSecret(home);
  return new WebhookDelivery({ side: shared.side, urls, secret: () => secret.current(), counted: (outcome, url) => metrics.delivery(outcome, url), log });
}

/**
 * A schedule's fire is a prompt as its maker would submit it, through the same method (so a
 * session another node owns is forwarded to it), whether or not anyone is attached.
 */
/** The retention sweep: forgetting unnamed uploads, and deleting and archiving as `retention`, an admin, when asked. */
function retentionSweep(options: DaemonOptions, shared: SharedContext, metrics: DaemonCounters, log: pino.Logger): { start(): void; close(): Promise<void> } {
  const policy = retentionPolicy(options);
  const caller = new InnerClient(shared, RETENTION, log);
  const sweep = new Retention({
    policy,
    side: shared.side,
    call: (method, params) => caller.call(method, params),
    holder: options.nodeId ?? `daemon-${process.pid}`,
    log,
    swept: (action, count) => metrics.retained(action, count),
  });
  if (policy.deleteAfterMs !== null || policy.archiveAfterMs !== null) log.info({ name: 'retention', deleteAfterDays: options.retentionDays ?? null, archiveAfterDays: options.archiveAfterDays ?? null, sweepSecs: policy.sweepMs / 1000 }, 'retention is on');
  return {
    start: () => sweep.start(),
    close: async () => {
      await sweep.close();
      caller.close();
    },
  };
}

async function submitFire(shared: SharedContext, row: ScheduleRow, clientMessageId: string): Promise<FireOutcome> {
  const maker: Identity = { user: row.created_by, admin: row.created_by === OWNER, via: 'home' };
  // Marked attached: nobody is, and the gateway is not to keep an attachment for this call.
  const ctx = { ...clientContext({ ...shared, identity: maker }, -1), attached: new Set([row.sid]) };
  const prompt = row.content === null ? { text: row.text } : { content: JSON.parse(row.content) as unknown };
  const params = { session_id: row.sid, ...prompt, on_busy: row.on_busy, client_message_id: clientMessageId };
  try {
    const result = (await invokeMethod('prompt.submit', params, ctx)) as { turn_id?: unknown };
    return { kind: 'submitted', turnId: typeof result.turn_id === 'string' ? result.turn_id : null };
  } catch (err) {
    return fireOutcomeOf(err);
  }
}

function sameFile(fd: number, path: string): boolean {
  try {
    const a = fstatSync(fd);
    const b = statSync(path);
    return a.dev === b.dev && a.ino === b.ino;
  } catch {
    return false;
  }
}

/** Past the cap: one JSON-RPC error line that names it, then the connection is closed. */
function refuseClient(socket: Socket, maxClients: number, log: pino.Logger): void {
  log.warn({ maxClients }, 'refused a client connection: the cap on open connections is reached');
  socket.on('error', () => socket.destroy());
  const error = new RpcError(ErrorCodes.tooManyClients, `too many clients: this daemon serves at most ${maxClients} connections at once (--max-clients)`, { max_clients: maxClients });
  socket.end(errorLine(null, error));
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ path, backlog: LISTEN_BACKLOG }, () => {
      chmodSync(path, 0o600);
      resolve();
    });
  });
}

/** Stops accepting, gives the stop's answer a moment to leave, then closes what is left. */
async function closeServer(server: Server, connections: Set<ClientLines>): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const output of connections) output.end();
  const timer = setTimeout(() => {
    for (const output of connections) output.destroy();
  }, SECOND_MS);
  await closed;
  clearTimeout(timer);
}
