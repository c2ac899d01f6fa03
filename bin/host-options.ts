// Host settings resolved once from flags and environment, then passed down frozen: actors
// never read process.env.

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
