// Values that may hold Dates, Maps, Sets or BigInts are stored as superjson text.
import superjson from 'superjson';

export function encode(value: unknown): string {
  return superjson.stringify(value);
}

export function decode<T>(text: string): T {
  return superjson.parse<T>(text);
}

/** Decodes stored text, or gives `fallback` for text this build cannot read (a hand-edited row). */
export function decodeOr<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  try {
    return superjson.parse<T>(text) ?? fallback;
  } catch {
    return fallback;
  }
}
