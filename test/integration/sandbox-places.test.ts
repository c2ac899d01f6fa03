// The sandbox as people's machines are (AGENT.md §7: "What the agent needs is visible", "Hidden
// wherever they are"): agents installed under a person's home (a script of their own, a Node
// install prefix as nvm makes one) start and work while the rest of that home stays hidden; what
// is still out of reach fails the turn naming the sandbox; a workspaces root outside the turnhost
// home (under /var/tmp) and `sandbox.hidden` are hidden whole; `status` lists the folders an admin
// named where every agent can read them. Real daemons, real guests, bubblewrap.
import { expect } from 'chai';
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { connect, type TurnhostClient } from '../../client/index.js';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { PYTHON_GUEST, TS_GUEST } from '../helpers/guests.js';
import { Harness, REPO_ROOT } from '../helpers/processes.js';

/** Where /var/tmp's folders go: a place no sandbox hides by itself. */
const VAR_TMP = '/var/tmp';

describe('the sandbox as people\'s machines are: agents under a home, workspaces wherever they lie (real daemons, bubblewrap)', function () {
  this.timeout(120_000);
  const h = new Harness();
  const clients: TurnhostClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
  });

  function writeConfig(dir: string, config: object): string {
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify(config));
    return file;
  }

  /** One turn's end: its reply, or its error's message and reason. */
  async function turn(client: TurnhostClient, sid: string, text: string): Promise<{ reply: string } | { error: string; reason: string }> {
    let reply = '';
    for await (const event of client.turn(sid, text)) {
      if (event.type === 'message.delta') reply += String(event.payload.text);
      if (event.type === 'turn.error') return { error: String(event.payload.message), reason: String(event.payload.reason) };
    }
    return { reply };
  }

  /** Runs `command` in the session's sandbox through the Python guest: its output. */
  async function run(client: TurnhostClient, sid: string, command: string): Promise<string> {
    const ended = await turn(client, sid, `run ( ${command} ) 2>&1`);
    if ('error' in ended) throw new Error(`the turn failed: ${ended.error}`);
    const prefix = `ran ( ${command} ) 2>&1: `;
    expect(ended.reply.startsWith(prefix), ended.reply).to.equal(true);
    return ended.reply.slice(prefix.length);
  }

  async function owner(daemon: Daemon): Promise<TurnhostClient> {
    const client = await connect({ socket: daemon.socket });
    clients.push(client);
    return client;
  }

  it('a guest script and a Node install prefix under a person\'s home start and work; ~/.ssh beside them stays hidden', async () => {
    // A person's home stands in for /home/<user>: a folder in this user's own home, which the sandbox hides (/home, /root).
    const person = h.tempDir('.turnhost-person-', homedir());
    mkdirSync(join(person, '.ssh'), { mode: 0o700 });
    writeFileSync(join(person, '.ssh', 'id_ed25519'), 'ssh-key-not-for-agents');
    const script = join(person, 'agent', 'guest.py');
    mkdirSync(dirname(script));
    copyFileSync(PYTHON_GUEST, script);

    const dir = h.tempDir('turnhost-places-');
    const python = await startDaemon(h, ['--agent', 'acp', '--agent-config', writeConfig(dir, { acp: { command: 'python3', args: [script] }, approval: { default: 'allow' } })], {}, join(dir, 'python'));
    const ann = await owner(python);
    await ann.createSession({ session_id: 'mine' });
    expect(await run(ann, 'mine', 'echo works')).to.equal('works');
    expect(await run(ann, 'mine', `cat ${join(person, '.ssh', 'id_ed25519')}; echo "exit=$?"`)).to.match(/No such file or directory\nexit=1$/);
    expect((await run(ann, 'mine', `ls -A ${person}`)).split('\n')).to.deep.equal(['agent']);

    // `npm install -g` under nvm: bin/ holds links into lib/node_modules, and the script's `#!/usr/bin/env node` finds bin/node.
    const prefix = join(person, '.nvm', 'versions', 'node', 'v20');
    const modules = join(prefix, 'lib', 'node_modules');
    mkdirSync(join(prefix, 'bin'), { recursive: true });
    symlinkSync(process.execPath, join(prefix, 'bin', 'node'));
    mkdirSync(join(modules, 'fixture-guest'), { recursive: true });
    writeFileSync(join(modules, 'fixture-guest', 'guest.mjs'), `#!/usr/bin/env node\n${readFileSync(TS_GUEST, 'utf8')}`);
    chmodSync(join(modules, 'fixture-guest', 'guest.mjs'), 0o755);
    for (const pkg of ['@agentclientprotocol/sdk', 'zod']) cpSync(join(REPO_ROOT, 'node_modules', pkg), join(modules, pkg), { recursive: true });
    symlinkSync('../lib/node_modules/fixture-guest/guest.mjs', join(prefix, 'bin', 'fixture-guest'));
    const nvmConfig = writeConfig(dir, { acp: { command: 'fixture-guest', args: ['--scene', join(person, 'scene')] } });
    const nvm = await startDaemon(h, ['--agent', 'acp', '--agent-config', nvmConfig], { PATH: `${join(prefix, 'bin')}:${process.env.PATH}` }, join(dir, 'nvm'));
    const viaNvm = await owner(nvm);
    await viaNvm.createSession({ session_id: 'nvm' });
    expect(await turn(viaNvm, 'nvm', 'hello')).to.deep.equal({ reply: 'guest: hello' });
  });

  it('a path the agent names that stays hidden fails the turn naming the sandbox and what to do, never a bare "No such file"', async () => {
    const dir = h.tempDir('turnhost-places-');
    const secrets = join(dir, 'secrets');
    mkdirSync(secrets);
    copyFileSync(PYTHON_GUEST, join(secrets, 'guest.py'));
    const cases = [
      { acp: { command: 'python3', args: [join(secrets, 'guest.py')] }, sandbox: { hidden: [secrets] }, says: `${join(secrets, 'guest.py')} is hidden by the sandbox (AGENT.md §7): it lies in a place of sandbox.hidden` },
      { acp: { command: 'python3', args: [PYTHON_GUEST, '/root'] }, says: '/root is hidden by the sandbox (AGENT.md §7): add its folder to sandbox.read_only' },
    ];
    for (const [i, { says, ...config }] of cases.entries()) {
      const daemon = await startDaemon(h, ['--agent', 'acp', '--agent-config', writeConfig(dir, config)], {}, join(dir, `home-${i}`));
      const client = await owner(daemon);
      await client.createSession({ session_id: 'hidden' });
      expect(await turn(client, 'hidden', 'hello')).to.deep.equal({ error: says, reason: 'upstream' });
    }
  });

  it('a workspaces root under /var/tmp and sandbox.hidden are hidden whole; status lists an admin\'s folder every agent can read', async () => {
    const root = h.tempDir('turnhost-workspaces-', VAR_TMP);
    const backup = h.tempDir('turnhost-backup-', VAR_TMP);
    writeFileSync(join(backup, 'backup.txt'), 'backup-not-for-agents');
    const open = h.tempDir('turnhost-open-', VAR_TMP);
    writeFileSync(join(open, 'open.txt'), 'readable');
    const dir = h.tempDir('turnhost-places-');
    const config = writeConfig(dir, { acp: { command: 'python3', args: [PYTHON_GUEST] }, approval: { default: 'allow' }, sandbox: { workspaces_root: root, hidden: [backup] } });
    const daemon = await startDaemon(h, ['--agent', 'acp', '--agent-config', config, '--listen', '127.0.0.1:0'], {}, join(dir, 'home'));
    const admin = await owner(daemon);
    const url = JSON.parse((await h.runCli(['status', '--home', daemon.home, '--json'])).stdout).http.url as string;
    const member = async (name: string) => {
      const client = await connect({ url, token: (await h.runCli(['user', 'add', name, '--home', daemon.home])).stdout.trim() });
      clients.push(client);
      return client;
    };
    const alice = await member('alice');
    const bob = await member('bob');
    await alice.createSession({ session_id: 'alices' });
    await run(alice, 'alices', 'echo alice-secret > secret.txt');
    expect(readFileSync(join(root, 'alice', 'alices', 'secret.txt'), 'utf8')).to.equal('alice-secret\n');

    await bob.createSession({ session_id: 'bobs' });
    expect(await run(bob, 'bobs', 'pwd')).to.equal(join(root, 'bob', 'bobs'));
    expect((await run(bob, 'bobs', `ls -A ${root}`)).split('\n')).to.deep.equal(['bob']);
    expect(await run(bob, 'bobs', `cat ${join(root, 'alice', 'alices', 'secret.txt')}`)).to.match(/No such file or directory$/);
    expect(await run(bob, 'bobs', `ls -A ${backup}`)).to.equal('');
    // /var/tmp itself is not hidden: what lies there outside the two is readable, as all of / is.
    expect(await run(bob, 'bobs', `cat ${join(open, 'open.txt')}`)).to.equal('readable');

    expect((await TestClient.connect(daemon).then(async (c) => {
      const status = await c.call<{ sandbox: { exposed: string[] } }>('host.status');
      c.close();
      return status.sandbox.exposed;
    }))).to.deep.equal([]);
    await admin.createSession({ session_id: 'exposed', cwd: open });
    const shown = await h.runCli(['status', '--home', daemon.home, '--json']);
    expect((JSON.parse(shown.stdout) as { sandbox: { exposed: string[] } }).sandbox.exposed).to.deep.equal([open]);
    expect((await h.runCli(['status', '--home', daemon.home])).stdout).to.include(`readable by every agent: ${open}`);
  });
});
