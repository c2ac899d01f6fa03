// Named points where a test stops this process with SIGSTOP, to kill it exactly there: a window
// too short to hit by timing (the daemon's scheduler between a fire's submit and the schedule's
// advance; the host inside a rewind's transaction, its rows moved and not yet committed; the host
// inside a guest home's snapshot, its entries written and not yet committed; the host after a
// session's delete committed, its files not yet removed; `store copy` with a batch of messages
// committed and the rest of the store not yet copied).
// `TURNHOST_STOP_AT=<name>` arms one; unset, a point is nothing at all.

export type StopPointName = 'schedule-fire-submitted' | 'rewind-rows-moved' | 'home-entries-written' | 'session-delete-committed' | 'store-copy-messages-written';

/** A function that stops this process when `name` is the armed point; undefined otherwise. */
export function stopPoint(name: StopPointName, env: NodeJS.ProcessEnv = process.env): (() => void) | undefined {
  if (env['TURNHOST_STOP_AT'] !== name) return undefined;
  return () => {
    process.stderr.write(`${JSON.stringify({ name: 'stop-point', point: name, pid: process.pid })}\n`);
    process.kill(process.pid, 'SIGSTOP');
  };
}
