// The host's options: declared (on `host`, and on every command that may start a daemon, which
// passes them on), resolved once from flags and environment, then passed down frozen (actors never
// read process.env), and again as arguments, for a host started by a daemon.
import { InvalidArgumentError, type Command } from 'commander';
import { resolve } from 'node:path';
import { resolveAgentSpec } from '../agents/agent-spec.js';
import { parsePositiveInteger, positiveInteger, seconds, storeOption } from './cli-options.js';

export const DEFAULT_WORKERS = 8;
export const DEFAULT_HEARTBEAT_SECS = 5;

type Env = Readonly<Record<string, string | undefined>>;

/** The first variable that is set wins; a malformed value gives the default rather than falling through. */
function firstSet(env: Env, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

/** `--workers`, else TURNHOST_WORKERS, else HERMES_TUI_RPC_POOL_WORKERS, else 8; malformed gives 8. */
export function resolveWorkers(env: Env, flag?: number): number {
  if (flag !== undefined) return flag;
  const text = firstSet(env, ['TURNHOST_WORKERS', 'HERMES_TUI_RPC_POOL_WORKERS']);
  return (text !== undefined ? parsePositiveInteger(text) : undefined) ?? DEFAULT_WORKERS;
}

/** `--heartbeat-secs`, else TURNHOST_HEARTBEAT_SECS, else HERMES_COMPUTE_HOST_HEARTBEAT_SECS, else 5; ≤ 0 turns it off. */
export function resolveHeartbeatSecs(env: Env, flag?: number): number {
  if (flag !== undefined) return flag;
  const text = firstSet(env, ['TURNHOST_HEARTBEAT_SECS', 'HERMES_COMPUTE_HOST_HEARTBEAT_SECS']);
  if (text === undefined) return DEFAULT_HEARTBEAT_SECS;
  const value = Number(text);
  return text.trim() !== '' && Number.isFinite(value) ? value : DEFAULT_HEARTBEAT_SECS;
}

/** The options a command passes on to the host its daemon runs. */
export interface HostPassOptions {
  agent?: string;
  agentConfig?: string;
  workers?: number;
  /** At most this many turns of one person at once (PROTOCOL.md §5.7); absent: no cap. */
  maxRunningPerPerson?: number;
  /** Where the host sends its spans (PROTOCOL.md §5.8); absent: the OTEL_ variables decide. */
  otlpEndpoint?: string;
  heartbeatSecs?: number;
  historyCacheMib?: number;
  /** One node of several on the PostgreSQL store. */
  nodeId?: string;
  leaseSecs?: number;
  /** Where other nodes reach this one; a daemon's default: its `--listen` address, when its port is fixed. */
  advertise?: string;
  /** The webhook events the host writes to the outbox: set by a daemon that has `--webhook`s. */
  webhookEvents?: readonly string[];
}

export function hostArgs(options: HostPassOptions): string[] {
  const args: string[] = [];
  if (options.agent) args.push('--agent', options.agent);
  // Absolute: the host may run in another directory than the command that named the file.
  if (options.agentConfig) args.push('--agent-config', resolve(options.agentConfig));
  if (options.workers !== undefined) args.push('--workers', String(options.workers));
  if (options.maxRunningPerPerson !== undefined) args.push('--max-running-per-person', String(options.maxRunningPerPerson));
  if (options.otlpEndpoint !== undefined) args.push('--otlp-endpoint', options.otlpEndpoint);
  if (options.heartbeatSecs !== undefined) args.push('--heartbeat-secs', String(options.heartbeatSecs));
  if (options.historyCacheMib !== undefined) args.push('--history-cache-mib', String(options.historyCacheMib));
  if (options.nodeId !== undefined) args.push('--node-id', options.nodeId);
  if (options.leaseSecs !== undefined) args.push('--lease-secs', String(options.leaseSecs));
  if (options.advertise !== undefined) args.push('--advertise', options.advertise);
  if (options.webhookEvents !== undefined) args.push('--webhook-events', options.webhookEvents.join(','));
  return args;
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

/** The host's options: on `host`, and on every command that may start a daemon, which passes them on (hostArgs). */
export function hostOptions(command: Command): Command {
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
