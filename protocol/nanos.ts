// A monotonic nanosecond stamp. JSON cannot carry a bigint and a Number drops digits past
// 2^53 (about 104 days of uptime), so a stamp serializes to a marker string that the frame
// writer turns back into bare digits.

const MARKER = '\u0001ns:';
const MARKER_IN_JSON = '"\\u0001ns:';
const MARKED = /"\\u0001ns:(\d+)"/g;

export class Nanos {
  constructor(readonly value: bigint) {}

  toJSON(): string {
    return `${MARKER}${this.value}`;
  }

  static of(value: bigint): Nanos {
    return new Nanos(value);
  }
}

/** JSON text with every Nanos written as an integer with all its digits. */
export function stringifyWithNanos(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes(MARKER_IN_JSON) ? text.replace(MARKED, '$1') : text;
}
