// Several agents on one daemon, chosen per session (AGENT.md §8), over real processes: a catalogue
// of the script agent, a model agent (against a fake OpenAI server on 127.0.0.1) with two models,
// two sandboxed Python guests with keys and homes of their own, and an agent for admins only. Each
// door chooses; each agent is its own (environment, home template, the bound across guests); a
// reload changes the catalogue without a restart, and a file that does not validate changes nothing.
import { expect } from 'chai';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type TurnhostClient } from '../../client/index.js';
import { hostReady, startDaemon, type Daemon } from '../helpers/daemon.js';
import { Editor } from '../helpers/editor.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { PYTHON_GUEST } from '../helpers/guests.js';
import { httpRequest } from '../helpers/http.js';
import { Harness, processesNaming } from '../helpers/processes.js';
import { waitGone } from '../../persistence/proc.js';

const KEY_A = 'key-a-0123456789abcdef';
const KEY_B = 'key-b-fedcba9876543210';

interface Scene {
  dir: string;
  daemon: Daemon;
  fake: FakeOpenAI;
  url: string;
  token: string;
  admin: TurnhostClient;
  bob: TurnhostClient;
  /** On every guest's command line: the scene's guests are counted by it. */
  marker: string;
  writeConfig(config: object): void;
}

/** The catalogue the scene starts with; `more` replaces or adds agents. */
function catalogue(scene: Pick<Scene, 'dir' | 'marker'> & { baseUrl: string }, more: Record<string, unknown> = {}): object {
  const template = join(scene.dir, 'template');
  return {
    approval: { default: 'allow' },
    default_agent: 'quick',
    max_live_guests: 2,
    agents: {
      quick: { kind: 'script', label: 'Quick', description: 'echoes, for demos' },
      model: { kind: 'openai', label: 'A model', description: 'for quick questions', model: 'm1', models: ['m1', 'm2'], base_url: scene.baseUrl },
      'guest-a': { kind: 'acp', acp: { command: 'python3', args: [PYTHON_GUEST, scene.marker], pass_env: ['KEY_A'] } },
      'guest-b': { kind: 'acp', acp: { command: 'python3', args: [PYTHON_GUEST, scene.marker], pass_env: ['KEY_B'] }, home_template: template },
      secret: { kind: 'script', label: 'Admins only', members: false },
      ...more,
    },
  };
}

describe('several agents on one daemon, chosen per session (AGENT.md §8; real processes)', function () {
  this.timeout(120_000);
  const h = new Harness();
  const clients: TurnhostClient[] = [];
  let fake: FakeOpenAI | null = null;
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await fake?.close();
    fake = null;
    await h.cleanup();
  });

  async function scene(): Promise<Scene> {
    fake = await FakeOpenAI.start();
    const dir = h.tempDir('turnhost-agents-');
    const marker = join(dir, 'guests');
    mkdirSync(join(dir, 'template'));
    writeFileSync(join(dir, 'template', 'AGENTS.md'), 'configured once for every session\n');
    const file = join(dir, 'agent.json');
    const writeConfig = (config: object) => writeFileSync(file, JSON.stringify(config));
    writeConfig(catalogue({ dir, marker, baseUrl: fake.baseUrl }));
    const daemon = await startDaemon(h, ['--agent-config', file, '--listen', '127.0.0.1:0'], { KEY_A, KEY_B }, join(dir, 'home'));
    const admin = await connect({ socket: daemon.socket });
    clients.push(admin);
    const status = JSON.parse((await h.runCli(['status', '--home', daemon.home, '--json'])).stdout) as { http: { url: string } };
    const token = (await h.runCli(['user', 'add', 'bob', '--home', daemon.home])).stdout.trim();
    const bob = await connect({ url: status.http.url, token });
    clients.push(bob);
    return { dir, daemon, fake, url: status.http.url, token, admin, bob, marker, writeConfig };
  }

  async function turn(client: TurnhostClient, sid: string, text: string): Promise<{ reply: string } | { error: string; reason: string }> {
    let reply = '';
    for await (const event of client.turn(sid, text)) {
      if (event.type === 'message.delta') reply += String(event.payload.text);
      if (event.type === 'turn.error') return { error: String(event.payload.message), reason: String(event.payload.reason) };
    }
    return { reply };
  }

  async function refused(made: Promise<unknown>): Promise<{ code: number; message: string }> {
    try {
      await made;
    } catch (err) {
      return { code: (err as { code: number }).code, message: (err as Error).message };
    }
    throw new Error('it was not refused');
  }

  /** The scene's guest processes (not the sandboxes around them). */
  function guests(marker: string): number[] {
    return processesNaming([marker]).filter((pid) => !/(^|\/)(bwrap|sh|setpriv)$/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? ''));
  }

  it('lists what each caller may use at every door; session.create chooses, refuses an unknown agent, a closed one and a member\'s model outside its models; the session keeps its agent and model', async () => {
    const s = await scene();
    const names = (list: { agents: { name: string }[] }) => list.agents.map((a) => a.name);
    const all = await s.admin.agents();
    expect(all.default).to.equal('quick');
    expect(names(all)).to.deep.equal(['quick', 'model', 'guest-a', 'guest-b', 'secret']);
    expect(all.agents.find((a) => a.name === 'model')).to.deep.include({ label: 'A model', description: 'for quick questions', kind: 'openai', models: ['m1', 'm2'], members: true, sandbox: { mode: 'unused' } });
    expect(all.agents.find((a) => a.name === 'guest-a')!.sandbox.mode).to.equal('required');
    expect(names(await s.bob.agents()), 'a member sees those open to members').to.deep.equal(['quick', 'model', 'guest-a', 'guest-b']);
    const rest = await httpRequest(Number(new URL(s.url).port), { path: '/v1/agents', headers: { authorization: `Bearer ${s.token}` } });
    expect(names(rest.json() as { agents: { name: string }[] })).to.deep.equal(['quick', 'model', 'guest-a', 'guest-b']);
    const cli = JSON.parse((await h.runCli(['agents', '--home', s.daemon.home, '--json'])).stdout) as { agents: { name: string }[] };
    expect(names(cli)).to.deep.equal(names(all));
    expect((await h.runCli(['agents', '--home', s.daemon.home])).stdout).to.match(/quick \(default\)\s+script/);

    expect(await refused(s.bob.createSession({ agent: 'nope' }))).to.deep.equal({ code: -32602, message: 'unknown agent nope (agents: quick, model, guest-a, guest-b, secret)' });
    expect((await refused(s.bob.createSession({ agent: 'secret' }))).code).to.equal(4003);
    expect(await refused(s.bob.createSession({ agent: 'model', model: 'm3' }))).to.deep.equal({ code: -32602, message: "invalid params: model m3 is not one of agent model's (m1, m2)" });
    expect((await refused(s.bob.createSession({ agent: 'quick', model: 'm1' }))).message).to.match(/agent quick \(script\) has no models/);

    await s.bob.createSession({ session_id: 'bobs-model', agent: 'model', model: 'm2' });
    await s.bob.createSession({ session_id: 'bobs-default' });
    await s.admin.createSession({ session_id: 'admins-secret', agent: 'secret' });
    s.fake!.reply({ text: ['from ', 'the model'] });
    expect(await turn(s.bob, 'bobs-model', 'which model?')).to.deep.equal({ reply: 'from the model' });
    expect(s.fake!.requests.at(-1)!.body.model, 'the session\'s model reached the server').to.equal('m2');
    expect(await turn(s.bob, 'bobs-default', 'echo me')).to.deep.equal({ reply: 'echo me' });
    // A member's /model is held to the agent's models; an admin's is not.
    expect((await refused(s.bob.control('slash.model', 'bobs-model', { model: 'gpt-x' }))).message).to.match(/model gpt-x is not one of agent model's/);

    const listed = new Map((await s.bob.listSessions()).sessions.map((x) => [x.session_id, [x.agent, x.model]]));
    expect(Object.fromEntries(listed)).to.deep.equal({ 'bobs-model': ['model', 'm2'], 'bobs-default': ['quick', null] });
    const resumed = await s.admin.resumeSession('admins-secret');
    expect([resumed.agent, resumed.model]).to.deep.equal(['secret', null]);
    const stored = JSON.parse((await h.runCli(['sessions', '--home', s.daemon.home, '--json'])).stdout) as { session_id: string; agent: string; model: string | null }[];
    expect(stored.find((x) => x.session_id === 'bobs-model')).to.deep.include({ agent: 'model', model: 'm2' });

    // A fork keeps its source's agent, or names another; usage groups by agent.
    const kept = await s.bob.forkSession('bobs-model', { new_session_id: 'fork-kept' });
    const other = await s.bob.forkSession('bobs-model', { new_session_id: 'fork-quick', agent: 'quick' });
    const agentOf = async (sid: string) => (await s.bob.resumeSession(sid)).agent;
    expect([await agentOf(kept.session_id), await agentOf(other.session_id)]).to.deep.equal(['model', 'quick']);
    expect((await refused(s.bob.forkSession('bobs-model', { agent: 'secret' }))).code).to.equal(4003);
    expect(await turn(s.bob, 'fork-quick', 'now the script agent')).to.deep.equal({ reply: 'now the script agent' });
    const usage = JSON.parse((await h.runCli(['usage', '--home', s.daemon.home, '--by', 'agent', '--json'])).stdout) as { rows: { key: string; turns: number }[] };
    expect(Object.fromEntries(usage.rows.map((r) => [r.key, r.turns]))).to.deep.equal({ model: 1, quick: 2 });
  });

  it('each agent is its own: a guest gets only its own pass_env; a new home starts as the home_template; max_live_guests bounds guests across agents', async () => {
    const s = await scene();
    const run = async (sid: string, command: string) => {
      const ended = await turn(s.admin, sid, `run ${command}`);
      if ('error' in ended) throw new Error(ended.error);
      return ended.reply.replace(`ran ${command}: `, '');
    };
    // No guest is made yet: the daemon tried the sandbox after its host's hello, and shows what it found.
    const status = await s.admin.hostStatus();
    expect(status.sandbox).to.deep.include({ mode: 'required' });
    expect(status.sandbox?.mechanism).to.match(/^bubblewrap \d+\.\d+/);
    await s.admin.createSession({ session_id: 'a1', agent: 'guest-a' });
    await s.admin.createSession({ session_id: 'b1', agent: 'guest-b' });
    expect(await run('a1', 'env | cut -d= -f1 | grep ^KEY_ | sort')).to.equal('KEY_A');
    const a1Guest = guests(s.marker);
    expect(await run('b1', 'env | cut -d= -f1 | grep ^KEY_ | sort')).to.equal('KEY_B');
    const b1Guest = guests(s.marker).filter((pid) => !a1Guest.includes(pid));
    expect(b1Guest).to.have.length(1);
    expect(await run('b1', 'cat "$HOME/AGENTS.md"')).to.equal('configured once for every session');
    expect(await run('a1', 'ls -A "$HOME"'), 'guest-a has no template').to.not.include('AGENTS.md');
    // A third guest session, of either agent: at most max_live_guests (2) guests live at once, the
    // least recently used of any agent released (b1's: a1 ran after it).
    await s.admin.createSession({ session_id: 'a2', agent: 'guest-a' });
    expect(await run('a2', 'echo third')).to.equal('third');
    await s.admin.agents().then((list) => expect(list.agents.reduce((sum, a) => sum + (a.name.startsWith('guest') ? a.live_sessions : 0), 0)).to.equal(2));
    expect(await waitGone(b1Guest[0]!, 5_000), "b1's guest, the least recently used, is ended").to.equal(true);
    expect(guests(s.marker)).to.have.length(2);
  });

  it('turnhost agents reload (and SIGHUP): a file that does not validate exits 78 and changes nothing; a valid one applies to new sessions at once, a changed guest is released when idle, and a session whose agent left fails with reason agent', async () => {
    const s = await scene();
    await s.admin.createSession({ session_id: 'q', agent: 'quick' });
    await s.admin.createSession({ session_id: 'g', agent: 'guest-a' });
    expect(await turn(s.admin, 'g', 'hello')).to.deep.equal({ reply: 'python guest: hello' });
    const before = guests(s.marker);
    expect(before).to.have.length(1);

    s.writeConfig({ ...catalogue({ ...s, baseUrl: s.fake.baseUrl }), agents: { quick: { kind: 'script' }, codex: { kind: 'acp', acp: { command: 7 } } } });
    const bad = await h.runCli(['agents', 'reload', '--home', s.daemon.home]);
    expect(bad.code).to.equal(78);
    expect(bad.stderr.trim()).to.equal(`turnhost agents reload: ${join(s.dir, 'agent.json')}: agents.codex.acp.command: expected a string; the daemon keeps its agents`);
    expect((await s.admin.agents()).agents.map((a) => a.name)).to.include('guest-a');

    // quick leaves, fresh comes, guest-a's definition changes (its key).
    const next = catalogue({ ...s, baseUrl: s.fake.baseUrl }) as { agents: Record<string, unknown>; default_agent?: string };
    const agents = { ...next.agents, fresh: { kind: 'script', label: 'Fresh' }, 'guest-a': { kind: 'acp', acp: { command: 'python3', args: [PYTHON_GUEST, s.marker], pass_env: ['KEY_B'] } } } as Record<string, unknown>;
    delete agents['quick'];
    s.writeConfig({ ...next, default_agent: 'fresh', agents });
    const reloaded = await h.runCli(['agents', 'reload', '--home', s.daemon.home]);
    expect(reloaded.code, reloaded.stderr).to.equal(0);
    expect(reloaded.stdout).to.match(/^reloaded: fresh, model, guest-a, guest-b, secret \(default fresh\)/);
    await s.admin.createSession({ session_id: 'f', agent: 'fresh' });
    expect(await turn(s.admin, 'f', 'new at once')).to.deep.equal({ reply: 'new at once' });
    expect(await turn(s.admin, 'q', 'still there?')).to.deep.equal({ error: "agent quick is not in this daemon's catalogue", reason: 'agent' });
    expect((await s.admin.history('q')).messages.length, 'its history is kept').to.be.greaterThan(0);
    await s.admin.agents().then((list) => expect(list.agents.find((a) => a.name === 'guest-a')!.live_sessions).to.equal(0));
    expect(await waitGone(before[0]!, 5_000), 'the idle guest of the old definition is released').to.equal(true);
    const ran = await turn(s.admin, 'g', 'run env | cut -d= -f1 | grep ^KEY_');
    expect(ran).to.deep.equal({ reply: 'ran env | cut -d= -f1 | grep ^KEY_: KEY_B' });

    // SIGHUP reads the file again, as the command does.
    s.writeConfig({ ...next, default_agent: 'fresh', agents: { ...agents, later: { kind: 'script' } } });
    process.kill(s.daemon.process.pid, 'SIGHUP');
    await s.daemon.process.logged(/"name":"agents-reload".*agent config reloaded \(SIGHUP\)/, 10_000);
    expect((await s.admin.agents()).agents.map((a) => a.name)).to.include('later');
  });

  it('a host restarted after a crash serves the catalogue its daemon validated, not a file broken since (catalogue-handoff.ts)', async () => {
    const s = await scene();
    await s.admin.createSession({ session_id: 'g', agent: 'guest-a' });
    s.writeConfig({ agents: { quick: { kind: 'script' }, codex: { kind: 'acp', acp: { command: 7 } } } });
    process.kill((await s.admin.hostStatus()).host.pid!, 'SIGKILL');
    await hostReady(s.daemon, 2);
    expect((await s.admin.agents()).agents.map((a) => a.name)).to.deep.equal(['quick', 'model', 'guest-a', 'guest-b', 'secret']);
    expect(await turn(s.admin, 'g', 'after the crash')).to.deep.equal({ reply: 'python guest: after the crash' });
  });

  it('a daemon run by hand starts its host while it validates the file: one that does not validate ends both, exit 78 naming the key, and leaves no process', async () => {
    const dir = h.tempDir('turnhost-catalogue-refused-');
    const home = join(dir, 'home');
    const file = join(dir, 'agents.json');
    writeFileSync(file, JSON.stringify({ agents: { quick: { kind: 'script' }, codex: { kind: 'acp', acp: { command: 7 } } } }));
    const refused = await h.runCli(['daemon', '--home', home, '--agent-config', file], { TURNHOST_LOG_LEVEL: 'info' });
    expect(refused.code, refused.stderr).to.equal(78);
    expect(refused.stderr).to.include(`turnhost daemon: ${file}: agents.codex.acp.command: `);
    expect(refused.stderr.indexOf('"msg":"host spawned"'), 'the host was started before the file was read').to.be.within(0, refused.stderr.indexOf('turnhost daemon: '));
    expect(processesNaming([home]), 'no host left behind').to.deep.equal([]);
  });

  it('every door chooses: chat --agent, POST /v1/sessions, AG-UI /v1/ag-ui/{agent}, and turnhost acp\'s session config options (fixed at the first prompt)', async () => {
    const s = await scene();
    const chat = await h.runCli(['chat', '--home', s.daemon.home, '--agent', 'model', '--session', 'by-chat', 'hi']);
    expect(chat.code, chat.stderr).to.equal(0);
    expect(chat.stdout).to.equal('ok\n');
    expect((await s.admin.resumeSession('by-chat')).agent).to.equal('model');
    const missing = await h.runCli(['chat', '--home', s.daemon.home, '--agent', 'nope', 'hi']);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.include('has no agent nope (its agents: quick, model, guest-a, guest-b, secret)');

    const port = Number(new URL(s.url).port);
    const auth = { authorization: `Bearer ${s.token}` };
    const made = await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: auth, body: { session_id: 'by-rest', agent: 'model', model: 'm2' } });
    expect(made.status, made.text).to.equal(201);
    expect(await s.admin.resumeSession('by-rest')).to.deep.include({ agent: 'model', model: 'm2' });
    const run = { threadId: 'by-ag-ui', runId: 'r1', messages: [{ id: 'm1', role: 'user', content: 'through AG-UI' }], tools: [], context: [], state: {}, forwardedProps: {} };
    const agUi = await httpRequest(port, { method: 'POST', path: '/v1/ag-ui/model', headers: auth, body: run });
    expect(agUi.text).to.include('RUN_FINISHED');
    expect((await s.admin.resumeSession('by-ag-ui')).agent).to.equal('model');

    const editor = await Editor.start(h, s.daemon.home, {});
    const created = await editor.agent.request('session/new', { cwd: s.dir, mcpServers: [] });
    const options = created.configOptions ?? [];
    expect(options.map((o) => o.id)).to.deep.equal(['agent']);
    const agentOption = options[0] as { currentValue: string; options: { value: string; name: string }[] };
    expect(agentOption.currentValue).to.equal('quick');
    expect(agentOption.options.map((o) => o.value)).to.deep.equal(['quick', 'model', 'guest-a', 'guest-b', 'secret']);
    const set = await editor.agent.request('session/set_config_option', { sessionId: created.sessionId, configId: 'agent', value: 'model' });
    expect(set.configOptions.map((o) => o.id), 'the model agent brings its models').to.deep.equal(['agent', 'model']);
    await editor.agent.request('session/set_config_option', { sessionId: created.sessionId, configId: 'model', value: 'm2' });
    await editor.agent.request('session/prompt', { sessionId: created.sessionId, prompt: [{ type: 'text', text: 'from the editor' }] });
    expect(s.fake.requests.at(-1)!.body.model).to.equal('m2');
    expect((await s.admin.resumeSession(created.sessionId)).agent).to.equal('model');
    const late = await editor.agent.request('session/set_config_option', { sessionId: created.sessionId, configId: 'agent', value: 'quick' }).catch((err: unknown) => err);
    expect(String((late as Error).message)).to.match(/fixed once its first prompt ran/);
  });
});
