// A warning or an error that repeats (the same message with the same fields) is logged once a
// second, with the count of the times it came meanwhile (`repeated`): a flood of bad input
// (thousands of broken frames a second) costs one record a second, not one each, and the log says
// how many there were. Records that differ (each restart's own delay) all pass; info records are
// never held back: tests and operators count "host ready".
import type { LogFn, Logger } from 'pino';

const WINDOW_MS = 1000;
const WARN_LEVEL = 40;
/** Distinct messages remembered; past it the memory starts over (messages are few and fixed in practice). */
const MAX_MESSAGES = 1000;

type LogMethodHook = (this: Logger, args: Parameters<LogFn>, method: LogFn, level: number) => void;

export function onceASecond(): LogMethodHook {
  const seen = new Map<string, { at: number; repeats: number }>();
  return function (this: Logger, args, method, level) {
    if (level < WARN_LEVEL) return method.apply(this, args);
    const key = `${level} ${sameness(args)}`;
    const now = Date.now();
    const last = seen.get(key);
    if (last !== undefined && now - last.at < WINDOW_MS) {
      last.repeats++;
      return;
    }
    if (seen.size >= MAX_MESSAGES) seen.clear();
    seen.set(key, { at: now, repeats: 0 });
    if (last === undefined || last.repeats === 0) return method.apply(this, args);
    const [first, ...rest] = args as unknown[];
    const counted = typeof first === 'object' && first !== null ? [{ ...first, repeated: last.repeats }, ...rest] : [{ repeated: last.repeats }, first, ...rest];
    return method.apply(this, counted as Parameters<LogFn>);
  };
}

/** What makes two records the same: their message and fields (an error by its message, not its stack). */
function sameness(args: readonly unknown[]): string {
  try {
    return JSON.stringify(args, (_key, value: unknown) => (value instanceof Error ? value.message : value));
  } catch {
    return String(args.find((arg) => typeof arg === 'string') ?? '');
  }
}
