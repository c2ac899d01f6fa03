// A session's life (PROTOCOL.md §2.3) against the real daemon and host, on the test store (SQLite,
// or PostgreSQL in the matrix): a delete with forks on every side of it (their histories unchanged
// through a restart, and the rows freed once nothing reads them), a deleted id never used again,
// 4009 and `interrupt`, `session.deleted` to clients and webhooks, a guest's files removed (and
// again by the next start after a crash between the commit and the files), archive and pin.
import { expect } from 'chai';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { endedTurn, historyOf, hostPid, hostReady, rpcCode, startDaemon, TestClient, type Daemon, type HistoryMessage } from '../helpers/daemon.js';
import { guestArgs, guestScene, logged, loggedWhere } from '../helpers/guests.js';
import { httpRequest } from '../helpers/http.js';
import { LoopbackServer } from '../helpers/loopback-server.js';
import { Harness, stoppedWithin } from '../helpers/processes.js';
import { storeRows, storeWrite } from '../helpers/test-store.js';
import { Waiters } from '../helpers/waiters.js';
import { readToken } from '../../edge/http-token.js';
import { RpcError } from '../../protocol/client-rpc.js';

const HISTORY_AGENT = ['--agent', 'test/fixtures/history-agent.mjs'];


interface Listed {
  session_id: string;
  archived: boolean;
  pinned: boolean;
}

async function refusal(call: Promise<unknown>): Promise<RpcError> {
  try {
    await call;
  } catch (err) {
    return err as RpcError;
  }
  throw new Error('the call was not refused');
}

const history = (client: TestClient, sid: string): Promise<HistoryMessage[]> => historyOf(client, sid, true);
const turn = endedTurn;
const code = rpcCode;
const listed = async (client: TestClient, params: Record<string, unknown> = {}): Promise<Listed[]> => (await client.call<{ sessions: Listed[] }>('session.list', params)).sessions;
const count = async (home: string, sql: string, params: unknown[]): Promise<number> => Number((await storeRows<{ n: number }>(home, sql, params))[0]!.n);

describe("a session's life: delete, archive, pin (real daemon, real host)", function () {
  this.timeout(90_000);
  const h = new Harness();
  const servers: LoopbackServer[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.close();
    await h.cleanup();
  });

  async function restart(daemon: Daemon, args: readonly string[]): Promise<{ daemon: Daemon; client: TestClient }> {
    daemon.process.child.kill('SIGTERM');
    await daemon.process.waitExit(20_000);
    const again = await startDaemon(h, args, {}, daemon.home);
    return { daemon: again, client: await TestClient.connect(again) };
  }

  it("deleting a source leaves its forks (and a fork's fork, and a fork of a path a rewind left) unchanged through a restart; the rows go once nothing reads them; the id is never used again", async () => {
    const hooks: { type: string; data: Record<string, unknown> }[] = [];
    const arrivals = new Waiters<void>();
    const hooksArrived = (match: () => boolean) => (match() ? Promise.resolve() : arrivals.wait(match, 20_000, () => `webhooks so far: ${hooks.map((e) => e.type).join(', ')}`));
    const receiver = await LoopbackServer.start((_req, body, res) => {
      hooks.push(JSON.parse(body.toString()) as (typeof hooks)[number]);
      res.writeHead(204).end();
      arrivals.offer(undefined, 'all');
    });
    servers.push(receiver);
    const args = [...HISTORY_AGENT, '--webhook', `${receiver.origin}/hook`];
    let daemon = await startDaemon(h, args);
    let client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'a' });
    const turns = [];
    for (const text of ['one', 'two', 'three']) turns.push(await turn(client, 'a', text));
    await client.call('session.fork', { session_id: 'a', at_turn_id: turns[1], new_session_id: 'f' });
    await turn(client, 'f', 'in f');
    await client.call('session.fork', { session_id: 'f', new_session_id: 'ff' });
    await turn(client, 'ff', 'in ff');
    // A rewind of the source into what f shares: f now reads that part from the source's branch.
    await client.call('session.rewind', { session_id: 'a', to_turn_id: turns[0] });
    await turn(client, 'a', 'after the rewind');
    await client.call('session.fork', { session_id: 'a', new_session_id: 'g' });
    const kept = { f: await history(client, 'f'), ff: await history(client, 'ff'), g: await history(client, 'g') };
    expect(kept.ff.map((m) => m.content).slice(0, 3)).to.deep.equal(['one', 'seen 0; last: none', 'two']);
    const spent = await count(daemon.home, 'SELECT count(*) AS n FROM usage_daily WHERE sid = ?', ['a']);
    expect(spent).to.be.greaterThan(0);

    const watcher = await TestClient.connect(daemon);
    await watcher.call('session.resume', { session_id: 'a' });
    expect(await client.call('session.delete', { session_id: 'a' })).to.deep.equal({ session_id: 'a', deleted: true });
    const told = await watcher.nextEvent('session.deleted', 'a');
    expect(told.payload).to.deep.include({ session_id: 'a' });
    watcher.close();

    // The host is killed -9 right after the delete was acknowledged: it stays deleted, the forks stay whole.
    process.kill(await hostPid(client), 'SIGKILL');
    await hostReady(daemon, 2);
    for (const [sid, messages] of Object.entries(kept)) expect(await history(client, sid), sid).to.deep.equal(messages);
    expect(await code(client.call('session.history', { session_id: 'a' }))).to.equal(4004);
    expect((await listed(client, { archived: true })).map((s) => s.session_id).sort()).to.deep.equal(['f', 'ff', 'g']);
    const reused = await refusal(client.call('session.create', { session_id: 'a' }));
    expect([reused.code, reused.message]).to.deep.equal([-32602, 'invalid params: session a was deleted: its id is not used again']);
    expect(await code(client.call('session.fork', { session_id: 'f', new_session_id: 'a' }))).to.equal(-32602);
    expect(await code(client.call('session.fork', { session_id: 'a' }))).to.equal(4004);
    expect(await code(client.call('prompt.submit', { session_id: 'a', text: 'back?' }))).to.not.equal(0);
    expect(await count(daemon.home, 'SELECT count(*) AS n FROM usage_daily WHERE sid = ?', ['a']), 'what was spent stays spent').to.equal(spent);
    const audit = readFileSync(join(daemon.home, 'logs', 'audit.log'), 'utf8').split('\n').filter((line) => line.includes('"action":"delete"'));
    expect(audit.map((line) => (JSON.parse(line) as { session_id: string }).session_id), 'the audit log keeps the delete').to.deep.equal(['a']);

    ({ daemon, client } = await restart(daemon, args));
    for (const [sid, messages] of Object.entries(kept)) expect(await history(client, sid), `${sid} after a restart`).to.deep.equal(messages);
    await turn(client, 'ff', 'ff goes on');
    expect((await history(client, 'ff')).slice(0, kept.ff.length)).to.deep.equal(kept.ff);

    // Deleting the forks frees what they alone kept of the source.
    for (const sid of ['f', 'g']) await client.call('session.delete', { session_id: sid });
    expect((await history(client, 'ff')).slice(0, kept.ff.length), 'ff still reads through f and a').to.deep.equal(kept.ff);
    await client.call('session.delete', { session_id: 'ff' });
    const gone = ['a', 'f', 'ff', 'g'];
    const like = "sid = ? OR sid = ? OR sid = ? OR sid = ? OR sid LIKE 'a~%'";
    expect(await count(daemon.home, `SELECT count(*) AS n FROM messages WHERE ${like}`, gone)).to.equal(0);
    expect(await count(daemon.home, `SELECT count(*) AS n FROM sessions WHERE ${like}`, gone)).to.equal(0);
    expect(await count(daemon.home, `SELECT count(*) AS n FROM turns WHERE ${like}`, gone)).to.equal(0);
    expect(await count(daemon.home, 'SELECT count(*) AS n FROM deleted_sessions', [])).to.equal(4);

    await hooksArrived(() => hooks.filter((e) => e.type === 'session.deleted').length === 4);
    const deletedHooks = hooks.filter((e) => e.type === 'session.deleted').map((e) => e.data['session_id']);
    expect(deletedHooks.sort()).to.deep.equal(gone);
    client.close();
  });

  it('deleting a fork frees nothing its source needs; a running turn refuses a delete (4009) unless it interrupts; the CLI asks first', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'b' });
    await turn(client, 'b', 'first');
    await turn(client, 'b', 'second');
    await client.call('session.fork', { session_id: 'b', new_session_id: 'bf' });
    await turn(client, 'bf', 'in the fork');
    const source = await history(client, 'b');
    await client.call('session.delete', { session_id: 'bf' });
    expect(await history(client, 'b')).to.deep.equal(source);
    await turn(client, 'b', 'third');
    expect(await count(daemon.home, 'SELECT count(*) AS n FROM messages WHERE sid = ?', ['bf'])).to.equal(0);

    const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'b', text: '/sleep 30' });
    await client.nextEvent('turn.started', 'b', (e) => e.payload['turn_id'] === turn_id);
    await client.call('prompt.submit', { session_id: 'b', text: 'queued behind it' });
    expect(await code(client.call('session.delete', { session_id: 'b' }))).to.equal(4009);
    const cli = (...args: string[]) => h.runCli([...args, '--home', daemon.home]);
    const busy = await cli('delete', 'b', '--yes');
    expect([busy.code, busy.stderr]).to.deep.equal([1, 'turnhost delete: session busy (--interrupt ends the turn first)\n']);
    const unasked = await cli('delete', 'b');
    expect(unasked.code, 'no terminal, no --yes: refused').to.equal(2);
    expect(unasked.stderr).to.contain('--yes');
    const started = Date.now();
    const deleted = await cli('delete', 'b', '--yes', '--interrupt');
    expect([deleted.code, deleted.stdout]).to.deep.equal([0, 'b: deleted\n']);
    expect(Date.now() - started, 'the sleep was interrupted').to.be.lessThan(20_000);
    await client.nextEvent('session.deleted', 'b');
    expect(client.events.filter((e) => e.session_id === 'b' && e.type === 'turn.started'), 'the queued prompt never ran').to.have.length(4);
    expect((await cli('delete', 'b', '--yes')).code, 'unknown').to.equal(4);
    expect(await count(daemon.home, 'SELECT count(*) AS n FROM queue WHERE sid = ?', ['b'])).to.equal(0);
    client.close();
  });

  it("a guest's home and the workspace turnhost made go with its session (a folder a person named stays); a crash between the commit and the files: the next start removes them", async () => {
    const scene = guestScene(h);
    let daemon = await startDaemon(h, guestArgs(scene), { TURNHOST_STOP_AT: 'session-delete-committed' }, scene.home);
    let client = await TestClient.connect(daemon);
    const named = h.tempDir('turnhost-named-');
    await client.call('session.create', { session_id: 'g' });
    await client.call('session.create', { session_id: 'n', cwd: named });
    for (const sid of ['g', 'n']) await turn(client, sid, 'hello');
    const homeOf = (sid: string) => join(scene.home, 'agent-homes', sid);
    const workspace = join(scene.home, 'workspaces', 'owner', 'g');
    expect([existsSync(homeOf('g')), existsSync(workspace), scene.guests().length]).to.deep.equal([true, true, 2]);

    // The host stops itself just after the delete's commit (TURNHOST_STOP_AT) and is killed there.
    const host = await hostPid(client);
    const deleting = client.call('session.delete', { session_id: 'g' }).then(
      () => 'answered',
      () => 'failed',
    );
    expect(await stoppedWithin(host, 10_000), 'the host stopped after the commit').to.equal(true);
    process.kill(host, 'SIGKILL');
    await deleting;
    await hostReady(daemon, 2);
    await logged(scene.home, /"name":"session-files-removed","sid":"g"/, 15_000);
    expect([existsSync(homeOf('g')), existsSync(workspace)]).to.deep.equal([false, false]);
    expect(await code(client.call('session.history', { session_id: 'g' }))).to.equal(4004);
    expect(await count(scene.home, 'SELECT count(*) AS n FROM deleted_sessions WHERE files_pending = 1', [])).to.equal(0);
    client.close();

    // Without a crash: the live guest ends, its home goes, the named folder stays.
    daemon.process.child.kill('SIGTERM');
    await daemon.process.waitExit(20_000);
    daemon = await startDaemon(h, guestArgs(scene), {}, scene.home);
    client = await TestClient.connect(daemon);
    await turn(client, 'n', 'again');
    const guests = scene.guests();
    expect(guests).to.have.length(1);
    await client.call('session.delete', { session_id: 'n' });
    expect(await scene.gone(guests, 10_000), 'the live guest ended').to.equal(true);
    await logged(scene.home, /"name":"session-files-removed","sid":"n"/, 15_000);
    expect([existsSync(homeOf('n')), existsSync(named)]).to.deep.equal([false, true]);
    client.close();
  });

  it('archive takes a session out of the lists (everything kept) and a prompt brings it back; pin marks it; the owner, an editor or an admin; REST PATCH and DELETE', async () => {
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0']);
    const client = await TestClient.connect(daemon);
    for (const sid of ['k', 'm']) {
      await client.call('session.create', { session_id: sid });
      await turn(client, sid, `hello ${sid}`);
    }
    expect(await client.call('session.archive', { session_id: 'k' })).to.deep.equal({ session_id: 'k', archived: true });
    expect((await listed(client)).map((s) => s.session_id)).to.deep.equal(['m']);
    expect((await listed(client, { archived: true })).find((s) => s.session_id === 'k')).to.deep.include({ archived: true, pinned: false });
    const cli = (...args: string[]) => h.runCli([...args, '--home', daemon.home]);
    expect(JSON.parse((await cli('sessions', '--json')).stdout).map((s: { session_id: string }) => s.session_id)).to.deep.equal(['m']);
    expect(JSON.parse((await cli('sessions', '--json', '--archived')).stdout)).to.have.length(2);
    expect((await history(client, 'k')).map((m) => m.content)).to.deep.equal(['hello k', 'hello k']);
    await turn(client, 'k', 'back again');
    expect((await listed(client)).find((s) => s.session_id === 'k'), 'a prompt unarchives').to.deep.include({ archived: false });

    expect((await cli('pin', 'k')).stdout).to.equal('k: pinned\n');
    expect((await listed(client)).find((s) => s.session_id === 'k')).to.deep.include({ pinned: true });
    expect((await cli('archive', 'nobody')).code).to.equal(4);

    const url = (await client.call<{ http: { url: string } }>('host.status')).http.url;
    const port = Number(new URL(url).port);
    const auth = { authorization: `Bearer ${readToken(daemon.home)}`, 'content-type': 'application/json' };
    const patched = await httpRequest(port, { method: 'PATCH', path: '/v1/sessions/k', headers: auth, body: { archived: true, pinned: false } });
    expect([patched.status, patched.json()]).to.deep.equal([200, { session_id: 'k', archived: true, pinned: false }]);
    const listedOverRest = async (query: string) => ((await httpRequest(port, { path: `/v1/sessions${query}`, headers: auth })).json()['sessions'] as Listed[]).map((s) => s.session_id).sort();
    expect([await listedOverRest(''), await listedOverRest('?archived=true')]).to.deep.equal([['m'], ['k', 'm']]);
    const bad = await httpRequest(port, { method: 'PATCH', path: '/v1/sessions/k', headers: auth, body: { archived: 'yes', pinned: true } });
    expect(bad.status).to.equal(400);
    expect((await listed(client, { archived: true })).find((s) => s.session_id === 'k'), 'a bad body changes nothing').to.deep.include({ archived: true, pinned: false });

    const alice = (await cli('user', 'add', 'alice')).stdout.trim();
    const bob = (await cli('user', 'add', 'bob')).stdout.trim();
    const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
    expect((await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: as(alice), body: { session_id: 'al' } })).status).to.equal(201);
    expect((await httpRequest(port, { method: 'PUT', path: '/v1/sessions/al/shares/bob', headers: as(alice), body: { role: 'editor' } })).status).to.equal(200);
    expect((await httpRequest(port, { method: 'PATCH', path: '/v1/sessions/al', headers: as(bob), body: { archived: true } })).status, 'an editor archives').to.equal(200);
    expect((await httpRequest(port, { method: 'DELETE', path: '/v1/sessions/al', headers: as(bob) })).status, 'an editor does not delete').to.equal(403);
    const carol = (await cli('user', 'add', 'carol')).stdout.trim();
    expect((await httpRequest(port, { method: 'PUT', path: '/v1/sessions/al/shares/carol', headers: as(alice), body: { role: 'viewer' } })).status).to.equal(200);
    const viewed = await httpRequest(port, { path: '/v1/sessions/al/export', headers: as(carol) });
    expect(viewed.status, 'a viewer exports').to.equal(200);
    expect(JSON.parse(viewed.text.split('\n')[0]!)).to.deep.include({ format: 'turnhost-session/1' });
    expect((await httpRequest(port, { method: 'PATCH', path: '/v1/sessions/al', headers: as(carol), body: { pinned: true } })).status, 'a viewer does not pin').to.equal(403);
    expect((await httpRequest(port, { method: 'DELETE', path: '/v1/sessions/al', headers: as(carol) })).status, 'a viewer does not delete').to.equal(403);
    expect((await httpRequest(port, { path: '/v1/sessions/k/export', headers: as(carol) })).status, "nobody's share: not there").to.equal(404);
    const removed = await httpRequest(port, { method: 'DELETE', path: '/v1/sessions/al', headers: as(alice) });
    expect([removed.status, removed.json()]).to.deep.equal([200, { session_id: 'al', deleted: true }]);
    expect((await httpRequest(port, { method: 'DELETE', path: '/v1/sessions/al', headers: as(alice) })).status).to.equal(404);
    client.close();
  });

  it('retention: sessions idle longer than --retention-days ($TURNHOST_RETENTION_DAYS) are deleted, pinned and running ones kept; --archive-after-days archives instead; logged and counted in /metrics', async () => {
    // 0.00003 days: 2.6 s idle; a sweep every second.
    const daemon = await startDaemon(h, ['--retention-sweep-secs', '1', '--listen', '127.0.0.1:0'], { TURNHOST_RETENTION_DAYS: '0.00003' });
    const client = await TestClient.connect(daemon);
    for (const sid of ['old1', 'old2', 'pinned', 'busy']) {
      await client.call('session.create', { session_id: sid });
      await turn(client, sid, `hello ${sid}`);
    }
    await client.call('session.pin', { session_id: 'pinned' });
    const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'busy', text: '/sleep 60' });
    await client.nextEvent('turn.started', 'busy', (e) => e.payload['turn_id'] === turn_id);
    for (const sid of ['old1', 'old2']) await client.nextEvent('session.deleted', sid);
    const deletedBySweeps = (lines: string[]) =>
      lines.filter((l) => l.includes('"name":"retention-sweep"') && l.includes('"deleted"')).reduce((sum, l) => sum + Number((JSON.parse(l) as { deleted: number }).deleted), 0);
    await loggedWhere(daemon.home, (lines) => deletedBySweeps(lines) === 2, 'two sessions deleted by sweeps', 20_000);
    await loggedWhere(daemon.home, (lines) => lines.some((l) => l.includes('"name":"retention-skip"') && l.includes('"sid":"busy"')), 'the busy session skipped', 20_000);
    expect((await listed(client, { archived: true })).map((s) => s.session_id).sort()).to.deep.equal(['busy', 'pinned']);
    const audit = readFileSync(join(daemon.home, 'logs', 'audit.log'), 'utf8');
    expect(audit).to.match(/"user":"retention","action":"delete","session_id":"old1"/);
    const url = (await client.call<{ http: { url: string } }>('host.status')).http.url;
    const metrics = await httpRequest(Number(new URL(url).port), { path: '/metrics', headers: { authorization: `Bearer ${readToken(daemon.home)}` } });
    expect(metrics.text).to.contain('turnhost_retention_sessions_total{action="deleted"} 2');
    await client.call('session.interrupt', { session_id: 'busy' });
    client.close();

    const archiving = await startDaemon(h, ['--archive-after-days', '0.00003', '--retention-sweep-secs', '1']);
    const other = await TestClient.connect(archiving);
    await other.call('session.create', { session_id: 'quiet' });
    await turn(other, 'quiet', 'hello');
    await other.nextEvent('session.archived', 'quiet');
    expect((await listed(other)).map((s) => s.session_id)).to.deep.equal([]);
    expect((await listed(other, { archived: true })).map((s) => [s.session_id, s.archived])).to.deep.equal([['quiet', true]]);
    other.close();
  });

  it('export and import: the file holds every turn and message, superseded too, with usage; imported elsewhere its history --all --json is the same; a bad line N or a newer format is refused whole; RPC, REST and CLI', async () => {
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', ...HISTORY_AGENT]);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'x' });
    const turns = [];
    for (const text of ['one', 'two', 'three']) turns.push(await turn(client, 'x', text));
    await client.call('session.rewind', { session_id: 'x', to_turn_id: turns[0] });
    await turn(client, 'x', 'after the rewind');
    await client.call('session.fork', { session_id: 'x', new_session_id: 'xf' });
    const inFork = await turn(client, 'xf', 'in the fork');
    await turn(client, 'xf', 'fork two');
    await client.call('session.rewind', { session_id: 'xf', to_turn_id: inFork });
    await turn(client, 'xf', 'fork three');
    // What a model agent reports (the history agent reports nothing): the file carries it.
    await storeWrite(daemon.home, "UPDATE turns SET model = 'm-1', prompt_tokens = 11, completion_tokens = 7, cached_tokens = 3, model_calls = 1 WHERE turn_id = ?", [inFork]);
    const cli = (home: string, ...args: string[]) => h.runCli([...args, '--home', home]);
    const folder = h.tempDir('turnhost-export-');
    const file = join(folder, 'xf.jsonl');
    const exported = await cli(daemon.home, 'export', 'xf', '--out', file);
    expect(exported.code, exported.stderr).to.equal(0);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>);
    expect(lines[0]).to.deep.include({ format: 'turnhost-session/1' });
    expect(lines[0]!['session']).to.deep.include({ session_id: 'xf', forked_from: { session_id: 'x', turn_id: (await history(client, 'x')).at(-1)!.turn_id } });
    // x's line up to the fork (two turns), then the fork's: one turn, one superseded, one after.
    expect(lines.filter((line) => 'message' in line)).to.have.length(10);
    expect(lines.filter((line) => 'message' in line && line['message']!['branch'] === 1)).to.have.length(2);
    expect(lines.filter((line) => 'turn' in line)).to.have.length(5);

    // Another home: the same history, turn ids and all.
    const other = h.tempDir();
    const imported = await cli(other, 'import', file, '--as', 'copy');
    expect([imported.code, imported.stdout], imported.stderr).to.deep.equal([0, 'copy: imported 10 message(s), 5 turn(s)\n']);
    const [source, copy] = await Promise.all([cli(daemon.home, 'history', 'xf', '--all', '--json'), cli(other, 'history', 'copy', '--all', '--json')]);
    expect(copy.stdout).to.equal(source.stdout);
    expect(JSON.parse(copy.stdout).find((m: { turn_id: string; role: string }) => m.turn_id === inFork && m.role === 'assistant')).to.deep.include({
      model: 'm-1',
      usage: { prompt_tokens: 11, completion_tokens: 7, cached_tokens: 3, calls: 1 },
    });
    expect(JSON.parse((await cli(other, 'sessions', '--json')).stdout).map((s: { session_id: string }) => s.session_id)).to.deep.equal(['copy']);

    // A broken line: refused naming it, nothing written.
    const broken = join(folder, 'broken.jsonl');
    const text = readFileSync(file, 'utf8').split('\n');
    text[5] = '{"message": {"seq": "five"}}';
    writeFileSync(broken, text.join('\n'));
    const refused = await cli(other, 'import', broken, '--as', 'nope');
    expect([refused.code, refused.stderr]).to.deep.equal([1, `turnhost import: ${broken}: line 6: seq must be a whole number, 0 or more; nothing imported\n`]);
    const newer = join(folder, 'newer.jsonl');
    writeFileSync(newer, readFileSync(file, 'utf8').replace('turnhost-session/1', 'turnhost-session/3'));
    expect((await cli(other, 'import', newer)).stderr).to.contain('the file is turnhost-session/3, newer than this turnhost reads (turnhost-session/2)');
    expect((await cli(other, 'import', file, '--as', 'copy')).stderr).to.contain('the session id copy is taken');
    expect(JSON.parse((await cli(other, 'sessions', '--json')).stdout)).to.have.length(1);

    // Through the daemon: RPC and REST, into the same store (its turn ids are taken: new ones).
    const rpc = await client.call<{ session_id: string; format: string; lines: unknown[] }>('session.export', { session_id: 'xf' });
    expect(rpc.lines).to.have.length(lines.length);
    const data = readFileSync(file, 'utf8');
    const made = await client.call<{ session_id: string; turn_ids: string; messages: number }>('session.import', { data, session_id: 'again' });
    expect(made).to.deep.include({ session_id: 'again', turn_ids: 'renamed', messages: 10 });
    const strip = (messages: HistoryMessage[]) => messages.map(({ turn_id: _id, ...rest }) => rest);
    expect(strip(await history(client, 'again'))).to.deep.equal(strip(await history(client, 'xf')));
    const bad = await refusal(client.call('session.import', { data: text.join('\n') }));
    expect([bad.code, bad.message]).to.deep.equal([-32602, 'invalid params: line 6: seq must be a whole number, 0 or more']);
    const url = (await client.call<{ http: { url: string } }>('host.status')).http.url;
    const rest = await httpRequest(Number(new URL(url).port), { path: '/v1/sessions/xf/export', headers: { authorization: `Bearer ${readToken(daemon.home)}` } });
    expect([rest.status, rest.headers['content-type']]).to.deep.equal([200, 'application/x-ndjson; charset=utf-8']);
    expect(rest.text.trimEnd().split('\n').slice(1)).to.deep.equal(readFileSync(file, 'utf8').trimEnd().split('\n').slice(1));
    client.close();
  });
});
