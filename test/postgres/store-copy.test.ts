// Moving a whole store (PROTOCOL.md §2.3): `turnhost store copy` from a real daemon's SQLite home
// to a real PostgreSQL and back, refused while a daemon runs; everything a person made comes
// through (histories with their superseded paths, forks, people, shares, budgets, schedules, the
// ledger, a deleted session's tombstone, a file uploaded to a session); a copy killed -9 in the middle is finished by --resume
// without doubling a row; the progress is plain lines when stderr is not a terminal.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { pngImage } from '../helpers/content-files.js';
import { endedTurn, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { Harness, HostProcess, stoppedWithin } from '../helpers/processes.js';

const HISTORY_AGENT = ['--agent', 'test/fixtures/history-agent.mjs'];
const KEPT_PNG = pngImage(8, 8, 21);

describe('turnhost store copy (a real SQLite home, a real PostgreSQL)', function () {
  this.timeout(120_000);
  const h = new Harness();
  const server = postgresForSuite();
  afterEach(() => h.cleanup());

  /** A home with something of everything, its daemon stopped. */
  async function madeHome(): Promise<{ home: string; sessions: string[] }> {
    const daemon: Daemon = await startDaemon(h, HISTORY_AGENT);
    const client = await TestClient.connect(daemon);
    const cli = (...args: string[]) => h.runCli([...args, '--home', daemon.home]);
    await client.call('session.create', { session_id: 'a' });
    const turns = [];
    for (const text of ['one', 'two', 'three']) turns.push(await endedTurn(client, 'a', text));
    await client.call('session.fork', { session_id: 'a', at_turn_id: turns[1], new_session_id: 'f' });
    await endedTurn(client, 'f', 'in the fork');
    await client.call('session.rewind', { session_id: 'a', to_turn_id: turns[0] });
    await endedTurn(client, 'a', 'after the rewind');
    await client.call('session.create', { session_id: 'gone' });
    await endedTurn(client, 'gone', 'soon deleted');
    await client.call('session.delete', { session_id: 'gone' });
    await client.call('session.pin', { session_id: 'f' });
    // A file uploaded to f (PROTOCOL.md §2.4): its bytes are copied once, and f still names it.
    await client.call('blob.put', { session_id: 'f', mimeType: 'image/png', name: 'kept.png', data: KEPT_PNG.toString('base64') });
    expect((await cli('user', 'add', 'alice')).code).to.equal(0);
    expect((await cli('user', 'budget', 'alice', '--tokens-per-day', '5000')).code).to.equal(0);
    await client.call('session.share', { session_id: 'a', user: 'alice', role: 'viewer' });
    expect((await cli('schedule', 'add', 'a', 'daily hello', '--cron', '0 9 * * *')).code).to.equal(0);
    client.close();
    daemon.process.child.kill('SIGTERM');
    await daemon.process.waitExit(20_000);
    return { home: daemon.home, sessions: ['a', 'f'] };
  }

  /** What a person sees of a store, through the CLI: each session's whole history, the list, people, usage. */
  async function seen(home: string, store: string, sessions: readonly string[]): Promise<Record<string, string>> {
    const cli = async (...args: string[]) => {
      const result = await h.runCli([...args, '--home', home, '--store', store]);
      expect(result.code, result.stderr).to.equal(0);
      return result.stdout;
    };
    const shown: Record<string, string> = {
      sessions: await cli('sessions', '--json', '--archived'),
      users: await cli('user', 'list', '--json'),
      budget: await cli('user', 'budget', 'alice'),
      usage: await cli('usage', '--by', 'session', '--json'),
    };
    for (const sid of sessions) shown[sid] = await cli('history', sid, '--all', '--json');
    return shown;
  }

  it('SQLite to PostgreSQL and back: refused while the daemon runs, then everything comes through, checked; a second copy into a full store is refused', async () => {
    const { home, sessions } = await madeHome();
    const url = await server().database();
    const running = await startDaemon(h, HISTORY_AGENT, {}, home);
    const refused = await h.runCli(['store', 'copy', '--to', url, '--home', home]);
    expect([refused.code, refused.stderr]).to.deep.equal([1, `turnhost store copy: a daemon is running for ${home}: stop it first (turnhost stop)\n`]);
    running.process.child.kill('SIGTERM');
    await running.process.waitExit(20_000);

    const copied = await h.runCli(['store', 'copy', '--to', url, '--home', home], {}, 60_000);
    expect(copied.code, copied.stderr).to.equal(0);
    // a, f, and the path a's rewind left (a branch of a).
    expect(copied.stdout).to.match(/^copied \d+ row\(s\) of 21 tables \(10 message\(s\) in 3 histories: sessions and their branches\) from sqlite .* to postgres.* in [\d.]+ s; counts and each history's digest checked\n$/);
    expect(copied.stderr, 'plain progress lines when stderr is not a terminal').to.match(/^store copy: \d+ of \d+ rows \(\d+%\), at \w+\n/);
    expect(copied.stderr).to.contain('(100%)');
    expect(await seen(home, url, sessions)).to.deep.equal(await seen(home, 'sqlite', sessions));

    const again = await h.runCli(['store', 'copy', '--to', url, '--home', home]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain('already holds sessions or people: give --resume');

    // On PostgreSQL the daemon runs on what was copied: the deleted id stays refused, the fork goes on.
    const onPostgres = await startDaemon(h, [...HISTORY_AGENT, '--store', url], {}, h.tempDir());
    const client = await TestClient.connect(onPostgres);
    expect(await client.call('session.create', { session_id: 'gone' }).catch((err: { code: number }) => err.code)).to.equal(-32602);
    // Every session served with its history, as the SQLite home had it.
    for (const sid of sessions) {
      const served = (await client.call<{ messages: { seq: number; role: string; content: string; turn_id: string | null }[] }>('session.history', { session_id: sid, all: true })).messages;
      const stored = JSON.parse((await h.runCli(['history', sid, '--all', '--json', '--home', home, '--store', 'sqlite'])).stdout) as { seq: number; role: string; content: string; turn_id: string | null }[];
      expect(served.map(({ seq, role, content, turn_id }) => ({ seq, role, content, turn_id })), sid).to.deep.equal(stored.map(({ seq, role, content, turn_id }) => ({ seq, role, content, turn_id })));
    }
    const blob = await client.call<{ data: string }>('blob.get', { session_id: 'f', blob: `sha256:${createHash('sha256').update(KEPT_PNG).digest('hex')}` });
    expect(Buffer.from(blob.data, 'base64').equals(KEPT_PNG)).to.equal(true);
    await endedTurn(client, 'f', 'on postgres');
    const busy = await h.runCli(['store', 'copy', '--from', url, '--to', 'sqlite', '--home', h.tempDir()]);
    expect([busy.code, busy.stderr]).to.deep.equal([1, `turnhost store copy: a turnhost host or node is using ${url.replace(/:[^:@/]+@/, ':***@')}: stop every daemon on it first\n`]);
    client.close();
    onPostgres.process.child.kill('SIGTERM');
    await onPostgres.process.waitExit(20_000);

    const back = h.tempDir();
    const returned = await h.runCli(['store', 'copy', '--from', url, '--to', 'sqlite', '--home', back], {}, 60_000);
    expect(returned.code, returned.stderr).to.equal(0);
    expect(await seen(back, 'sqlite', sessions)).to.deep.equal(await seen(home, url, sessions));
  });

  it('a copy killed -9 in the middle is finished by --resume, without doubling anything', async () => {
    const { home, sessions } = await madeHome();
    const url = await server().database();
    // The copy stops itself once a batch of messages is committed, the rest of the store not yet copied, and is killed there.
    const stopping = new HostProcess(h.spawnCli(['store', 'copy', '--to', url, '--home', home], { TURNHOST_STOP_AT: 'store-copy-messages-written' }));
    expect(await stoppedWithin(stopping.pid, 30_000), 'the copy stopped in the middle').to.equal(true);
    process.kill(stopping.pid, 'SIGKILL');
    await stopping.waitExit(10_000);

    const resumed = await h.runCli(['store', 'copy', '--to', url, '--resume', '--home', home], {}, 60_000);
    expect(resumed.code, resumed.stderr).to.equal(0);
    expect(await seen(home, url, sessions)).to.deep.equal(await seen(home, 'sqlite', sessions));
    const [rows] = await server().query<{ messages: number; turns: number }>(url, 'SELECT (SELECT count(*) FROM messages)::int AS messages, (SELECT count(*) FROM turns)::int AS turns');
    // The copy's own check compared every table's count with the source's: nothing is there twice.
    expect(resumed.stdout).to.contain("counts and each history's digest checked");
    const twice = await h.runCli(['store', 'copy', '--to', url, '--resume', '--home', home], {}, 60_000);
    expect(twice.code, 'a resume of a finished copy only checks it').to.equal(0);
    const [after] = await server().query<{ messages: number; turns: number }>(url, 'SELECT (SELECT count(*) FROM messages)::int AS messages, (SELECT count(*) FROM turns)::int AS turns');
    expect(after).to.deep.equal(rows);
  });
});
