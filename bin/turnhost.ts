#!/usr/bin/env node
// The turnhost command line (PROTOCOL.md §3). Wiring only: each command's body is in commands/,
// loaded by the command that runs it. Loading them all made every process load every library (the
// edge's, the ACP SDK, zod): the host, which the supervisor restarts after a crash, took 0.85 s to
// start instead of 0.4.
// First, before any other module is evaluated: the daemon's heap settings (see daemon-heap.ts).
import './daemon-heap.js';
import { Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { AgentLoadError, checkedCatalogue, resolveAgentSpec } from '../agents/loader.js';
import type { HttpOptions } from './commands/daemon.js';
import type { JwtOptions } from '../edge/jwt-verifier.js';
import { parseListenAddress } from '../edge/listen-address.js';
import { packageVersion } from '../protocol/package-version.js';
import { homeFrom } from '../protocol/home-paths.js';
import { hostArgs, parsePositiveInteger } from './host-options.js';
import { STORE_ENV, storeLocation } from '../persistence/store-location.js';
import { parseWebhookEvents, WEBHOOK_EVENTS, type WebhookEvent } from '../persistence/outbox.js';

function positiveInteger(text: string): number {
  const value = parsePositiveInteger(text);
  if (value === undefined) throw new InvalidArgumentError('must be a positive integer');
  return value;
}

/** An http(s) URL without credentials: it goes on the host's command line, which others may read (credentials go in OTEL_EXPORTER_OTLP_HEADERS). */
function otlpEndpoint(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError('must be an http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('must be an http:// or https:// URL');
  if (url.username !== '' || url.password !== '') throw new InvalidArgumentError('must not hold credentials (give them in OTEL_EXPORTER_OTLP_HEADERS)');
  return url.toString();
}

function seconds(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new InvalidArgumentError('must be a number of seconds');
  return value;
}

const homeOption = () => new Option('--home <dir>', 'home folder (default: $TURNHOST_HOME, else ~/.turnhost)');
const maxClientsOption = () =>
  new Option('--max-clients <n>', 'open client connections past which a new one is refused (default 1024)').argParser(positiveInteger);
/** The HTTP edge's options (PROTOCOL.md §5), on `daemon` and `start`. */
function httpOptions(command: Command): Command {
  return jwtOptions(command)
    .option('--listen <host:port>', 'also serve HTTP (REST, SSE, WebSocket, the page) here; port 0 picks one (default: $TURNHOST_LISTEN, else none)')
    .option('--allow-host <name>', 'a Host name besides localhost to serve on a loopback address (a reverse proxy); repeatable', collect, [])
    .option('--cors-origin <origin>', 'an origin whose pages may call the edge; repeatable', collect, [])
    .option('--metrics-public', 'serve /metrics without the token')
    .option('--public-url <url>', 'the address people use, when behind a proxy (https makes the login cookie Secure)')
    .addOption(loginDaysOption());
}

/** An identity provider's JWTs (PROTOCOL.md §5.6), on `daemon`, `start` and `web`. */
function jwtOptions(command: Command): Command {
  return command
    .option('--jwt-jwks <url>', "take JWTs signed with the keys of this JWKS URL (the provider's jwks_uri)")
    .option('--jwt-jwks-file <file>', 'take JWTs signed with the keys of this JWKS file', (file: string) => resolve(file))
    .option('--jwt-issuer <iss>', 'the issuer a JWT must name')
    .option('--jwt-audience <aud>', 'the audience a JWT must name')
    .option('--jwt-user-claim <claim>', 'the claim that names the user (default sub)')
    .option('--jwt-admin-claim <claim>', 'the claim that, when true, makes the user an admin (default turnhost_admin)');
}

interface JwtFlags {
  jwtJwks?: string;
  jwtJwksFile?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  jwtUserClaim?: string;
  jwtAdminClaim?: string;
}

/** The JWT options as a daemon's; undefined when no key set is given (and then no other --jwt-* may be). */
function jwtFrom(opts: JwtFlags): JwtOptions | undefined {
  if (opts.jwtJwks !== undefined && opts.jwtJwksFile !== undefined) throw new InvalidArgumentError('give --jwt-jwks or --jwt-jwks-file, not both');
  const jwks = opts.jwtJwks !== undefined ? { url: new URL(opts.jwtJwks).href } : opts.jwtJwksFile !== undefined ? { file: opts.jwtJwksFile } : undefined;
  if (jwks === undefined) {
    if (jwtArgs(opts).length > 0) throw new InvalidArgumentError('the --jwt-* options need --jwt-jwks or --jwt-jwks-file');
    return undefined;
  }
  return { jwks, issuer: opts.jwtIssuer, audience: opts.jwtAudience, userClaim: opts.jwtUserClaim, adminClaim: opts.jwtAdminClaim };
}

function jwtArgs(opts: JwtFlags): string[] {
  const flags: [string, string | undefined][] = [
    ['--jwt-jwks', opts.jwtJwks],
    ['--jwt-jwks-file', opts.jwtJwksFile],
    ['--jwt-issuer', opts.jwtIssuer],
    ['--jwt-audience', opts.jwtAudience],
    ['--jwt-user-claim', opts.jwtUserClaim],
    ['--jwt-admin-claim', opts.jwtAdminClaim],
  ];
  return flags.flatMap(([flag, value]) => (value === undefined ? [] : [flag, value]));
}

/** Webhooks (PROTOCOL.md §8.2), on `daemon`, `start` and `web`. */
function webhookOptions(command: Command): Command {
  return command
    .option('--webhook <url>', 'POST each event (turn.end, turn.error, request.open, schedule.fired), signed, to this URL; repeatable', webhookUrl, [])
    .option('--webhook-events <list>', `the events sent, comma-separated (default: all: ${WEBHOOK_EVENTS.join(',')})`, webhookEvents);
}

function webhookEvents(text: string): WebhookEvent[] {
  try {
    return parseWebhookEvents(text);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

interface WebhookFlags {
  webhook: string[];
  webhookEvents?: WebhookEvent[];
}

function webhookUrl(value: string, previous: string[]): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('--webhook: not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('--webhook: an http: or https: URL');
  return [...previous, value];
}

function webhookArgs(opts: WebhookFlags): string[] {
  return opts.webhook.flatMap((url) => ['--webhook', url]); // --webhook-events goes with the host's options
}

/** Retention (PROTOCOL.md §2.3), off by default: on `daemon`, `start` and `web`. */
function retentionOptions(command: Command): Command {
  return command
    .option('--retention-days <n>', 'delete sessions idle longer than this many days (fractions allowed), pinned ones never (default: $TURNHOST_RETENTION_DAYS, else never)', positiveNumber)
    .option('--archive-after-days <n>', 'archive sessions idle longer than this many days instead (fractions allowed)', positiveNumber)
    .option('--retention-sweep-secs <s>', 'how often retention looks (default 3600)', positiveNumber);
}

interface RetentionFlags {
  retentionDays?: number;
  archiveAfterDays?: number;
  retentionSweepSecs?: number;
}

function positiveNumber(text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0) throw new InvalidArgumentError('must be a positive number');
  return value;
}

/** The flags, with $TURNHOST_RETENTION_DAYS when --retention-days is not given. */
function retentionFrom(opts: RetentionFlags): RetentionFlags {
  const fromEnv = process.env['TURNHOST_RETENTION_DAYS'];
  const days = opts.retentionDays ?? (fromEnv ? positiveNumber(fromEnv) : undefined);
  return {
    ...(days === undefined ? {} : { retentionDays: days }),
    ...(opts.archiveAfterDays === undefined ? {} : { archiveAfterDays: opts.archiveAfterDays }),
    ...(opts.retentionSweepSecs === undefined ? {} : { retentionSweepSecs: opts.retentionSweepSecs }),
  };
}

/** The flags as a background daemon's arguments (the environment reaches it by itself). */
function retentionArgs(opts: RetentionFlags): string[] {
  return [
    ...(opts.retentionDays === undefined ? [] : ['--retention-days', String(opts.retentionDays)]),
    ...(opts.archiveAfterDays === undefined ? [] : ['--archive-after-days', String(opts.archiveAfterDays)]),
    ...(opts.retentionSweepSecs === undefined ? [] : ['--retention-sweep-secs', String(opts.retentionSweepSecs)]),
  ];
}

const loginDaysOption = () => new Option('--login-days <n>', 'how long a page login lasts (default 7)').argParser(positiveInteger);

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The edge's options as a daemon's, or undefined when it does not listen. */
function httpFrom(opts: { listen?: string; allowHost: string[]; corsOrigin: string[]; metricsPublic?: boolean; publicUrl?: string; loginDays?: number } & JwtFlags): HttpOptions | undefined {
  const listen = opts.listen ?? (process.env['TURNHOST_LISTEN'] || undefined);
  const jwt = jwtFrom(opts);
  if (listen === undefined) return undefined;
  return {
    ...(jwt === undefined ? {} : { jwt }),
    listen: parseListenAddress(listen),
    allowHosts: opts.allowHost,
    corsOrigins: opts.corsOrigin,
    metricsPublic: opts.metricsPublic === true,
    ...(opts.publicUrl === undefined ? {} : { publicUrl: opts.publicUrl }),
    ...(opts.loginDays === undefined ? {} : { loginDays: opts.loginDays }),
  };
}

/** The same options again, for a daemon started in the background. */
function httpArgs(opts: { listen?: string; allowHost: string[]; corsOrigin: string[]; metricsPublic?: boolean; publicUrl?: string; loginDays?: number } & JwtFlags): string[] {
  return [
    ...jwtArgs(opts),
    ...(opts.listen === undefined ? [] : ['--listen', opts.listen]),
    ...opts.allowHost.flatMap((name) => ['--allow-host', name]),
    ...opts.corsOrigin.flatMap((origin) => ['--cors-origin', origin]),
    ...(opts.metricsPublic ? ['--metrics-public'] : []),
    ...(opts.publicUrl === undefined ? [] : ['--public-url', opts.publicUrl]),
    ...(opts.loginDays === undefined ? [] : ['--login-days', String(opts.loginDays)]),
  ];
}

const maxUnreadOption = () =>
  new Option('--max-unread-mib <n>', "a client's unread output past which it is cut off when it stops reading (default 8; one that reads may lag 8 times that)").argParser(positiveInteger);

function hostOptions(command: Command): Command {
  return command
    // Paths are made absolute here: a daemon and its host run in the home, not where the command ran.
    .option('--agent <name|path>', 'the agent: a built-in name (script, openai, acp) or a path to an ES module (default: script)', (spec: string) => resolveAgentSpec(spec))
    .option('--agent-config <file>', "the agent config (openai, acp) (default: $TURNHOST_AGENT_CONFIG, else <home>/agent.json)", (file: string) => resolve(file))
    .option('--workers <n>', 'turns that may run at once (default: $TURNHOST_WORKERS, else 8)', positiveInteger)
    .option('--max-running-per-person <n>', "at most this many of one person's turns run at once (default: no limit)", positiveInteger)
    .option('--otlp-endpoint <url>', 'send OpenTelemetry spans to this OTLP/HTTP collector (its base URL; default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none)', otlpEndpoint)
    .option('--heartbeat-secs <s>', 'heartbeat period; <= 0 turns heartbeat and parent guard off (default 5)', seconds)
    .option('--history-cache-mib <n>', "the host's cache of session histories, in MiB: a turn of a cached session reads nothing back (default 64)", positiveInteger)
    .addOption(storeOption())
    .option('--node-id <id>', 'run as one node of several on a PostgreSQL store: sessions are owned through leases (PROTOCOL.md §6.2)')
    .option('--lease-secs <s>', "how long a node's lease on a session lasts unless renewed (default 10)", positiveInteger)
    .option('--advertise <url>', "where the other nodes reach this node's HTTP edge (default: the --listen address)");
}

/**
 * `--store`: checked by the command that uses it, not by commander, whose error would repeat the
 * value, password and all.
 */
const storeOption = () =>
  new Option('--store <sqlite|postgres://…>', "where sessions live: sqlite (the home's turnhost.db) or a PostgreSQL URL (default: $TURNHOST_STORE, else sqlite)");

/**
 * A daemon started in the background learns the store from its environment, not its argv: other
 * users of the machine can read argv, and a PostgreSQL URL carries a password.
 */
function storeForChildren(opts: { store?: string }): void {
  storeLocation(opts.store, ''); // a bad value is one line here, its password hidden
  if (opts.store !== undefined) process.env[STORE_ENV] = opts.store;
}

/**
 * Runs a command body and exits with its code; anything it throws is one line on stderr, exit 1.
 * The exit waits until stdout and stderr have drained: a pipe takes 64 KiB at once, and an exit
 * before the rest has left cuts the output (`history --json | jq` would get broken JSON).
 */
async function run(name: string, body: () => number | Promise<number>): Promise<void> {
  // The host writes its frames to fd 1 itself, with blocking writes: opening process.stdout
  // would make fd 1 non-blocking, and a full pipe would then cost the host a sleep per write.
  const streams = name === 'host' ? [process.stderr] : [process.stdout, process.stderr];
  for (const stream of streams) quietOnClosedPipe(stream);
  let code: number;
  try {
    code = await body();
  } catch (err) {
    process.stderr.write(`turnhost ${name}: ${(err as Error).message}\n`);
    code = err instanceof AgentLoadError ? err.exitCode : 1;
  }
  process.exitCode = code;
  await Promise.all(streams.map(drained));
  process.exit(code);
}

function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    stream.write('', () => resolve());
    stream.once('error', () => resolve());
  });
}

/** A reader that went away (`turnhost history X | head -1`) ends the command quietly, as `cat` would. */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

/**
 * What a command that may start a daemon does first: a broken agent config fails here, in one line
 * with exit 78, not later in a background daemon; the store goes to the daemon's environment. A
 * daemon that already runs has its own catalogue: then `--agent` names one of its agents, and the
 * file is not read here.
 */
async function beforeDaemonStart(opts: { home?: string; agent?: string; agentConfig?: string; store?: string }): Promise<void> {
  const home = homeFrom(opts.home);
  const running = await (await import('./daemon-client.js')).connectDaemon(home);
  running?.close();
  if (running === null) await checkedCatalogue(opts.agent, { home, flag: opts.agentConfig, env: process.env });
  storeForChildren(opts);
}

const program = new Command('turnhost')
  .description('A crash-safe host for long-running AI agent sessions')
  .version(packageVersion(), '-V, --version', 'print the version')
  .showHelpAfterError()
  .enablePositionalOptions();

hostOptions(program.command('host').description('run the compute host on stdin/stdout (the host protocol)'))
  .addOption(homeOption())
  .addOption(new Option('--queue-deltas', 'send queue.delta frames instead of session.queue events (for the daemon)').hideHelp())
  .addOption(new Option('--log-fd <fd>', 'write log records to this open descriptor instead of stderr (for the daemon)').argParser(positiveInteger).hideHelp())
  .addOption(new Option('--catalogue-fd <fd>', 'read the agent catalogue the daemon validated from this open descriptor (for the daemon)').argParser(positiveInteger).hideHelp())
  .addOption(new Option('--webhook-events <list>', 'write these webhook events to the outbox (for the daemon)').argParser(webhookEvents).hideHelp())
  .action((opts) =>
    run('host', async () => (await import('./commands/host.js')).hostCommand({ home: homeFrom(opts.home), agent: opts.agent, agentConfig: opts.agentConfig, workers: opts.workers, maxRunningPerPerson: opts.maxRunningPerPerson, otlpEndpoint: opts.otlpEndpoint, heartbeatSecs: opts.heartbeatSecs, queueDeltas: opts.queueDeltas, logFd: opts.logFd, catalogueFd: opts.catalogueFd, historyCacheMib: opts.historyCacheMib, store: opts.store, nodeId: opts.nodeId, leaseSecs: opts.leaseSecs, advertise: opts.advertise, webhookEvents: opts.webhookEvents })),
  );

retentionOptions(webhookOptions(httpOptions(hostOptions(program.command('daemon').description('run the supervisor in the foreground (the host options go to its host)')))))
  .addOption(homeOption())
  .addOption(maxClientsOption())
  .addOption(maxUnreadOption())
  .action((opts) =>
    run('daemon', async () => {
      const http = httpFrom(opts);
      return (await import('./commands/daemon.js')).daemonCommand({
        home: homeFrom(opts.home),
        agent: opts.agent,
        agentConfig: opts.agentConfig,
        workers: opts.workers,
        maxRunningPerPerson: opts.maxRunningPerPerson,
        otlpEndpoint: opts.otlpEndpoint,
        heartbeatSecs: opts.heartbeatSecs,
        historyCacheMib: opts.historyCacheMib,
        store: opts.store,
        nodeId: opts.nodeId,
        leaseSecs: opts.leaseSecs,
        advertise: opts.advertise,
        maxClients: opts.maxClients,
        maxUnreadMib: opts.maxUnreadMib,
        webhooks: opts.webhook,
        ...(opts.webhook.length === 0 ? {} : { webhookEvents: opts.webhookEvents ?? [...WEBHOOK_EVENTS] }),
        echoLog: true,
        ...retentionFrom(opts),
        ...(http === undefined ? {} : { http }),
      });
    }),
  );

retentionOptions(webhookOptions(httpOptions(hostOptions(program.command('start').description("start the daemon in the background; prints its pid once its host has said hello")))))
  .addOption(homeOption())
  .addOption(maxClientsOption())
  .addOption(maxUnreadOption())
  .action((opts) =>
    run('start', async () => {
      await beforeDaemonStart(opts);
      // A bad --listen is one line here, not a daemon that fails in the background.
      httpFrom(opts);
      const daemonArgs = [
        ...(opts.maxClients === undefined ? [] : ['--max-clients', String(opts.maxClients)]),
        ...(opts.maxUnreadMib === undefined ? [] : ['--max-unread-mib', String(opts.maxUnreadMib)]),
        ...httpArgs(opts),
        ...webhookArgs(opts),
        ...retentionArgs(opts),
      ];
      const { startCommand } = await import('./commands/lifecycle.js');
      return startCommand(homeFrom(opts.home), [...hostArgs(opts), ...daemonArgs]);
    }),
  );

retentionOptions(webhookOptions(jwtOptions(hostOptions(program.command('web').description('the page: starts the daemon listening on 127.0.0.1:7433 when none runs, prints the login address')))))
  .addOption(homeOption())
  .option('--listen <host:port>', 'where a daemon started here listens (default 127.0.0.1:7433)')
  .option('--open', 'also open a single-use login address in a browser (the token is never on its command line)')
  .addOption(loginDaysOption())
  .action((opts) =>
    run('web', async () => {
      await beforeDaemonStart(opts);
      const { DEFAULT_WEB_LISTEN, webCommand } = await import('./commands/web.js');
      const listen = opts.listen ?? DEFAULT_WEB_LISTEN;
      parseListenAddress(listen);
      const loginDays = opts.loginDays === undefined ? [] : ['--login-days', String(opts.loginDays)];
      jwtFrom(opts);
      return webCommand(homeFrom(opts.home), { daemonArgs: [...hostArgs(opts), '--listen', listen, ...loginDays, ...jwtArgs(opts), ...webhookArgs(opts), ...retentionArgs(opts)], open: opts.open === true });
    }),
  );

program
  .command('token')
  .description("print the HTTP edge's token (made when there is none); --rotate replaces it and ends the page logins made with the old one")
  .addOption(homeOption())
  .option('--rotate', 'make a new token')
  .action((opts) => run('token', async () => (await import('./commands/web.js')).tokenCommand(homeFrom(opts.home), opts.rotate === true)));

program
  .command('stop')
  .description('stop the daemon gracefully; prints how many sessions were finalized and retained')
  .addOption(homeOption())
  .option('--wait <seconds>', 'drain budget of the host (default 10)', seconds)
  .action((opts) => run('stop', async () => (await import('./commands/lifecycle.js')).stopCommand(homeFrom(opts.home), opts.wait)));

program
  .command('status')
  .description('the supervisor, the host and the sessions')
  .addOption(homeOption())
  .option('--json', 'print one JSON document')
  .action((opts) => run('status', async () => (await import('./commands/lifecycle.js')).statusCommand(homeFrom(opts.home), opts.json === true)));

hostOptions(program.command('chat').description('one turn (TEXT), or a prompt loop; starts the daemon when none runs'))
  .argument('[text]', 'the prompt; without it, prompts are read line by line')
  .addOption(homeOption())
  .option('--session <id>', 'the session to use (default: a new one)')
  .action((text: string | undefined, opts) =>
    run('chat', async () => {
      await beforeDaemonStart(opts);
      const { chatCommand } = await import('./commands/chat.js');
      return chatCommand(homeFrom(opts.home), { ...(opts.session ? { session: opts.session } : {}), ...(text !== undefined ? { text } : {}), ...(opts.agent ? { agent: opts.agent } : {}), hostArgs: hostArgs(opts) });
    }),
  );

hostOptions(program.command('acp').description('an Agent Client Protocol agent on stdin/stdout, for editors; starts the daemon when none runs'))
  .addOption(homeOption())
  .action((opts) =>
    run('acp', async () => {
      await beforeDaemonStart(opts);
      const { acpCommand } = await import('./commands/acp.js');
      return acpCommand(homeFrom(opts.home), { hostArgs: hostArgs(opts), ...(opts.agent ? { agent: opts.agent } : {}) });
    }),
  );

program
  .command('repl')
  .description("the debug REPL of the running daemon (or, with --offline, the database's commands)")
  .addOption(homeOption())
  .option('--offline', 'no daemon: the database and log commands only')
  .addOption(storeOption())
  .action((opts) => run('repl', async () => (await import('./commands/repl.js')).replCommand(homeFrom(opts.home), { offline: opts.offline === true, store: opts.store })));

program
  .command('sessions')
  .description("list sessions from the home's database (works with the daemon down)")
  .addOption(homeOption())
  .option('--json', 'print one JSON array')
  .option('--status <status>', 'only sessions with this status: active, finalized or retained')
  .option('--archived', 'archived sessions too')
  .addOption(storeOption())
  .action((opts) => run('sessions', async () => (await import('./commands/sessions.js')).sessionsCommand(homeFrom(opts.home), opts)));

program
  .command('history')
  .description("print one session's messages from the database")
  .argument('<id>', 'the session id')
  .addOption(homeOption())
  .option('--json', 'print one JSON array')
  .option('--all', 'with the turns rewinds, retries and edits superseded (PROTOCOL.md §2.2)')
  .addOption(storeOption())
  .action((id: string, opts) => run('history', async () => (await import('./commands/sessions.js')).historyCommand(homeFrom(opts.home), id, opts)));

program
  .command('fork')
  .description("a new session whose history is this one's up to a turn (the last that ended, or --at); through the daemon")
  .argument('<id>', 'the session to fork')
  .option('--at <turn>', 'the turn to fork at (default: the last that ended)')
  .option('--as <new-id>', "the new session's id (default: made up)")
  .option('--cwd <dir>', "the new session's folder (default: a new workspace); a guest that keeps its memory by folder needs its source's")
  .option('--json', 'print the result as JSON')
  .addOption(homeOption())
  .action((id: string, opts) => run('fork', async () => (await import('./commands/branches.js')).forkCommand(homeFrom(opts.home), id, opts)));

program
  .command('rewind')
  .description('the session goes back to just after a turn; the turns after it are superseded, not deleted; through the daemon')
  .argument('<id>', 'the session')
  .requiredOption('--to <turn>', 'the turn to keep last (start: before the first)')
  .addOption(homeOption())
  .action((id: string, opts) => run('rewind', async () => (await import('./commands/branches.js')).rewindCommand(homeFrom(opts.home), id, opts)));

program
  .command('retry')
  .description("the session's last turn again: its prompt resubmitted, the old turn superseded; through the daemon")
  .argument('<id>', 'the session')
  .addOption(homeOption())
  .action((id: string, opts) => run('retry', async () => (await import('./commands/branches.js')).retryCommand(homeFrom(opts.home), id)));

program
  .command('delete')
  .description('delete a session for good: its history, queue, shares, schedules, agent home and the workspace turnhost made (PROTOCOL.md §2.3); through the daemon')
  .argument('<id>', 'the session')
  .option('--yes', 'do not ask (needed when stdin is not a terminal)')
  .option('--interrupt', 'end a running turn first (else a running turn refuses the delete)')
  .addOption(homeOption())
  .action((id: string, opts) => run('delete', async () => (await import('./commands/session-life.js')).deleteCommand(homeFrom(opts.home), id, opts)));

for (const [mark, description] of [
  ['archive', 'take a session out of the lists; everything is kept, and a prompt brings it back'],
  ['unarchive', 'bring an archived session back into the lists'],
  ['pin', 'keep a session through retention (--retention-days)'],
  ['unpin', 'let retention take a session again'],
] as const) {
  program
    .command(mark)
    .description(`${description}; through the daemon`)
    .argument('<id>', 'the session')
    .addOption(homeOption())
    .action((id: string, opts) => run(mark, async () => (await import('./commands/session-life.js')).markCommand(homeFrom(opts.home), id, mark)));
}

program
  .command('export')
  .description("one session as JSON lines: its turns and messages, superseded ones too, with their usage (PROTOCOL.md §2.3); from the store, daemon up or down")
  .argument('<id>', 'the session')
  .option('--out <file>', 'write it to this file (default: stdout)')
  .addOption(homeOption())
  .addOption(storeOption())
  .action((id: string, opts) => run('export', async () => (await import('./commands/session-files.js')).exportCommand(homeFrom(opts.home), id, opts)));

program
  .command('import')
  .description("a session file made by export, as a new session of this home's owner; the whole file is checked first, then written in one transaction")
  .argument('<file>', 'the file')
  .option('--as <id>', "the new session's id (default: made up)")
  .addOption(homeOption())
  .addOption(storeOption())
  .action((file: string, opts) => run('import', async () => (await import('./commands/session-files.js')).importCommand(homeFrom(opts.home), file, opts)));

const store = program.command('store').description('the store as a whole (PROTOCOL.md §2.3, §6)');
store
  .command('copy')
  .description('copy every session, branch, turn, usage row, person, share, schedule and webhook state to another store, and check the copy; the daemons of both must be stopped')
  .requiredOption('--to <sqlite|postgres://…>', "the store to copy to: sqlite (the home's turnhost.db) or a PostgreSQL URL")
  .option('--from <sqlite|postgres://…>', "the store to copy from (default: the home's: $TURNHOST_STORE, else sqlite)")
  .option('--resume', 'finish a copy that was cut short: rows already copied are left as they are')
  .addOption(homeOption())
  .action((opts) => run('store copy', async () => (await import('./commands/store-copy.js')).storeCopyCommand(homeFrom(opts.home), opts)));

const user = program.command('user').description('the people of this turnhost and their personal tokens (PROTOCOL.md §5.6)');
user
  .command('add')
  .description('make a user and print their token, once (only its SHA-256 is kept)')
  .argument('<name>', "the user's name")
  .option('--admin', 'the user sees and drives every session')
  .addOption(homeOption())
  .addOption(storeOption())
  .action((name: string, opts) => run('user', async () => (await import('./commands/users.js')).userAddCommand(homeFrom(opts.home), name, opts)));
user
  .command('list')
  .description('the users: name, role, when made and last seen (never a token)')
  .option('--json', 'print one JSON array')
  .addOption(homeOption())
  .addOption(storeOption())
  .action((opts) => run('user', async () => (await import('./commands/users.js')).userListCommand(homeFrom(opts.home), opts)));
user
  .command('remove')
  .description("end a user: their tokens fail at once, their connections close within 2 s on every node")
  .argument('<name>', "the user's name")
  .addOption(homeOption())
  .addOption(storeOption())
  .action((name: string, opts) => run('user', async () => (await import('./commands/users.js')).userRemoveCommand(homeFrom(opts.home), name, opts)));

user
  .command('budget')
  .description("a person's budget, or the default for members (--default), per UTC day (PROTOCOL.md §5.7); no limits: show it; no name: list them")
  .argument('[name]', "the user's name")
  .option('--default', "the budget of every member without their own (admins have none by default)")
  .option('--tokens-per-day <n>', 'prompt and completion tokens a day', positiveInteger)
  .option('--turns-per-day <n>', 'turns started a day', positiveInteger)
  .option('--none', 'no budget (a member then has the default)')
  .addOption(homeOption())
  .addOption(storeOption())
  .action((name: string | undefined, opts) => run('user', async () => (await import('./commands/users.js')).userBudgetCommand(homeFrom(opts.home), name, opts)));

const agents = program
  .command('agents')
  .description('the agents a session may be made with (AGENT.md §8), through the running daemon')
  .addOption(homeOption())
  .option('--json', 'print one JSON object')
  .action((opts) => run('agents', async () => (await import('./commands/agents.js')).agentsCommand(homeFrom(opts.home), opts)));
agents
  .command('reload')
  .description("read the agent config again, without a restart (SIGHUP does the same); a file that does not validate is refused and exits 78")
  .addOption(homeOption())
  .action((opts) => run('agents', async () => (await import('./commands/agents.js')).agentsReloadCommand(homeFrom(opts.home))));

program
  .command('usage')
  .description("what the turns spent, from the store's ledger (works with the daemon down; PROTOCOL.md §5.7)")
  .option('--by <what>', 'group by person, session, model, agent or day (default: person)')
  .option('--since <date>', 'from this UTC day, YYYY-MM-DD')
  .option('--until <date>', 'to this UTC day, YYYY-MM-DD, inclusive')
  .option('--json', 'print one JSON object')
  .addOption(homeOption())
  .addOption(storeOption())
  .action((opts) => run('usage', async () => (await import('./commands/usage.js')).usageCommand(homeFrom(opts.home), opts)));

const schedule = program.command('schedule').description('prompts that run on their own, on a plan (PROTOCOL.md §8.1); through the running daemon');
schedule
  .command('add')
  .description('submit TEXT to SESSION on a plan: --cron, --every or --at (one of them)')
  .argument('<session>', 'the session (made when it does not exist)')
  .argument('<text>', 'the prompt')
  .option('--cron <expr>', 'a cron expression: 5 fields, or 6 with seconds first')
  .option('--every <secs>', 'every this many seconds', positiveInteger)
  .option('--at <time>', 'once, at this ISO 8601 time')
  .option('--tz <zone>', "the cron's IANA time zone (default UTC)")
  .option('--catch-up <one|none>', 'fires missed while turnhost was down: one fire at start (one, the default) or none')
  .option('--on-busy <queue|reject>', 'when a turn runs: queue the fire behind it (the default) or skip it')
  .addOption(homeOption())
  .action((session: string, text: string, opts) => run('schedule', async () => (await import('./commands/schedules.js')).scheduleAddCommand(homeFrom(opts.home), session, text, opts)));
schedule
  .command('list')
  .description('the schedules: plan, next and last fire, how many fires')
  .option('--json', 'print one JSON array')
  .addOption(homeOption())
  .action((opts) => run('schedule', async () => (await import('./commands/schedules.js')).scheduleListCommand(homeFrom(opts.home), opts)));
schedule
  .command('rm')
  .description('delete a schedule')
  .argument('<id>', 'the schedule id')
  .addOption(homeOption())
  .action((id: string, opts) => run('schedule', async () => (await import('./commands/schedules.js')).scheduleRemoveCommand(homeFrom(opts.home), id)));

program
  .command('webhook')
  .description('the webhooks (PROTOCOL.md §8.2)')
  .command('secret')
  .description('print the secret the webhooks are signed with (made when there is none); --rotate replaces it')
  .option('--rotate', 'make a new secret; the daemon signs with it within a second')
  .addOption(homeOption())
  .action((opts) => run('webhook', async () => (await import('./commands/schedules.js')).webhookSecretCommand(homeFrom(opts.home), opts.rotate === true)));

const cluster = program
  .command('cluster')
  .description("the nodes that share one PostgreSQL (docs/CLUSTER.md), as the running daemon's node sees them, with each node's catalogue of agents")
  .addOption(homeOption())
  .option('--json', 'print one JSON array')
  .action((opts) => run('cluster', async () => (await import('./commands/cluster.js')).nodesCommand(homeFrom(opts.home), opts.json === true)));
cluster
  .command('rotate-secret')
  .description('replace the secret the nodes prove to each other; every node takes the new one within 5 s')
  .addOption(storeOption())
  .action((opts) => run('cluster', async () => (await import('./commands/cluster.js')).rotateSecretCommand(opts.store)));

await program.parseAsync(process.argv);
