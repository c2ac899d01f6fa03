// When a crashed host is respawned: at most 3 restarts in 300 s, after a backoff of
// min(5 s, 0.25 s × 2^(n−1)) where n counts the restarts in the window, this one included.

export const RESTART_WINDOW_MS = 300_000;
export const MAX_RESTARTS = 3;
const BACKOFF_BASE_MS = 250;
const BACKOFF_CAP_MS = 5_000;

export type RespawnDecision = { respawn: true; delayMs: number; restarts: number[] } | { respawn: false; restarts: number[] };

/** `restarts`: when earlier restarts happened. Returns the window as it stands after this crash. */
export function afterCrash(restarts: readonly number[], nowMs: number): RespawnDecision {
  const recent = restarts.filter((at) => nowMs - at < RESTART_WINDOW_MS);
  if (recent.length >= MAX_RESTARTS) return { respawn: false, restarts: recent };
  const n = recent.length + 1;
  return { respawn: true, delayMs: Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (n - 1)), restarts: [...recent, nowMs] };
}
