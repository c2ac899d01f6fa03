// The one clock seam. Deadline arithmetic reads nowMs() and sets timers through after(), so a
// test can observe (or replace) every wait the host asks for. host_ns is CLOCK_MONOTONIC in ns,
// comparable across processes on one machine.

export interface Clock {
  nowMs(): number;
  hostNs(): bigint;
  /** Calls fn after ms; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
}

/** setTimeout turns longer delays into 1 ms; a longer wait is clamped instead. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const monotonicClock: Clock = {
  nowMs: () => performance.now(),
  hostNs: () => process.hrtime.bigint(),
  after(ms, fn) {
    const timer = setTimeout(fn, Math.min(MAX_TIMER_MS, Math.max(0, ms)));
    return () => clearTimeout(timer);
  },
};
