// Host settings resolved once from flags and environment, then passed down frozen: actors
// never read process.env. And the host options again as arguments, for a host started by a daemon.
import { resolve } from 'node:path';

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

export function parsePositiveInteger(text: string): number | undefined {
  if (!/^\s*\d+\s*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
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
