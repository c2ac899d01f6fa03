// The build id the host says in hello and the supervisor checks: a hash of the code this
// process runs from, so two processes agree exactly when they run the same build.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CODE_DIRS = ['bin', 'actors', 'protocol', 'persistence', 'agents', 'client'];

/**
 * The build (scripts/build.mjs) writes the id here with each code file's size and time: a process
 * whose files all still have them takes the id without reading them (listing and hashing the code
 * cost a host 30 ms of its 350 ms start, and every daemon as much; checking the stamp, 4 ms). A file
 * gone or touched since, and the code is hashed again, so a copy with one file changed is another
 * build, as before. A file added with nothing changed to import it changes nothing that runs.
 */
const STAMP_FILE = 'build-sha.json';

interface Stamp {
  sha: string;
  /** Each code file's path under the root, with its size and modification time (ms). */
  files: Record<string, [number, number]>;
}

let cached: string | undefined;

export function buildSha(): string {
  if (cached !== undefined) return cached;
  const root = codeRoot();
  cached = stampedSha(root) ?? hashOf(root, codeFiles(root));
  return cached;
}

/** Writes the stamp of the code as built (the build's last step). */
export function stampBuild(): void {
  const root = codeRoot();
  const files = codeFiles(root);
  const stamp: Stamp = { sha: hashOf(root, files), files: Object.fromEntries(files.map((file) => [file.slice(root.length), sizeAndTime(file)])) };
  writeFileSync(join(root, STAMP_FILE), `${JSON.stringify(stamp)}\n`);
}

function codeRoot(): string {
  return dirname(dirname(fileURLToPath(import.meta.url)));
}

function codeFiles(root: string): string[] {
  return CODE_DIRS.flatMap((dir) => filesUnder(join(root, dir)));
}

function sizeAndTime(file: string): [number, number] {
  const stat = statSync(file);
  return [stat.size, stat.mtimeMs];
}

/** The stamp's id, when every code file it names is as the build left it; undefined otherwise. */
function stampedSha(root: string): string | undefined {
  try {
    const stamp = JSON.parse(readFileSync(join(root, STAMP_FILE), 'utf8')) as Stamp;
    for (const [file, [size, time]] of Object.entries(stamp.files)) {
      const [sizeNow, timeNow] = sizeAndTime(join(root, file));
      if (sizeNow !== size || timeNow !== time) return undefined;
    }
    return stamp.sha;
  } catch {
    return undefined; // no stamp, or a file it names is gone
  }
}

function hashOf(root: string, files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(file.slice(root.length));
    hash.update(readFileSync(file));
  }
  return hash.digest('hex').slice(0, 16);
}

function filesUnder(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const files: string[] = [];
  // Byte order, not localeCompare: its first call sets up ICU's collator, 15 ms of a start.
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(path));
    else if (/\.(js|ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

/** The host entry: the supervisor spawns it, and the PID-reuse guard looks for it in a command line. */
export function cliEntry(): string {
  return join(dirname(fileURLToPath(import.meta.url)), `turnhost${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`);
}
