// Schedules (PROTOCOL.md §8.1) against the real daemon and host: each field checked, the REST and
// CLI doors, a fire within a second of its plan whoever is attached, each planned fire run at most
// once while the host is killed -9 again and again (counted fire by fire against the history), and
// a daemon stopped across planned fires (catch_up "one" fires once at start, "none" skips them).
import { expect } from 'chai';
import { startDaemon, hostPid, TestClient, type Daemon } from '../helpers/daemon.js';
import { httpRequest } from '../helpers/http.js';
import { Harness, stoppedWithin } from '../helpers/processes.js';
import { readToken } from '../../edge/http-token.js';
import { RpcError } from '../../protocol/client-rpc.js';

interface Shown {
  schedule_id: string;
  session_id: string;
  next_at: string | null;
  last_at: string | null;
  fires: number;
}

async function schedules(client: TestClient, sid?: string): Promise<Shown[]> {
  return (await client.call<{ schedules: Shown[] }>('schedule.list', sid === undefined ? {} : { session_id: sid })).schedules;
}

async function prompts(client: TestClient, sid: string): Promise<string[]> {
  const { messages } = await client.call<{ messages: { role: string; content: string }[] }>('session.history', { session_id: sid });
  return messages.filter((m) => m.role === 'user').map((m) => m.content);
}

async function refusal(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
  } catch (err) {
    if (err instanceof RpcError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('the call was not refused');
}

describe('schedules (real daemon, real host)', function () {
  this.timeout(90_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('checks each field (-32602 naming it); is listed, deleted, and made through REST and the CLI', async () => {
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0']);
    const client = await TestClient.connect(daemon);
    const bad: [Record<string, unknown>, string][] = [
      [{ text: 'x' }, 'cron'],
      [{ text: 'x', cron: '* * *' }, 'cron'],
      [{ text: 'x', cron: '* * * * *', every_secs: 5 }, 'one of'],
      [{ text: 'x', every_secs: 0 }, 'every_secs'],
      [{ text: 'x', every_secs: 'often' }, 'every_secs'],
      [{ text: 'x', at: 'tomorrow' }, 'at'],
      [{ text: 'x', cron: '0 9 * * *', tz: 'Mars/Olympus' }, 'tz'],
      [{ text: 'x', every_secs: 5, catch_up: 'all' }, 'catch_up'],
      [{ text: 'x', every_secs: 5, on_busy: 'steer' }, 'on_busy'],
      [{ every_secs: 5 }, 'text'],
    ];
    for (const [params, field] of bad) {
      const refused = await refusal(client.call('schedule.create', { session_id: 's', ...params }));
      expect(refused.code, JSON.stringify(params)).to.equal(-32602);
      expect(refused.message, JSON.stringify(params)).to.contain(field);
    }
    expect(await schedules(client)).to.deep.equal([]);

    const made = await client.call<{ schedule_id: string; next_at: string }>('schedule.create', { session_id: 's', text: 'morning review', cron: '0 9 * * 1-5', tz: 'Europe/Paris' });
    expect(new Date(made.next_at).getUTCHours(), 'nine in Paris is 8 or 7 UTC').to.be.oneOf([7, 8]);
    const [listed] = await schedules(client, 's');
    expect(listed).to.include({ schedule_id: made.schedule_id, session_id: 's', text: 'morning review', cron: '0 9 * * 1-5', tz: 'Europe/Paris', fires: 0, last_at: null });
    expect((await client.call<{ sessions: { session_id: string }[] }>('session.list')).sessions.map((s) => s.session_id), 'the session was made').to.include('s');

    const token = readToken(daemon.home)!;
    const port = Number(new URL((await client.call<{ http: { url: string } }>('host.status')).http.url).port);
    const auth = { authorization: `Bearer ${token}` };
    const posted = await httpRequest(port, { method: 'POST', path: '/v1/schedules', headers: auth, body: { session_id: 'r', text: 'by rest', every_secs: 3600 } });
    expect(posted.status, posted.text).to.equal(201);
    const restId = (posted.json() as { schedule_id: string }).schedule_id;
    const badRest = await httpRequest(port, { method: 'POST', path: '/v1/schedules', headers: auth, body: { session_id: 'r', text: 'x', every_secs: -1 } });
    expect(badRest.status).to.equal(400);
    const got = await httpRequest(port, { path: '/v1/schedules?session_id=r', headers: auth });
    expect((got.json() as unknown as { schedules: Shown[] }).schedules.map((s) => s.schedule_id)).to.deep.equal([restId]);
    expect((await httpRequest(port, { method: 'DELETE', path: `/v1/schedules/${restId}`, headers: auth })).status).to.equal(200);
    expect((await httpRequest(port, { method: 'DELETE', path: `/v1/schedules/${restId}`, headers: auth })).status).to.equal(404);

    const added = await h.runCli(['schedule', 'add', '--home', daemon.home, 'c', 'from the cli', '--every', '3600']);
    expect(added.code, added.stderr).to.equal(0);
    const cliId = added.stdout.split(' ')[0]!;
    const table = await h.runCli(['schedule', 'list', '--home', daemon.home]);
    expect(table.stdout).to.contain(cliId).and.to.contain('every 3600 s').and.to.contain('from the cli');
    const json = JSON.parse((await h.runCli(['schedule', 'list', '--json', '--home', daemon.home])).stdout) as Shown[];
    expect(json.map((s) => s.schedule_id).sort()).to.deep.equal([made.schedule_id, cliId].sort());
    const badCli = await h.runCli(['schedule', 'add', '--home', daemon.home, 'c', 'x', '--cron', 'not a cron']);
    expect(badCli.code).to.equal(1);
    expect(badCli.stderr).to.contain('cron');
    expect((await h.runCli(['schedule', 'rm', '--home', daemon.home, cliId])).code).to.equal(0);
    expect((await client.call<{ deleted: boolean }>('schedule.delete', { schedule_id: made.schedule_id })).deleted).to.equal(true);
    expect(await schedules(client)).to.deep.equal([]);
    client.close();
  });

  it('fires within 1 s of its planned time with nobody attached; its turn.started names the schedule', async () => {
    const daemon = await startDaemon(h);
    const maker = await TestClient.connect(daemon);
    const plannedMs = Date.now() + 1500;
    const { schedule_id } = await maker.call<{ schedule_id: string }>('schedule.create', { session_id: 'w', text: 'wake up', at: new Date(plannedMs).toISOString() });
    maker.close();
    const watcher = await TestClient.connect(daemon);
    // A watcher, not the maker, and not needed: it only times the turn.
    await watcher.call('session.resume', { session_id: 'w' });
    const started = await watcher.nextEvent('turn.started', 'w');
    const lateMs = Date.now() - plannedMs;
    expect(started.payload['schedule_id']).to.equal(schedule_id);
    expect(lateMs, 'ms after the planned time').to.be.below(1000);
    await watcher.nextEvent('turn.end', 'w');
    expect(await prompts(watcher, 'w')).to.deep.equal(['wake up']);
    const [done] = await schedules(watcher);
    expect(done).to.include({ fires: 1, next_at: null, last_at: new Date(plannedMs).toISOString() });
    watcher.close();
  });

  it('a fire while a turn runs waits behind it (on_busy queue), or is skipped and logged (on_busy reject)', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'b' });
    await client.call('prompt.submit', { session_id: 'b', text: '/sleep 2' });
    await client.nextEvent('turn.started', 'b');
    const soon = new Date(Date.now() + 300).toISOString();
    const queued = await client.call<{ schedule_id: string }>('schedule.create', { session_id: 'b', text: 'queued fire', at: soon });
    const rejected = await client.call<{ schedule_id: string }>('schedule.create', { session_id: 'b', text: 'rejected fire', at: soon, on_busy: 'reject' });
    await daemon.process.logged(/"msg":"schedule: the fire was refused and is skipped"/, 10_000);
    const started = await client.nextEvent('turn.started', 'b', (e) => e.payload['schedule_id'] !== undefined);
    expect(started.payload['schedule_id']).to.equal(queued.schedule_id);
    await client.nextEvent('turn.end', 'b', (e) => e.payload['turn_id'] === started.payload['turn_id']);
    expect(await prompts(client, 'b')).to.deep.equal(['/sleep 2', 'queued fire']);
    const rows = new Map((await schedules(client, 'b')).map((s) => [s.schedule_id, s]));
    expect(rows.get(queued.schedule_id)).to.include({ fires: 1, next_at: null });
    expect(rows.get(rejected.schedule_id)).to.include({ fires: 0, next_at: null });
    client.close();
  });

  it('under kill -9 of the host every 2 s, each planned fire runs once at most: the history holds one prompt per fire counted', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    const { schedule_id } = await client.call<{ schedule_id: string }>('schedule.create', { session_id: 'k', text: 'tick', every_secs: 1 });
    // Three: a fourth crash within 300 s is a crash loop, and the supervisor stops restarting (DESIGN.md).
    const kills = 3;
    for (let i = 0; i < kills; i++) {
      const pid = await hostPid(client);
      // A fire of this host's life is committed before it is killed: the kill lands amid the fires.
      await daemon.process.logged(new RegExp(`(?:"msg":"schedule fired"[^]*){${i + 1}}`), 15_000);
      process.kill(pid, 'SIGKILL');
      await daemon.process.logged(new RegExp(`(?:"msg":"host ready"[^]*){${i + 2}}`), 15_000);
    }
    // One more fire after the last restart: a fire the last kill cut is tried again (under its id) first.
    await daemon.process.logged(new RegExp(`(?:"msg":"schedule fired"[^]*){${kills + 1}}`), 15_000);
    client.close();
    // Stopped, nothing is in flight: the log and the history are final.
    expect((await h.runCli(['stop', '--home', daemon.home])).code).to.equal(0);
    await daemon.process.waitExit(15_000);
    const fired = (await firesLogged(daemon)).filter((f) => f.schedule === schedule_id);
    const planned = fired.map((f) => f.planned);
    expect(new Set(planned).size, 'no planned time logged as fired twice').to.equal(planned.length);
    // A fire whose turn the kill cut keeps its prompt (the turn is lost, not run again): one prompt a fire.
    const history = JSON.parse((await h.runCli(['history', '--json', '--home', daemon.home, 'k'])).stdout) as { role: string; content: string }[];
    const ticks = history.filter((m) => m.role === 'user');
    expect(ticks.length, `prompts in the history vs fires logged (${planned.length})`).to.equal(planned.length);
    expect(ticks.every((m) => m.content === 'tick')).to.equal(true);
    expect(planned.length).to.be.at.least(kills + 1);
  });

  it('a kill -9 of the daemon between a fire\'s submit and the schedule\'s advance: the next daemon makes that fire again, and it runs once', async () => {
    // The daemon stops itself exactly in that window (TURNHOST_STOP_AT), and is killed there.
    const first = await startDaemon(h, [], { TURNHOST_STOP_AT: 'schedule-fire-submitted' });
    const client = await TestClient.connect(first);
    const hostPid = (await client.call<{ host: { pid: number } }>('host.status')).host.pid;
    const { schedule_id } = await client.call<{ schedule_id: string }>('schedule.create', { session_id: 'd', text: 'tick', at: new Date(Date.now() + 300).toISOString() });
    await first.process.logged(/"name":"stop-point","point":"schedule-fire-submitted"/, 10_000);
    expect(await stoppedWithin(first.process.pid, 5_000), 'the daemon stopped at its stop point').to.equal(true);
    client.close();
    first.process.kill('SIGKILL');
    process.kill(hostPid, 'SIGKILL');
    await first.process.waitExit(10_000);
    expect((await firesLogged(first)).map((f) => f.schedule)).to.deep.equal([schedule_id]);
    const second = await startDaemon(h, [], {}, first.home);
    // The fire was never marked made: the next daemon makes it again, once its claim has lapsed (10 s).
    await second.process.logged(/"msg":"schedule fired"/, 30_000);
    expect((await firesLogged(second)).map((f) => f.planned)).to.deep.equal((await firesLogged(first)).map((f) => f.planned));
    expect((await h.runCli(['stop', '--home', first.home])).code).to.equal(0);
    await second.process.waitExit(15_000);
    const history = JSON.parse((await h.runCli(['history', '--json', '--home', first.home, 'd'])).stdout) as { role: string }[];
    expect(history.filter((m) => m.role === 'user').length, 'one planned fire, made twice, ran once').to.equal(1);
  });

  it('a daemon stopped across planned fires: catch_up "one" fires once at start, "none" skips them', async () => {
    const first = await startDaemon(h);
    const client = await TestClient.connect(first);
    const one = await client.call<{ schedule_id: string }>('schedule.create', { session_id: 'one', text: 'caught up', every_secs: 2 });
    const none = await client.call<{ schedule_id: string }>('schedule.create', { session_id: 'none', text: 'skipped', every_secs: 2, catch_up: 'none' });
    await first.process.logged(/(?:"msg":"schedule fired"[^]*){2}/, 10_000);
    client.close();
    expect((await h.runCli(['stop', '--home', first.home])).code).to.equal(0);
    await first.process.waitExit(15_000);
    const before = await h.runCli(['history', '--json', '--home', first.home, 'one']);
    const promptsBefore = (JSON.parse(before.stdout) as { role: string }[]).filter((m) => m.role === 'user').length;
    const stoppedAt = Date.now();
    // The planned fires of the next 5 s pass while no daemon runs: this wait is the condition under test.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const restartingAt = Date.now();
    const second = await startDaemon(h, [], {}, first.home);
    const restartedAt = Date.now();
    await second.process.logged(/"msg":"schedule: a fire missed while turnhost was down is skipped \(catch_up none\)"/, 10_000);
    await second.process.logged(/"caughtUp":true,"msg":"schedule fired"/, 10_000);
    const after = await TestClient.connect(second);
    const rows = new Map((await schedules(after)).map((s) => [s.schedule_id, s]));
    const caught = rows.get(one.schedule_id)!;
    expect(Date.parse(caught.last_at!), 'the fire made at start is one planned while down').to.be.within(stoppedAt, restartedAt);
    const skipped = rows.get(none.schedule_id)!;
    expect(Date.parse(skipped.last_at!), '"none" fired nothing planned while down').to.be.below(stoppedAt);
    // Planned after the skip, which the new daemon made once it ran (its start may take seconds on a loaded machine).
    expect(Date.parse(skipped.next_at!)).to.be.at.least(restartingAt);
    const caughtUp = (await firesLogged(second)).filter((f) => f.schedule === one.schedule_id && Date.parse(f.planned) < restartedAt);
    expect(caughtUp.length, 'missed fires become one').to.equal(1);
    expect((await prompts(after, 'one')).length).to.be.at.least(promptsBefore + 1);
    after.close();
  });
});

/** The scheduler's "schedule fired" records in the daemon's log so far. */
async function firesLogged(daemon: Daemon): Promise<{ schedule: string; planned: string }[]> {
  return daemon.process.stderr
    .split('\n')
    .filter((line) => line.includes('"msg":"schedule fired"'))
    .map((line) => JSON.parse(line) as { schedule: string; planned: string });
}
