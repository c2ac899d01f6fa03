import { expect } from 'chai';
import { readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hostPid, hostReady, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { fileWhere, filesUnder } from '../helpers/files.js';
import { guestArgs, guestScene, logged, type GuestScene } from '../helpers/guests.js';
import { Harness, processesNaming } from '../helpers/processes.js';
import { GUEST_PASSED_NAMES } from '../../agents/acp/guest-config.js';
import type { EventParams } from '../../client/rpc-connection.js';

const SECRET = 'sk-guest-LEAKCANARY-93b1d7e2';

/** Submits a prompt and waits for its turn to end (turn.end or turn.error). */
async function turn(client: TestClient, sid: string, text: string): Promise<void> {
  const submitted = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text });
  const ends = (e: EventParams) => e.session_id === sid && (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === submitted.turn_id;
  await client.until(() => client.events.some(ends), `the end of "${text}" on ${sid}`, 20_000);
}

const replyOf = (events: readonly EventParams[]): string => events.filter((e) => e.type === 'message.delta').map((e) => String(e.payload['text'])).join('');
const endOf = (events: readonly EventParams[]): EventParams => events.find((e) => e.type === 'turn.end' || e.type === 'turn.error')!;

describe('guest agents over ACP (--agent acp, AGENT.md §6): a guest written with the SDK, a Python one', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  async function daemonFor(scene: GuestScene, env: NodeJS.ProcessEnv = {}): Promise<{ daemon: Daemon; client: TestClient }> {
    const daemon = await startDaemon(h, guestArgs(scene), env, scene.home);
    return { daemon, client: await TestClient.connect(daemon) };
  }

  /** The events since the last turn.started of the session: the running or last turn's. */
  const lastTurn = (client: TestClient, sid: string): EventParams[] => {
    const ofSession = client.events.filter((e) => e.session_id === sid);
    const start = ofSession.map((e) => e.type).lastIndexOf('turn.started');
    return ofSession.slice(start);
  };

  async function run(client: TestClient, sid: string, text: string): Promise<EventParams[]> {
    await turn(client, sid, text);
    return lastTurn(client, sid);
  }

  it('streams a reply, keeps one guest process per live session across turns, stores the turn like the model agent, and passes only the allowed environment', async () => {
    const scene = guestScene(h);
    scene.write({ env: { GUEST_API_KEY: SECRET, GUEST_MODE: 'test' }, pass_env: ['GUEST_TOKEN_FROM_DAEMON'] });
    const { client } = await daemonFor(scene, { GUEST_TOKEN_FROM_DAEMON: 'from-the-daemon-123', UNRELATED_SECRET: 'do-not-pass' });
    await client.call('session.create', { session_id: 'g' });
    const first = await run(client, 'g', 'hello guest');
    expect(replyOf(first)).to.equal('guest: hello guest');
    expect(endOf(first).type).to.equal('turn.end');
    expect(endOf(first).payload).to.deep.include({ interrupted: false, usage: { prompt_tokens: 43, completion_tokens: 0, calls: 1 } });
    // The prompt response's usage (ACP, unstable) is the turn's own, over a usage_update's context size.
    const spent = await run(client, 'g', 'spent');
    expect(endOf(spent).payload['usage']).to.deep.equal({ prompt_tokens: 300, completion_tokens: 40, cached_tokens: 200, reasoning_tokens: 9, calls: 1 });
    const pid = replyOf(await run(client, 'g', 'pid'));
    expect(scene.guests()).to.have.length(1);
    // A session created without cwd works in a folder of its own in the home, made 0700.
    expect(readlinkSync(`/proc/${scene.guests()[0]!}/cwd`)).to.equal(join(scene.home, 'workspaces', 'owner', 'g'));
    expect(statSync(join(scene.home, 'workspaces', 'owner', 'g')).mode & 0o777).to.equal(0o700);
    expect(replyOf(await run(client, 'g', 'pid'))).to.equal(pid); // the same live session: no second process

    const names = replyOf(await run(client, 'g', 'env')).split(' ');
    expect(names).to.include.members(['PATH', 'GUEST_API_KEY', 'GUEST_MODE', 'GUEST_TOKEN_FROM_DAEMON']);
    expect(names).to.not.include('UNRELATED_SECRET');
    // §6's allowlist, and the sandbox's proxy (§7).
    const proxyNames = ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy'];
    expect(names.filter((n) => ![...GUEST_PASSED_NAMES, 'GUEST_API_KEY', 'GUEST_MODE', 'GUEST_TOKEN_FROM_DAEMON', ...proxyNames].includes(n))).to.deep.equal([]);

    const leaked = await run(client, 'g', 'secret');
    expect(replyOf(leaked)).to.equal('my key is [key]');
    const crashed = String(endOf(await run(client, 'g', 'crash-secret')).payload['message']);
    expect(crashed).to.include('fixture: my key was [key]').and.not.include(SECRET);

    const history = await client.call<{ messages: { role: string; content: string }[] }>('session.history', { session_id: 'g' });
    expect(history.messages.slice(0, 2).map(({ role, content }) => ({ role, content }))).to.deep.equal([
      { role: 'user', content: 'hello guest' },
      { role: 'assistant', content: 'guest: hello guest' },
    ]);
    expect(JSON.stringify(history)).to.not.include(SECRET);
    const stop = await h.runCli(['stop', '--home', scene.home]);
    expect(stop.code).to.equal(0);
    for (const file of filesUnder(scene.home)) expect(readFileSync(file).includes(SECRET), file).to.equal(false);
    expect(JSON.stringify(client.events)).to.not.include(SECRET);
  });

  it("maps a guest's plan, mode, thought, stop reasons, tool calls and questions; refuses the routes a guest owns", async () => {
    const scene = guestScene(h);
    const { client } = await daemonFor(scene);
    await client.call('session.create', { session_id: 'm' });

    const plan = (await run(client, 'm', 'plan')).find((e) => e.type === 'status.update')!;
    expect(plan.payload).to.deep.equal({
      kind: 'plan',
      text: '[completed] look around\n[pending] write it',
      entries: [
        { content: 'look around', status: 'completed', priority: 'high' },
        { content: 'write it', status: 'pending', priority: 'medium' },
      ],
    });
    expect((await run(client, 'm', 'mode')).find((e) => e.type === 'status.update')!.payload).to.deep.equal({ kind: 'mode', text: 'architect' });
    expect((await run(client, 'm', 'think')).find((e) => e.type === 'reasoning.delta')!.payload).to.deep.equal({ text: 'hmm' });
    const refused = await run(client, 'm', 'refuse');
    expect(refused.find((e) => e.type === 'status.update')!.payload['kind']).to.equal('refusal');
    expect(endOf(refused).type).to.equal('turn.end');
    expect(endOf(await run(client, 'm', 'long')).payload['finish_reason']).to.equal('length');
    expect((await run(client, 'm', 'max-requests')).find((e) => e.type === 'status.update')!.payload['kind']).to.equal('max_turn_requests');
    // A guest that cancels by itself (nobody interrupted): the turn ends interrupted, its text kept.
    const aborted = await run(client, 'm', 'abort');
    expect(endOf(aborted).type).to.equal('turn.end');
    expect(endOf(aborted).payload['interrupted']).to.equal(true);
    const stored = (await client.call<{ messages: { role: string; content: string }[] }>('session.history', { session_id: 'm' })).messages;
    expect(stored.slice(-2).map((m) => [m.role, m.content])).to.deep.equal([['user', 'abort'], ['assistant', 'giving up']]);

    // A permission request: asked with the guest's options, answered by option_id.
    await client.call('prompt.submit', { session_id: 'm', text: 'tool ls -la' });
    await client.until(() => client.requests.length === 1, 'the approval');
    const asked = client.requests[0]!;
    expect(asked.method).to.equal('approval.request');
    expect(asked.params).to.deep.include({
      question: 'ls -la',
      tool: 'acp_execute',
      arguments: { command: 'ls -la' },
      options: [
        { option_id: 'always', name: 'Always allow', kind: 'allow_always' },
        { option_id: 'once', name: 'Allow', kind: 'allow_once' },
        { option_id: 'no', name: 'Reject', kind: 'reject_once' },
      ],
    });
    client.rpc.respond(asked.id, { result: { option_id: 'always' } });
    await client.nextEvent('turn.end', 'm', (e) => e.payload['turn_id'] === lastTurn(client, 'm')[0]!.payload['turn_id']);
    const toolTurn = lastTurn(client, 'm');
    expect(toolTurn.find((e) => e.type === 'tool.start')!.payload).to.deep.include({ name: 'acp_execute', title: 'ls -la', arguments: '{"command":"ls -la"}' });
    expect(toolTurn.find((e) => e.type === 'tool.complete')!.payload).to.deep.include({ ok: true, summary: 'output of ls -la (always)' });
    expect(replyOf(toolTurn)).to.equal('let me run it. ran ls -la');

    // {approved: false} picks the first reject_once.
    await client.call('prompt.submit', { session_id: 'm', text: 'tool rm -rf x' });
    await client.until(() => client.requests.length === 2, 'the second approval');
    client.rpc.respond(client.requests[1]!.id, { result: { approved: false } });
    await client.until(() => replyOf(lastTurn(client, 'm')).includes('denied'), 'the denial');
    await client.until(() => lastTurn(client, 'm').some((e) => e.type === 'turn.end'), 'the end of the denied turn');
    expect(lastTurn(client, 'm').find((e) => e.type === 'tool.complete')!.payload).to.deep.include({ ok: false });

    // The history holds each tool call and its result, in the Chat Completions shape.
    const history = await client.call<{ messages: Record<string, unknown>[] }>('session.history', { session_id: 'm' });
    const call = history.messages.findIndex((m) => Array.isArray(m['tool_calls']) && (m['tool_calls'] as { function: { arguments: string } }[])[0]!.function.arguments === '{"command":"ls -la"}');
    expect(history.messages[call]).to.deep.include({ role: 'assistant', content: 'let me run it. ' });
    expect((history.messages[call]!['tool_calls'] as unknown[])[0]).to.deep.include({ type: 'function', function: { name: 'acp_execute', arguments: '{"command":"ls -la"}' } });
    expect(history.messages[call + 1]).to.deep.include({ role: 'tool', content: 'output of ls -la (always)' });
    expect(history.messages[call + 2]).to.deep.include({ role: 'assistant', content: 'ran ls -la' });

    // An elicitation is a clarify batch; its answers go back as the form's content.
    await client.call('prompt.submit', { session_id: 'm', text: 'ask' });
    await client.until(() => client.requests.length === 3, 'the clarify');
    const clarify = client.requests[2]!;
    expect(clarify.method).to.equal('clarify.request');
    expect(clarify.params['questions']).to.deep.equal([
      { id: 'color', question: 'Color', choices: ['red', 'blue'] },
      { id: 'name', question: 'Name' },
    ]);
    client.rpc.respond(clarify.id, { result: { answers: { color: 'blue', name: 'Ada' } } });
    await client.until(() => lastTurn(client, 'm').some((e) => e.type === 'turn.end'), 'the end of the clarify turn');
    expect(replyOf(lastTurn(client, 'm'))).to.equal('color=blue name=Ada');

    // A declined question rejects; an interrupt while one is open answers it cancelled, and the turn ends interrupted.
    await client.call('prompt.submit', { session_id: 'm', text: 'tool make x' });
    await client.until(() => client.requests.length === 4, 'the question to decline');
    client.rpc.respond(client.requests[3]!.id, { error: { code: 4000, message: 'declined' } });
    await client.until(() => lastTurn(client, 'm').some((e) => e.type === 'turn.end'), 'the declined turn');
    expect(replyOf(lastTurn(client, 'm'))).to.equal('let me run it. denied make x');
    const open = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'm', text: 'tool make y' });
    await client.until(() => client.requests.length === 5, 'the question left open');
    await client.call('session.interrupt', { session_id: 'm', turn_id: open.turn_id });
    const interrupted = await client.nextEvent('turn.end', 'm', (e) => e.payload['turn_id'] === open.turn_id);
    expect(interrupted.payload['interrupted']).to.equal(true);
    expect(lastTurn(client, 'm').find((e) => e.type === 'request.cancel')!.payload).to.deep.include({ id: client.requests[4]!.id, reason: 'interrupted' });

    for (const route of ['slash.model', 'session.compress']) {
      const refused = await client.call(route, { session_id: 'm', model: 'x' }).then(
        () => null,
        (err: Error) => err.message,
      );
      expect(refused).to.match(new RegExp(`${route} is not served by a guest agent`));
    }
  });

  it('the approval policy answers for acp_<kind> without a question: allow picks allow_once, deny reject_once', async () => {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'ask', allow: ['acp_execute'] } });
    const { client } = await daemonFor(scene);
    await client.call('session.create', { session_id: 'p' });
    expect(replyOf(await run(client, 'p', 'tool make test'))).to.equal('let me run it. ran make test');
    expect(lastTurn(client, 'p').find((e) => e.type === 'tool.complete')!.payload['summary']).to.equal('output of make test (once)');
    expect(client.requests).to.have.length(0);
    await h.runCli(['stop', '--home', scene.home]);

    const denying = guestScene(h);
    denying.write({}, { approval: { default: 'allow', deny: ['acp_exec*'] } });
    const second = await daemonFor(denying);
    await second.client.call('session.create', { session_id: 'd' });
    expect(replyOf(await run(second.client, 'd', 'tool make test'))).to.equal('let me run it. denied make test');
    expect(second.client.requests).to.have.length(0);
  });

  it('fails clearly and loses nothing: a crash mid-turn, an error answer, garbage lines, a method turnhost does not serve', async () => {
    const scene = guestScene(h);
    const { client } = await daemonFor(scene);
    await client.call('session.create', { session_id: 'f' });
    await run(client, 'f', 'first');
    const crashed = endOf(await run(client, 'f', 'crash'));
    expect(crashed.type).to.equal('turn.error');
    expect(crashed.payload['reason']).to.equal('upstream');
    expect(String(crashed.payload['message'])).to.match(/guest agent ".*node.*" exited with code 3.*fixture: crashing now/);
    // The next turn starts the guest again and loads the session: it remembers what came before.
    expect(replyOf(await run(client, 'f', 'memory'))).to.equal('seen: first | crash | memory');

    const failed = endOf(await run(client, 'f', 'fail'));
    expect(failed.payload).to.deep.include({ reason: 'upstream' });
    expect(String(failed.payload['message'])).to.match(/answered session\/prompt with an error: .*the fixture failed on purpose/);

    expect(replyOf(await run(client, 'f', 'garbage'))).to.equal('after garbage');
    expect(JSON.parse(await logged(scene.home, /"name":"acp-garbage"/))).to.deep.include({ name: 'acp-garbage', sid: 'f', line: 'this is not json' });
    expect(JSON.parse(await logged(scene.home, /"name":"acp-stderr"/))).to.deep.include({ name: 'acp-stderr', sid: 'f', line: 'fixture: crashing now' });
    expect(replyOf(await run(client, 'f', 'fs'))).to.equal('fs refused: -32601');
    expect(replyOf(await run(client, 'f', 'after all that'))).to.equal('guest: after all that');
  });

  it('a guest that cannot start, never answers initialize, or needs authentication: a clear turn error; one that authenticates from its environment is authenticated so', async () => {
    const missing = guestScene(h);
    missing.write({ command: join(missing.dir, 'no-such-agent') });
    const { client } = await daemonFor(missing);
    await client.call('session.create', { session_id: 'x' });
    const notStarted = endOf(await run(client, 'x', 'hello'));
    expect(notStarted.payload).to.deep.include({ reason: 'upstream' });
    expect(String(notStarted.payload['message']), String(notStarted.payload['message'])).to.match(/no-such-agent" could not be started \(no such command.*exit 127\); its stderr ends: .*no-such-agent: not found/);
    await h.runCli(['stop', '--home', missing.home]);

    const hanging = guestScene(h, 'ts', ['--hang-initialize']);
    hanging.write({ start_timeout_s: 1 });
    const second = await daemonFor(hanging);
    await second.client.call('session.create', { session_id: 'y' });
    const started = Date.now();
    const hung = endOf(await run(second.client, 'y', 'hello'));
    expect(Date.now() - started).to.be.below(8_000);
    expect(String(hung.payload['message'])).to.match(/did not start its session within 1 s/);
    expect(await hanging.gone(hanging.guests(), 5_000)).to.equal(true);
    await h.runCli(['stop', '--home', hanging.home]);

    const locked = guestScene(h, 'ts', ['--auth']);
    const third = await daemonFor(locked);
    await third.client.call('session.create', { session_id: 'z' });
    const auth = endOf(await run(third.client, 'z', 'hello'));
    expect(auth.payload).to.deep.include({ reason: 'auth' });
    expect(String(auth.payload['message'])).to.match(/needs authentication: .*log in first/);
    await h.runCli(['stop', '--home', locked.home]);

    // A guest that offers to authenticate from a variable it was given (Codex's openai-api-key) is authenticated so.
    const keyed = guestScene(h, 'ts', ['--env-auth']);
    keyed.write({ pass_env: ['GUEST_API_KEY'] });
    const fourth = await daemonFor(keyed, { GUEST_API_KEY: SECRET });
    await fourth.client.call('session.create', { session_id: 'k' });
    expect(replyOf(await run(fourth.client, 'k', 'hello'))).to.equal('guest: hello');
  });

  it('an interrupt is session/cancel; a guest that ignores it is ended after cancel_timeout_s; both turns end interrupted', async () => {
    const scene = guestScene(h);
    scene.write({ cancel_timeout_s: 1 });
    const { client } = await daemonFor(scene);
    await client.call('session.create', { session_id: 'i' });
    const submitted = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'i', text: 'slow' });
    await client.until(() => lastTurn(client, 'i').filter((e) => e.type === 'message.delta').length >= 3, 'some of the slow reply');
    const pid = scene.guests()[0]!;
    await client.call('session.interrupt', { session_id: 'i', turn_id: submitted.turn_id });
    const end = await client.nextEvent('turn.end', 'i', (e) => e.payload['turn_id'] === submitted.turn_id);
    expect(end.payload['interrupted']).to.equal(true);
    expect(scene.guests()).to.deep.equal([pid]); // a guest that stops when asked keeps its session live

    const stubborn = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'i', text: 'stubborn' });
    await client.until(() => lastTurn(client, 'i').filter((e) => e.type === 'message.delta').length >= 3, 'some of the stubborn reply');
    const asked = Date.now();
    await client.call('session.interrupt', { session_id: 'i', turn_id: stubborn.turn_id });
    const stubbornEnd = await client.nextEvent('turn.end', 'i', (e) => e.payload['turn_id'] === stubborn.turn_id);
    expect(stubbornEnd.payload['interrupted']).to.equal(true);
    expect(Date.now() - asked).to.be.within(900, 6_000);
    expect(await scene.gone([pid], 5_000)).to.equal(true);
    expect(replyOf(await run(client, 'i', 'memory'))).to.equal('seen: slow | stubborn | memory');
  });

  it('live sessions are bounded (least recently used released first) and released when idle; kill -9 of the host leaves no guest, and the session loads again', async () => {
    const scene = guestScene(h);
    scene.write({ max_live_sessions: 2, idle_secs: 3 });
    const { daemon, client } = await daemonFor(scene);
    for (const sid of ['a', 'b', 'c']) await client.call('session.create', { session_id: sid });
    const processOf = async (sid: string): Promise<number> => {
      const before = new Set(scene.guests());
      await run(client, sid, 'pid');
      return scene.guests().find((pid) => !before.has(pid))!;
    };
    const pidA = await processOf('a');
    const pidB = await processOf('b');
    const pidC = await processOf('c');
    expect(await scene.gone([pidA], 5_000)).to.equal(true); // a: the least recently used
    expect(scene.guests().sort()).to.deep.equal([pidB, pidC].sort());
    expect(replyOf(await run(client, 'a', 'memory'))).to.equal('seen: pid | memory'); // loaded again
    expect(await scene.gone([pidB], 5_000)).to.equal(true);
    // Idle past idle_secs: every live session is released.
    expect(await scene.gone(scene.guests(), 8_000)).to.equal(true);
    expect(scene.guests()).to.deep.equal([]);

    await run(client, 'a', 'pid');
    await run(client, 'b', 'pid');
    const live = scene.guests();
    expect(live).to.have.length(2);
    process.kill(await hostPid(client), 'SIGKILL');
    const killed = Date.now();
    expect(await scene.gone(live, 5_000)).to.equal(true);
    expect(Date.now() - killed).to.be.below(5_000);
    await hostReady(daemon, 2);
    expect(replyOf(await run(client, 'a', 'memory'))).to.equal('seen: pid | memory | pid | memory');
  });

  it('a guest that cannot load starts anew and says so (status.update context)', async () => {
    const scene = guestScene(h, 'ts', ['--no-load']);
    const { client } = await daemonFor(scene);
    await client.call('session.create', { session_id: 'n' });
    await run(client, 'n', 'one');
    await run(client, 'n', 'crash');
    const fresh = await run(client, 'n', 'memory');
    const context = fresh.find((e) => e.type === 'status.update');
    expect(context?.payload['kind']).to.equal('context');
    expect(String(context?.payload['text'])).to.match(/starts without its memory of the \d+ earlier messages: it cannot load a session/, String(context?.payload['text']));
    expect(replyOf(fresh)).to.equal('seen: memory');
  });

  it("a fork at its source's last turn forks the guest's session (ACP session/fork: its memory comes along, in its own home); a fork at an earlier turn, or after the source moved on, starts anew and says so", async () => {
    const scene = guestScene(h, 'ts', ['--fork']);
    const { daemon, client } = await daemonFor(scene);
    await client.call('session.create', { session_id: 'src' });
    await run(client, 'src', 'one');
    await run(client, 'src', 'two');
    const fork = async (sid: string, at?: string) => client.call('session.fork', { session_id: 'src', new_session_id: sid, ...(at === undefined ? {} : { at_turn_id: at }) });
    const contextOf = (events: readonly EventParams[]) => events.filter((e) => e.type === 'status.update' && e.payload['kind'] === 'context').map((e) => String(e.payload['text']));

    await fork('last');
    const forked = await run(client, 'last', 'memory');
    expect(replyOf(forked), 'the guest forked the source session').to.equal('seen: one | two | memory');
    expect(contextOf(forked)).to.deep.equal([]);
    expect(replyOf(await run(client, 'src', 'memory')), 'the source goes on with its own memory').to.equal('seen: one | two | memory');

    const { messages } = await client.call<{ messages: { turn_id: string | null }[] }>('session.history', { session_id: 'src' });
    await fork('early', messages[0]!.turn_id!);
    const early = await run(client, 'early', 'memory');
    expect(replyOf(early)).to.equal('seen: memory');
    expect(contextOf(early)).to.have.length(1);
    expect(contextOf(early)[0]).to.match(/starts without its memory of the 2 earlier messages: it has no session of this branch/);

    await fork('stale');
    await run(client, 'src', 'three');
    const stale = await run(client, 'stale', 'memory');
    expect(replyOf(stale), 'the source moved on after the fork: its guest session is not the fork\'s line').to.equal('seen: memory');
    expect(contextOf(stale)).to.have.length(1);

    // The fork's guest session is its own, kept with it: loaded again after kill -9 of the host.
    process.kill(await hostPid(client), 'SIGKILL');
    await hostReady(daemon, 2);
    expect(replyOf(await run(client, 'last', 'memory'))).to.equal('seen: one | two | memory | memory');
  });

  it('the Python example (standard library only): a reply, a command run with permission in the session folder, its memory after kill -9', async () => {
    const scene = guestScene(h, 'python');
    const { daemon, client } = await daemonFor(scene);
    const work = join(scene.dir, 'work');
    await client.call('session.create', { session_id: 'py', cwd: scene.dir });
    expect(replyOf(await run(client, 'py', 'hello'))).to.equal('python guest: hello');
    await client.call('prompt.submit', { session_id: 'py', text: `run mkdir ${work} && pwd` });
    await client.until(() => client.requests.length === 1, 'the approval');
    expect(client.requests[0]!.params).to.deep.include({ tool: 'acp_execute', question: `mkdir ${work} && pwd` });
    client.rpc.respond(client.requests[0]!.id, { result: { approved: true } });
    await client.until(() => lastTurn(client, 'py').some((e) => e.type === 'turn.end'), 'the run');
    expect(replyOf(lastTurn(client, 'py'))).to.equal(`ran mkdir ${work} && pwd: ${scene.dir}`);
    expect(filesUnder(scene.dir).length).to.be.greaterThan(0);

    process.kill(await hostPid(client), 'SIGKILL');
    await hostReady(daemon, 2);
    expect(replyOf(await run(client, 'py', 'history'))).to.equal(`seen: hello | run mkdir ${work} && pwd | history`);
  });

  for (const mode of ['required', 'off'] as const) {
    it(`kill -9 of the daemon and the host together (sandbox.mode ${mode}): the Python guest and what it started are gone, at once or at the next start`, async () => {
      const scene = guestScene(h, 'python');
      scene.write({}, { approval: { default: 'allow' }, sandbox: { mode } });
      const { daemon, client } = await daemonFor(scene);
      await client.call('session.create', { session_id: 'py' });
      // A process the guest leaves running in the background: an orphan once the guest dies. It
      // says when it runs (a file in the session's folder): until then, the shell's child that is
      // to become it still bears the shell's command line, the marker included (a second process).
      const marker = `${scene.state}-orphan`;
      await run(client, 'py', `run sh -c 'touch orphan-started; sleep 600; : ${marker}' >/dev/null 2>&1 &`);
      await fileWhere(join(scene.home, 'workspaces', 'owner', 'py', 'orphan-started'), () => true, 'the orphan to start', 5_000);
      const guests = scene.guests();
      expect(guests).to.have.length(1);
      const orphan = processesNaming([marker]);
      expect(orphan).to.have.length(1);
      const host = await hostPid(client);
      client.close();
      for (const pid of [daemon.process.pid, host]) process.kill(pid, 'SIGKILL');
      expect(await scene.gone(guests, 5_000), 'the guest dies with its host').to.equal(true);
      await daemon.process.waitExit(10_000);
      if (mode === 'required') {
        expect(await scene.gone(orphan, 5_000), 'the sandbox goes whole').to.equal(true);
      } else {
        // Unconfined, what the guest started outlives it; the next daemon ends it before its host starts.
        expect(processesNaming([marker])).to.deep.equal(orphan);
        const again = await startDaemon(h, guestArgs(scene), {}, scene.home);
        expect(await scene.gone(orphan, 5_000), 'ended by the next daemon').to.equal(true);
        expect(again.process.stderr).to.match(/"reconcile":"not-running".*"detail":"ended \d+ process\(es\) it left behind"/);
      }
    });
  }

  it('--agent acp without an acp key, or with a bad one, exits 78 naming the key path', async () => {
    const scene = guestScene(h);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(scene.config, JSON.stringify({ model: 'm' }));
    const missing = await h.runCli(['daemon', '--home', scene.home, ...guestArgs(scene)]);
    expect(missing.code).to.equal(78);
    expect(missing.stderr).to.include(`${scene.config}: acp: missing`);
    scene.write({ max_live_sessions: 0 });
    const bad = await h.runCli(['daemon', '--home', scene.home, ...guestArgs(scene)]);
    expect(bad.code).to.equal(78);
    expect(bad.stderr).to.include(`${scene.config}: acp.max_live_sessions:`);
    writeFileSync(scene.config, JSON.stringify({ acp: { command: 'x', shell: true } }));
    const unknown = await h.runCli(['start', '--home', scene.home, ...guestArgs(scene)]);
    expect(unknown.code).to.not.equal(0);
    expect(unknown.stderr).to.include('acp.shell: unknown key');
    // The sandbox's keys (AGENT.md §7), validated with the rest.
    for (const [sandbox, path] of [
      [{ memory_mb: 'lots' }, 'sandbox.memory_mb: expected a number'],
      [{ mode: 'loose' }, 'sandbox.mode:'],
      [{ allow_hosts: ['https://example.com/'] }, 'sandbox.allow_hosts.0: expected a host or host:port'],
      [{ walls: true }, 'sandbox.walls: unknown key'],
    ] as const) {
      scene.write({}, { sandbox });
      const refused = await h.runCli(['daemon', '--home', scene.home, ...guestArgs(scene)]);
      expect(refused.code, JSON.stringify(sandbox)).to.equal(78);
      expect(refused.stderr).to.include(`${scene.config}: ${path}`);
    }
  });
});
