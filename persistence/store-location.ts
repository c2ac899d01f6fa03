// Where a home's sessions live (PROTOCOL.md §6.1): `--store`, else $TURNHOST_STORE, else SQLite
// in the home. A location names a store; open-store.ts opens it. Both stores take this type, so
// it imports nothing.

export type StoreLocation = { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string; shown: string };

/** The variable read when `--store` is not given. */
export const STORE_ENV = 'TURNHOST_STORE';

/** The store named by `--store` (or the environment), or why the name is not one. */
export function storeLocation(option: string | undefined, databaseFile: string, env: NodeJS.ProcessEnv = process.env): StoreLocation {
  const value = option ?? (env[STORE_ENV] || undefined) ?? 'sqlite';
  if (value === 'sqlite') return { kind: 'sqlite', file: databaseFile };
  if (/^postgres(ql)?:\/\//.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new Error(`--store: not a URL: ${hidePassword(value)}`);
    }
    return { kind: 'postgres', url: value, shown: hidePassword(url.toString()) };
  }
  throw new Error(`--store: expected "sqlite" or a postgres:// URL, got ${JSON.stringify(hidePassword(value))}`);
}

/** The store as it may be shown: `sqlite <file>`, or the URL without its password. */
export function describeLocation(location: StoreLocation): string {
  return location.kind === 'sqlite' ? `sqlite ${location.file}` : location.shown;
}

/** The URL as it may be shown: its password, wherever it is, as `***`. */
export function hidePassword(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)\S*@/gi, '$1***@').replace(/([?&]password=)[^&\s]*/g, '$1***');
}
