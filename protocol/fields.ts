// Typed reads of untrusted JSON objects. Each failure names the field, so the error frame
// a client gets says exactly what to fix.

export class FieldError extends Error {}

export type UnknownRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is UnknownRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The longest session, request or question id, in UTF-8 bytes. */
export const MAX_IDENTIFIER_BYTES = 256;
export const IDENTIFIER_RULE = `must be 1 to ${MAX_IDENTIFIER_BYTES} bytes of printable UTF-8 with no control characters`;
// Control characters, lone surrogates (not UTF-8), and the line and paragraph separators.
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u2028\u2029]/u;

/** An id that names something stored or shown: bounded, printable, one line. */
export function isIdentifier(value: string): boolean {
  return value.length > 0 && Buffer.byteLength(value) <= MAX_IDENTIFIER_BYTES && !UNPRINTABLE.test(value);
}

function absent(value: unknown): boolean {
  return value === undefined || value === null;
}

export class Fields {
  constructor(
    private readonly source: UnknownRecord,
    private readonly prefix = '',
  ) {}

  private name(key: string): string {
    return `${this.prefix}${key}`;
  }

  raw(key: string): unknown {
    return this.source[key];
  }

  has(key: string): boolean {
    return !absent(this.source[key]);
  }

  /** A non-empty string; missing, null or "" is "<key> required". */
  requiredString(key: string): string {
    const value = this.source[key];
    if (absent(value) || value === '') throw new FieldError(`${this.name(key)} required`);
    if (typeof value !== 'string') throw new FieldError(`${this.name(key)} must be a string`);
    return value;
  }

  /** A session, request or question id: 1 to 256 bytes of printable UTF-8. */
  identifier(key: string): string {
    const value = this.requiredString(key);
    if (!isIdentifier(value)) throw new FieldError(`${this.name(key)} ${IDENTIFIER_RULE}`);
    return value;
  }

  optionalIdentifier(key: string): string | undefined {
    return this.has(key) ? this.identifier(key) : undefined;
  }

  optionalString(key: string): string | undefined {
    const value = this.source[key];
    if (absent(value)) return undefined;
    if (typeof value !== 'string') throw new FieldError(`${this.name(key)} must be a string`);
    return value;
  }

  optionalInteger(key: string, min = Number.MIN_SAFE_INTEGER): number | undefined {
    const value = this.source[key];
    if (absent(value)) return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
      throw new FieldError(`${this.name(key)} must be an integer${min === 0 ? ' >= 0' : ''}`);
    }
    return value;
  }

  optionalNumber(key: string, min = -Infinity): number | undefined {
    const value = this.source[key];
    if (absent(value)) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
      throw new FieldError(`${this.name(key)} must be a number${min === 0 ? ' >= 0' : ''}`);
    }
    return value;
  }

  optionalBoolean(key: string): boolean | undefined {
    const value = this.source[key];
    if (absent(value)) return undefined;
    if (typeof value !== 'boolean') throw new FieldError(`${this.name(key)} must be true or false`);
    return value;
  }

  optionalRecord(key: string): UnknownRecord | undefined {
    const value = this.source[key];
    if (absent(value)) return undefined;
    if (!isRecord(value)) throw new FieldError(`${this.name(key)} must be an object`);
    return value;
  }

  requiredRecord(key: string): UnknownRecord {
    const value = this.optionalRecord(key);
    if (value === undefined) throw new FieldError(`${this.name(key)} required`);
    return value;
  }

  optionalArray(key: string): unknown[] | undefined {
    const value = this.source[key];
    if (absent(value)) return undefined;
    if (!Array.isArray(value)) throw new FieldError(`${this.name(key)} must be a list`);
    return value;
  }

  optionalOneOf<T extends string>(key: string, choices: readonly T[]): T | undefined {
    return this.has(key) ? this.oneOf(key, choices) : undefined;
  }

  oneOf<T extends string>(key: string, choices: readonly T[]): T {
    const value = this.requiredString(key);
    if (!(choices as readonly string[]).includes(value)) {
      throw new FieldError(`${this.name(key)} must be one of ${choices.join(', ')}`);
    }
    return value as T;
  }
}
