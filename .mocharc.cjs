// `npm test`: the unit and integration tests, test files side by side in worker processes
// (mocha --parallel). A 2-core machine is busy with 3 workers: most tests wait on processes they
// started, and a fourth made no run shorter (docs/BENCHMARKS.md, "The suites"). The files that take
// longest go first, so that no long file starts last and runs alone at the end.
const { readdirSync } = require('node:fs');

// Measured in a parallel run (docs/BENCHMARKS.md); each of the rest takes under 12 s.
const SLOWEST_FIRST = [
  'guest-agents',
  'web-page',
  'daemon-lifecycle',
  'session-life',
  'model-tools',
  'client-library',
  'prompt-queue',
  'cli',
  'sandbox-escapes',
  'security-audit',
  'branches',
  'agent-catalogue',
  'model-failures',
  'http-edge',
  'shutdown-triggers',
  'traces',
  'model-daemon',
  'daemon-failures',
  'sandbox-places',
  'people',
  'host-queue',
  'readme-commands',
  'bounded-input',
  'usage-budgets',
  'edge-bounds',
  'server-requests',
  'slow-consumer',
].map((name) => `test/integration/${name}.test.ts`).concat(['test/unit/event-rings.test.ts', 'test/unit/shutdown-seed.test.ts', 'test/unit/store.test.ts']);

const testFiles = (dir) =>
  readdirSync(dir)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => `${dir}/${name}`);

const all = [...testFiles('test/integration'), ...testFiles('test/unit')];

// Mocha adds the files named on its command line to the spec: `npx mocha FILE…` runs those alone.
const named = process.argv.slice(2).some((arg) => arg.endsWith('.test.ts'));

module.exports = {
  spec: named ? [] : [...SLOWEST_FIRST, ...all.filter((file) => !SLOWEST_FIRST.includes(file))],
  import: 'tsx',
  parallel: true,
  jobs: 3,
  'fail-zero': true,
  timeout: 20000,
  reporter: './test/summary-reporter.cjs',
};
