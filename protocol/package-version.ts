// The package's version, as turnhost names itself to peers (an ACP guest's `clientInfo`, an
// editor's `agentInfo`) and in `--version`.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let known: string | null = null;

/** The package's version, from the package.json above this file (dist/protocol or protocol), read once. */
export function packageVersion(): string {
  known ??= readVersion();
  return known;
}

function readVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 3; up++, dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version ?? 'unknown');
  }
  return 'unknown';
}
