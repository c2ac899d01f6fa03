// The ledger, budgets and the fair share (PROTOCOL.md §5.7) against real processes: a daemon with
// the model agent and a fake model server that reports cached and reasoning tokens, members with
// their own tokens, `turnhost usage` with the daemon stopped; budgets over every door (a submit, a
// queued prompt, a retry, a schedule's fire); and the host's fair share of its workers.
import { expect } from 'chai';
import { connect, TurnhostError, type TurnhostClient } from '../../client/index.js';
import { readToken } from '../../edge/http-token.js';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { httpRequest } from '../helpers/http.js';
import { modelScenes } from '../helpers/model-agent.js';
import { Harness, type Frame } from '../helpers/processes.js';

const KEY = 'sk-test-usage-key';

interface Team {
  daemon: Daemon;
  port: number;
  url: string;
  owner: string;
  tokens: Record<string, string>;
}

async function startTeam(h: Harness, args: string[], env: NodeJS.ProcessEnv, home: string | undefined, members: string[], admins: string[] = []): Promise<Team> {
  const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', ...args], env, home);
  const tokens: Record<string, string> = {};
  for (const name of [...members, ...admins]) {
    const made = await h.runCli(['user', 'add', name, '--home', daemon.home, ...(admins.includes(name) ? ['--admin'] : [])]);
    expect(made.code, made.stderr).to.equal(0);
    tokens[name] = made.stdout.trim();
  }
  const client = await TestClient.connect(daemon);
  const url = (await client.call<{ http: { url: string } }>('host.status')).http.url;
  client.close();
  return { daemon, port: Number(new URL(url).port), url, owner: readToken(daemon.home), tokens };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Runs one turn as this client and resolves with its ending event (turn.end or turn.error). */
async function turnOf(client: TurnhostClient, sid: string, text: string): Promise<{ type: string; payload: Record<string, unknown> }> {
  for await (const event of client.turn(sid, text)) {
    if (event.type === 'turn.end' || event.type === 'turn.error') return { type: event.type, payload: event.payload };
  }
  throw new Error('the turn ended without its end');
}

async function codeOf(call: Promise<unknown>): Promise<{ code: number; data?: unknown; message: string }> {
  try {
    await call;
  } catch (err) {
    if (err instanceof TurnhostError) return { code: err.code, data: err.data, message: err.message };
    throw err;
  }
  return { code: 0, message: '' };
}

const today = () => new Date().toISOString().slice(0, 10);
const nextMidnight = () => new Date((Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000).toISOString();

describe('usage, budgets and fair share (PROTOCOL.md §5.7; real processes)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const { scene, cleanup } = modelScenes(h);
  const clients: TurnhostClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await cleanup();
  });

  async function as(team: Team, who: string): Promise<TurnhostClient> {
    const client = await connect({ url: team.url, token: who === 'owner' ? team.owner : team.tokens[who]! });
    clients.push(client);
    return client;
  }

  it('the ledger: tokens (cached, reasoning), model, calls, time and sender of each turn, a failed one with what was known; read by every door, the CLI with the daemon down', async () => {
    const s = await scene();
    const team = await startTeam(h, ['--agent', 'openai'], { OPENAI_API_KEY: KEY }, s.home, ['alice', 'bob']);
    const [alice, bob, owner] = [await as(team, 'alice'), await as(team, 'bob'), await as(team, 'owner')];
    await alice.createSession({ session_id: 'a1' });
    await bob.createSession({ session_id: 'b1' });
    await owner.createSession({ session_id: 'o1' });

    s.fake.reply({ text: ['one'], usage: { prompt_tokens: 100, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 60 }, completion_tokens_details: { reasoning_tokens: 5 } } });
    const first = await turnOf(alice, 'a1', 'first');
    expect(first.payload['usage']).to.deep.equal({ prompt_tokens: 100, completion_tokens: 20, cached_tokens: 60, reasoning_tokens: 5, calls: 1 });
    // A tool call (to no tool: its result says so), then the model's server refuses: the turn fails with its first call's usage kept.
    s.fake.reply({ toolCalls: [{ id: 'c1', name: 'no_such_tool', args: ['{}'] }], usage: { prompt_tokens: 50, completion_tokens: 10 } }, { status: 401, message: 'bad key' });
    expect((await turnOf(alice, 'a1', 'second')).type).to.equal('turn.error');
    expect((await turnOf(bob, 'b1', 'bob')).type).to.equal('turn.end');
    expect((await turnOf(owner, 'o1', 'mine')).type).to.equal('turn.end');

    const a1 = await alice.sessionUsage('a1');
    expect(a1.total).to.include({ turns: 2, prompt_tokens: 150, completion_tokens: 30, cached_tokens: 60, reasoning_tokens: 5, calls: 2 });
    expect(a1.turns.map((t) => [t.by, t.status, t.model, t.prompt_tokens])).to.deep.equal([
      ['alice', 'completed', 'test-model', 100],
      ['alice', 'failed', 'test-model', 50],
    ]);
    for (const turn of a1.turns) expect(turn.duration_ms).to.be.a('number').at.least(0);
    expect((await codeOf(bob.sessionUsage('a1'))).code, "bob reads alice's").to.equal(4004);

    const byPerson = async (token: string, query = '') => {
      const answer = await httpRequest(team.port, { path: `/v1/usage${query}`, headers: bearer(token) });
      expect(answer.status, answer.text).to.equal(200);
      return (JSON.parse(answer.text) as { rows: { key: string; turns: number; prompt_tokens: number }[] }).rows;
    };
    expect((await byPerson(team.tokens['alice']!)).map((r) => r.key), 'a member sees their own').to.deep.equal(['alice']);
    expect((await byPerson(team.tokens['bob']!)).map((r) => [r.key, r.prompt_tokens])).to.deep.equal([['bob', 11]]);
    expect((await byPerson(team.owner)).map((r) => [r.key, r.turns, r.prompt_tokens])).to.deep.equal([
      ['alice', 2, 150],
      ['bob', 1, 11],
      ['owner', 1, 11],
    ]);
    expect((await byPerson(team.owner, '?by=model')).map((r) => [r.key, r.turns])).to.deep.equal([['test-model', 4]]);
    expect((await byPerson(team.owner, `?by=day&since=${today()}&until=${today()}`)).map((r) => [r.key, r.turns])).to.deep.equal([[today(), 4]]);
    expect(await byPerson(team.owner, '?since=2001-01-01&until=2001-12-31')).to.deep.equal([]);
    expect((await httpRequest(team.port, { path: '/v1/usage?since=2026-13-40', headers: bearer(team.owner) })).status).to.equal(400);
    const metrics = (await httpRequest(team.port, { path: '/metrics', headers: bearer(team.owner) })).text;
    expect(metrics).to.match(/^turnhost_tokens_total\{kind="cached"\} 60$/m);
    expect(metrics).to.match(/^turnhost_tokens_total\{kind="reasoning"\} 5$/m);
    expect(metrics).to.match(/^turnhost_turns_total\{outcome="failed"\} 1$/m);

    const stop = await h.runCli(['stop', '--home', team.daemon.home]);
    expect(stop.code, stop.stderr).to.equal(0);
    await team.daemon.process.waitExit(15_000);
    const cli = await h.runCli(['usage', '--home', team.daemon.home, '--by', 'session', '--json']);
    expect(cli.code, cli.stderr).to.equal(0);
    const report = JSON.parse(cli.stdout) as { by: string; rows: { key: string; turns: number; prompt_tokens: number; cached_tokens: number }[] };
    expect(report.by).to.equal('session');
    expect(report.rows.map((r) => [r.key, r.turns, r.prompt_tokens, r.cached_tokens])).to.deep.equal([
      ['a1', 2, 150, 60],
      ['b1', 1, 11, 0],
      ['o1', 1, 11, 0],
    ]);
    const table = await h.runCli(['usage', '--home', team.daemon.home]);
    expect(table.stdout).to.match(/^PERSON\s+TURNS\s+PROMPT\s+COMPLETION\s+CACHED\s+REASONING\s+CALLS\s+TIME$/m);
    expect(table.stdout).to.match(/^alice\s+2\s+150\s+30\s+60\s+5\s+2\s/m);
    expect(table.stdout).to.match(/^TOTAL\s+4\s+172\s+44\s/m);
    const wrong = await h.runCli(['usage', '--home', team.daemon.home, '--since', 'yesterday']);
    expect([wrong.code, wrong.stderr]).to.deep.equal([2, 'turnhost usage: --since must be a date, YYYY-MM-DD (a UTC day)\n']);
  });

  it('budgets: 4029 (REST 429 with Retry-After) at a submit, a retry and a schedule fire; a queued prompt waits and says why; admins and the owner have no default', async () => {
    const team = await startTeam(h, [], {}, undefined, ['alice', 'bob'], ['carol']);
    const budget = async (...args: string[]) => {
      const done = await h.runCli(['user', 'budget', ...args, '--home', team.daemon.home]);
      expect(done.code, done.stderr).to.equal(0);
      return done.stdout;
    };
    expect(await budget('--default', '--turns-per-day', '2')).to.equal('the default (members without their own): 2 turns per UTC day\n');
    const [alice, carol] = [await as(team, 'alice'), await as(team, 'carol')];
    await alice.createSession({ session_id: 'a' });
    for (const text of ['one', 'two']) expect((await turnOf(alice, 'a', text)).type).to.equal('turn.end');
    const refused = await codeOf(alice.submit('a', 'three'));
    expect(refused.code).to.equal(4029);
    expect(refused.data).to.deep.equal({ budget: 'turns_per_day', limit: 2, used: 2, resets_at: nextMidnight() });
    expect(refused.message).to.equal(`budget exceeded: turns per day (2 of 2), resets at ${nextMidnight()}`);
    const rest = await httpRequest(team.port, { method: 'POST', path: '/v1/sessions/a/prompts', headers: { ...bearer(team.tokens['alice']!), 'content-type': 'application/json' }, body: { text: 'three' } });
    expect(rest.status).to.equal(429);
    const retryAfter = Number(rest.headers['retry-after']);
    expect(retryAfter).to.be.within(1, 86_400);
    expect(Math.abs(Date.now() + retryAfter * 1000 - Date.parse(nextMidnight()))).to.be.below(5_000);

    // A retry over the budget rewinds nothing.
    const before = (await alice.history('a')).messages.length;
    expect((await codeOf(alice.retry('a'))).code).to.equal(4029);
    expect((await alice.history('a')).messages.length).to.equal(before);

    // An admin, and the owner, have no default budget.
    await carol.createSession({ session_id: 'c' });
    for (const text of ['one', 'two', 'three']) expect((await turnOf(carol, 'c', text)).type).to.equal('turn.end');

    // A schedule's fire is skipped, and says why.
    const fireAt = new Date(Date.now() + 1500).toISOString();
    const made = await httpRequest(team.port, { method: 'POST', path: '/v1/schedules', headers: { ...bearer(team.tokens['alice']!), 'content-type': 'application/json' }, body: { session_id: 'a', text: 'scheduled', at: fireAt } });
    expect(made.status, made.text).to.equal(201);
    await team.daemon.process.logged(/the fire was refused and is skipped/, 15_000);
    const listed = await httpRequest(team.port, { path: '/v1/schedules?session_id=a', headers: bearer(team.owner) });
    const [shown] = (listed.json() as unknown as { schedules: { skips: number; fires: number; last_skip: string }[] }).schedules;
    expect(shown).to.include({ skips: 1, fires: 0 });
    expect(shown!.last_skip).to.include('budget exceeded: turns per day');

    // Bob's own budget: a turn running, then three queued; the third waits, and the session hears why.
    expect(await budget('bob', '--turns-per-day', '3')).to.equal('bob: 3 turns per UTC day\n');
    const bob = await as(team, 'bob');
    await bob.createSession({ session_id: 'b' });
    const events = bob.events('b');
    await bob.submit('b', '/sleep 0.5');
    for (const text of ['q1', 'q2', 'q3']) expect((await bob.submit('b', text)).status).to.equal('queued');
    const seen: string[] = [];
    for await (const event of events) {
      if (event.type === 'turn.end') seen.push('end');
      if (event.type === 'status.update' && event.payload['kind'] === 'budget') {
        expect(event.payload['text']).to.equal(`queued prompts wait: budget exceeded: turns per day (3 of 3), resets at ${nextMidnight()}`);
        break;
      }
    }
    expect(seen).to.deep.equal(['end', 'end', 'end']);
    expect((await bob.queue('b')).items.map((item) => item.text)).to.deep.equal(['q3']);
    // Raised, the queue goes on when a new prompt comes.
    await budget('bob', '--turns-per-day', '10');
    const later = bob.events('b');
    await bob.submit('b', 'q4');
    const ended: string[] = [];
    for await (const event of later) {
      if (event.type === 'turn.end') ended.push(String(event.payload['turn_id']));
      if (ended.length === 2) break;
    }
    expect((await bob.queue('b')).items).to.deep.equal([]);
    expect(await budget('bob', '--none')).to.equal('bob: no budget\n');
    expect(await budget()).to.match(/^USER\s+TOKENS\/DAY\s+TURNS\/DAY\n\(default\)\s+-\s+2\n$/);
    const unknown = await h.runCli(['user', 'budget', 'nobody', '--turns-per-day', '1', '--home', team.daemon.home]);
    expect([unknown.code, unknown.stderr]).to.deep.equal([4, 'turnhost user budget: no user named nobody\n']);
  });

  it("fair share: one person's sixty waiting sessions do not hold another's submit past the first worker freed; --max-running-per-person caps a person", async () => {
    const host = await h.startHost(h.tempDir(), ['--workers', '2']);
    const start = (sid: string, by: string, text: string) => host.send({ type: 'turn.start', sid, request_id: `r-${sid}`, text, by, on_busy: 'queue' });
    for (let i = 0; i < 60; i++) start(`ann${i}`, 'ann', '/sleep 1');
    await host.next('turn.accepted', { where: (f) => f['sid'] === 'ann59' });
    start('bob', 'bob', 'quick');
    const bobStarted = await host.next('turn.started', { where: (f) => f['sid'] === 'bob', timeoutMs: 15_000 });
    // Ann's own turns are taken in the order she asked. Two start commits in flight may be
    // answered out of order (PostgreSQL), so the frames prove who ran, not who was first among them.
    const startedBefore = startedSids(host.frames.slice(0, host.frames.indexOf(bobStarted)));
    expect([...startedBefore].sort(), 'only the two that had the workers ran before bob').to.deep.equal(['ann0', 'ann1']);
    await host.next('turn.started', { where: (f) => f['sid'] === 'ann2', timeoutMs: 15_000 });
    await host.next('turn.started', { where: (f) => f['sid'] === 'ann3', timeoutMs: 15_000 });
    const annStarted = startedSids(host.frames).filter((sid) => sid.startsWith('ann')).slice(0, 4);
    expect(annStarted.slice(0, 2).sort()).to.deep.equal(['ann0', 'ann1']);
    expect(annStarted.slice(2).sort()).to.deep.equal(['ann2', 'ann3']);
    host.kill('SIGKILL');

    const capped = await h.startHost(h.tempDir(), ['--workers', '4', '--max-running-per-person', '1']);
    const go = (sid: string, by: string, text: string) => capped.send({ type: 'turn.start', sid, request_id: `r-${sid}`, text, by, on_busy: 'queue' });
    for (const sid of ['ann0', 'ann1']) go(sid, 'ann', '/sleep 0.5');
    go('bob0', 'bob', 'quick');
    await capped.next('turn.end', { where: (f) => f['sid'] === 'bob0' });
    await capped.next('turn.started', { where: (f) => f['sid'] === 'ann1', timeoutMs: 10_000 });
    const order = capped.frames.filter((f) => f.type === 'turn.started' || f.type === 'turn.end').map((f) => `${f.type === 'turn.end' ? 'end' : 'start'} ${String(f['sid'])}`);
    expect(order.indexOf('end ann0'), 'ann1 waited for ann0 though workers were free').to.be.lessThan(order.indexOf('start ann1'));
    expect(order.indexOf('start bob0')).to.be.lessThan(order.indexOf('end ann0'));
  });
});

function startedSids(frames: readonly Frame[]): string[] {
  return frames.filter((f) => f.type === 'turn.started').map((f) => String(f['sid']));
}
