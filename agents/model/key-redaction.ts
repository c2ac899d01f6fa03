// The API key never leaves the host in any message (AGENT.md §1). A server may echo it whole, cut
// (the key less its last character) or changed in case: any run of 8 or more characters that
// appears in the key, compared without case, is replaced. Runs are found by the key's 8-character
// pieces: a text is scanned once, whatever the key's length.

/** Shorter runs are too likely to be ordinary text, and too short to be of use to anyone. */
export const KEY_RUN_MIN = 8;
const REPLACEMENT = '[key]';

export type Redactor = (text: string) => string;

const unchanged: Redactor = (text) => text;

export function keyRedactor(key: string | undefined): Redactor {
  if (key === undefined || key.length < KEY_RUN_MIN) return unchanged;
  const lowerKey = asciiLower(key);
  const pieces = new Set<string>();
  for (let i = 0; i + KEY_RUN_MIN <= lowerKey.length; i++) pieces.add(lowerKey.slice(i, i + KEY_RUN_MIN));
  return (text) => {
    if (text.length < KEY_RUN_MIN) return text;
    const lower = asciiLower(text);
    // Marks every character covered by a piece of the key; each marked run becomes one [key].
    const covered = new Uint8Array(text.length);
    let any = false;
    for (let i = 0; i + KEY_RUN_MIN <= lower.length; i++) {
      if (!pieces.has(lower.slice(i, i + KEY_RUN_MIN))) continue;
      covered.fill(1, i, i + KEY_RUN_MIN);
      any = true;
    }
    if (!any) return text;
    let out = '';
    for (let i = 0; i < text.length; i++) {
      if (covered[i] === 0) out += text[i];
      else if (i === 0 || covered[i - 1] === 0) out += REPLACEMENT;
    }
    return out;
  };
}

/** Lower case for ASCII letters only, so that every index of the text stays the same. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

/** Several secrets (a guest's `pass_env` values, AGENT.md §6), each replaced as `keyRedactor` replaces one. */
export function secretsRedactor(secrets: readonly string[]): Redactor {
  const each = secrets.map(keyRedactor).filter((redact) => redact !== unchanged);
  if (each.length === 0) return unchanged;
  return (text) => each.reduce((out, redact) => redact(out), text);
}

/** A redactor whose secrets change (a reload of the agents' catalogue brings new keys, AGENT.md §8). */
export class ChangingRedactor {
  private current: Redactor;

  constructor(secrets: readonly string[]) {
    this.current = secretsRedactor(secrets);
  }

  readonly redact: Redactor = (text) => this.current(text);

  set(secrets: readonly string[]): void {
    this.current = secretsRedactor(secrets);
  }
}
