// The build id the host says in hello and the supervisor checks: a hash of the code this
// process runs from, so two processes agree exactly when they run the same build.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CODE_DIRS = ['bin', 'actors', 'protocol', 'persistence', 'agents', 'client'];

let cached: string | undefined;

export function buildSha(): string {
  if (cached !== undefined) return cached;
  const root = dirname(dirname(fileURLToPath(import.meta.url)));
  const hash = createHash('sha256');
  for (const dir of CODE_DIRS) {
    for (const file of codeFiles(join(root, dir))) {
      hash.update(file.slice(root.length));
      hash.update(readFileSync(file));
    }
  }
  cached = hash.digest('hex').slice(0, 16);
  return cached;
}

function codeFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...codeFiles(path));
    else if (/\.(js|ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

/** The host entry: the supervisor spawns it, and the PID-reuse guard looks for it in a command line. */
export function cliEntry(): string {
  return join(dirname(fileURLToPath(import.meta.url)), `turnhost${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`);
}
