// The build: dist/ made anew from the sources (tsc for the code, the page type-checked and bundled),
// the build id stamped (bin/build-info.ts), then a digest of the sources it was made from written
// into it. With --if-stale it builds only
// when that digest differs from the sources' now: `npm ci` builds once (prepare), and `npm test`,
// the other test suites and the benchmarks after it use that build instead of making it again (about
// 20 s each; .ci/run ran seven). The digest is of the files' contents, not their times, so a checkout
// that changes nothing rebuilds nothing, and any change rebuilds.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['bin', 'actors', 'protocol', 'persistence', 'agents', 'client', 'edge', 'web'];
const SOURCE_FILES = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'];
const DIGEST_FILE = join(root, 'dist', '.source-digest');

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)]));
}

function sourceDigest() {
  const hash = createHash('sha256');
  for (const file of [...SOURCE_FILES.map((name) => join(root, name)), ...SOURCE_DIRS.flatMap((dir) => filesUnder(join(root, dir)))]) {
    hash.update(`${relative(root, file)}\0`);
    hash.update(readFileSync(file));
  }
  return hash.digest('hex');
}

function builtDigest() {
  try {
    return readFileSync(DIGEST_FILE, 'utf8').trim();
  } catch {
    return null;
  }
}

const digest = sourceDigest();
if (process.argv.includes('--if-stale') && builtDigest() === digest) process.exit(0);

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const run = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
rmSync(join(root, 'dist'), { recursive: true, force: true });
run([tsc, '-p', 'tsconfig.build.json']);
run([tsc, '-p', 'web/tsconfig.json']);
run(['web/build.mjs']);
// The build id the host says in hello, stamped with each code file's size and time (build-info.ts).
(await import(pathToFileURL(join(root, 'dist', 'bin', 'build-info.js')).href)).stampBuild();
// Last: a build cut short leaves no digest, and the next one builds again.
writeFileSync(DIGEST_FILE, `${digest}\n`);
