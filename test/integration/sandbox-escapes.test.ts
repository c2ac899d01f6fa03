// The sandbox (AGENT.md §7) against an attacker: a member whose guest runs any command asked of
// it (the Python example, its commands allowed by policy), on a real daemon with --listen, other
// people's sessions beside it, and the turnhost home's secrets. Every escape the contract lists
// is tried from inside and must fail; what the agent needs (its folder, its home, an allowed
// host) must work. Then the daemon and the host are killed -9 together: nothing of any sandbox
// may be left 5 s later.
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { connect, type TurnhostClient } from '../../client/index.js';
import { readToken } from '../../edge/http-token.js';
import { waitGone } from '../../persistence/proc.js';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { logged, PYTHON_GUEST } from '../helpers/guests.js';
import { LoopbackServer } from '../helpers/loopback-server.js';
import { Harness, processesNaming } from '../helpers/processes.js';

const DAEMON_SECRET = 'not-for-agents-5c1f0e';

describe('the sandbox against a member who runs any command (real daemon, the Python guest, bubblewrap)', function () {
  this.timeout(120_000);
  const h = new Harness();
  const clients: TurnhostClient[] = [];
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const server of servers.splice(0)) await server.close();
    await h.cleanup();
  });

  /** A plain HTTP server on 127.0.0.1 that answers `reached <name>`. */
  async function httpServer(name: string): Promise<LoopbackServer> {
    const server = await LoopbackServer.start((_req, _body, res) => {
      res.writeHead(200).end(`reached ${name}`);
    });
    servers.push(server);
    return server;
  }

  /** An abstract unix socket of this process, as a host's service might hold one. */
  async function abstractSocket(name: string): Promise<void> {
    const server: Server = createServer((socket) => socket.end('abstract reached\n'));
    await new Promise<void>((resolve) => server.listen(`\0${name}`, resolve));
    servers.push({ close: () => new Promise((resolve) => server.close(() => resolve())) });
  }

  interface Scene {
    daemon: Daemon;
    home: string;
    edgePort: number;
    bob: TurnhostClient;
    alice: TurnhostClient;
  }

  async function scene(allowed: LoopbackServer): Promise<Scene> {
    const dir = h.tempDir('turnhost-escape-');
    const home = join(dir, 'home');
    const config = join(dir, 'agent.json');
    writeFileSync(config, JSON.stringify({
      acp: { command: 'python3', args: [PYTHON_GUEST, dir] },
      approval: { default: 'allow' },
      sandbox: { allow_hosts: [new URL(allowed.origin).host] },
    }));
    const daemon = await startDaemon(h, ['--agent', 'acp', '--agent-config', config, '--listen', '127.0.0.1:0'], { TURNHOST_TEST_SECRET: DAEMON_SECRET }, home);
    const owner = await TestClient.connect(daemon);
    const url = (await owner.call<{ http: { url: string } }>('host.status')).http.url;
    owner.close();
    const token = async (name: string) => (await h.runCli(['user', 'add', name, '--home', home])).stdout.trim();
    const bob = await connect({ url, token: await token('bob') });
    const alice = await connect({ url, token: await token('alice') });
    clients.push(bob, alice);
    return { daemon, home, edgePort: Number(new URL(url).port), bob, alice };
  }

  /** Runs `command` in the session's sandbox as the guest does: its output, or what the guest said. */
  async function run(client: TurnhostClient, sid: string, command: string): Promise<string> {
    let reply = '';
    for await (const event of client.turn(sid, `run ${command}`)) {
      if (event.type === 'message.delta') reply += String(event.payload.text);
      if (event.type === 'turn.error') throw new Error(`the turn failed: ${String(event.payload.message)}`);
    }
    const prefix = `ran ${command}: `;
    expect(reply.startsWith(prefix), reply).to.equal(true);
    return reply.slice(prefix.length);
  }

  it('every escape of AGENT.md §7 fails from inside; the folder, the home and an allowed host work; kill -9 of the daemon and the host leaves nothing', async () => {
    const allowed = await httpServer('allowed');
    const denied = await httpServer('denied');
    await abstractSocket('turnhost-escape-test');
    const s = await scene(allowed);
    const { home } = s;

    // Another member's session, with a file in its folder and one in its home.
    await s.alice.createSession({ session_id: 'alices' });
    await run(s.alice, 'alices', 'echo alice-secret > notes.txt && echo alice-memory > "$HOME/memory.txt"');
    expect(readFileSync(join(home, 'workspaces', 'alice', 'alices', 'notes.txt'), 'utf8')).to.equal('alice-secret\n');
    expect(readFileSync(join(home, 'agent-homes', 'alices', 'memory.txt'), 'utf8')).to.equal('alice-memory\n');

    await s.bob.createSession({ session_id: 'bobs' });
    const bobs = join(home, 'workspaces', 'bob', 'bobs');
    const own = (command: string) => run(s.bob, 'bobs', command);
    const token = readToken(home)!;

    // What must work: its own folder (read-write, at its path), its own home, an allowed host.
    expect(await own('pwd')).to.equal(bobs);
    expect(await own('echo made > made.txt && cat made.txt')).to.equal('made');
    expect(readFileSync(join(bobs, 'made.txt'), 'utf8')).to.equal('made\n');
    expect(await own('echo "$HOME" && echo kept > "$HOME/kept.txt" && cat "$HOME/kept.txt"')).to.equal(`${join(home, 'agent-homes', 'bobs')}\nkept`);
    expect(await own(`python3 -c "import urllib.request; print(urllib.request.urlopen('${allowed.origin}/').read().decode())"`)).to.equal('reached allowed');

    // The home's secrets and sockets.
    const tried = async (command: string) => own(`( ${command} ) 2>&1; echo "exit=$?"`);
    expect(await tried(`cat ${join(home, 'http.token')}`)).to.match(/No such file or directory\nexit=1$/);
    const listing = await own(`ls -a ${home}`);
    for (const name of ['http.token', 'turnhost.db', 'turnhost.sock', 'repl.sock', 'logs', 'state']) expect(listing.split('\n'), listing).to.not.include(name);
    expect(await tried(`python3 -c "import sqlite3; sqlite3.connect('file:${join(home, 'turnhost.db')}?mode=ro', uri=True).execute('select 1 from sessions')"`)).to.match(/unable to open database file[^]*exit=1$/);
    for (const socket of ['turnhost.sock', 'repl.sock']) {
      expect(await tried(`python3 -c "import socket; socket.socket(socket.AF_UNIX).connect('${join(home, socket)}')"`)).to.match(/(FileNotFoundError|ConnectionRefusedError)[^]*exit=1$/);
    }
    expect(await tried(`python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect(b'\\\\0turnhost-escape-test'); print(s.recv(100))"`)).to.match(/ConnectionRefusedError[^]*exit=1$/);
    expect(await tried(`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${s.edgePort}), timeout=3)"`)).to.match(/ConnectionRefusedError[^]*exit=1$/);

    // Other sessions, and writing outside.
    expect(await tried(`cat ${join(home, 'workspaces', 'alice', 'alices', 'notes.txt')}`)).to.match(/No such file or directory\nexit=1$/);
    expect(await own(`ls -a ${join(home, 'workspaces')} ${join(home, 'workspaces', 'bob')}`)).to.equal(`${join(home, 'workspaces')}:\n.\n..\nbob\n\n${join(home, 'workspaces', 'bob')}:\n.\n..\nbobs`);
    expect(await tried(`cat ${join(home, 'agent-homes', 'alices', 'memory.txt')}`)).to.match(/No such file or directory\nexit=1$/);
    expect(await tried('touch /usr/escaped')).to.match(/Read-only file system\nexit=1$/);
    expect(await tried(`echo x > ${join(home, 'written-outside')}`)).to.equal('exit=0'); // the home inside is an empty tmpfs of its own
    expect(existsSync(join(home, 'written-outside')), 'a write into the hidden home reaches the real one').to.equal(false);
    expect(await tried(`ln -s ${join(home, 'http.token')} planted && cat planted`)).to.match(/No such file or directory\nexit=1$/);
    const outside = h.tempDir('turnhost-outside-');
    expect(await tried(`echo x > ${join(outside, 'escaped')}`)).to.match(/(Directory nonexistent|No such file or directory)\nexit=[12]$/);
    expect(existsSync(join(outside, 'escaped'))).to.equal(false);

    // The daemon's process, namespaces, mounts, capabilities.
    const daemonPid = s.daemon.process.pid;
    expect(await tried(`kill -0 ${daemonPid}`)).to.match(/exit=1$/);
    expect(await tried(`cat /proc/${daemonPid}/cmdline`)).to.match(/No such file or directory\nexit=1$/);
    expect(await own('ls /proc | grep -c "^[0-9]"').then(Number)).to.be.below(10);
    expect(await tried('unshare --user true')).to.match(/unshare failed: (Operation not permitted|No space left on device)\nexit=1$/);
    expect(await tried('mount -t tmpfs none /tmp')).to.match(/exit=(1|32)$/);
    expect(await own('grep CapEff /proc/self/status')).to.match(/^CapEff:\s+0000000000000000$/);

    // The network: a host not allowed, a raw IP, straight out.
    const proxied = (url: string) => `python3 -c "import urllib.request; print(urllib.request.urlopen('${url}').read().decode())"`;
    expect(await tried(proxied(`${denied.origin}/`))).to.match(/HTTP Error 403[^]*exit=1$/);
    expect(await tried(proxied('https://example.com/'))).to.match(/403[^]*exit=1$/);
    expect(await tried(proxied('https://1.1.1.1/'))).to.match(/403[^]*exit=1$/);
    expect(await tried(`python3 -c "import socket; socket.create_connection(('1.1.1.1', 443), timeout=3)"`)).to.match(/(OSError|unreachable)[^]*exit=1$/);
    expect(await tried(`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${new URL(allowed.origin).port}), timeout=3)"`)).to.match(/ConnectionRefusedError[^]*exit=1$/);
    await logged(home, new RegExp(`"name":"sandbox-deny","sid":"bobs","host":"127.0.0.1:${new URL(denied.origin).port}"`));

    // The environment: §6's allowlist and the proxy (and what the command's own shell sets, and
    // pyenv's shim when python3 is one, as on a machine whose Python pyenv installed), never the daemon's own.
    const names = (await own('env | cut -d= -f1 | sort')).split('\n').filter((n) => !/^_?PYENV_/.test(n));
    expect(names).to.not.include('TURNHOST_TEST_SECRET');
    expect(await own('env')).to.not.include(DAEMON_SECRET);
    expect(names.filter((n) => !['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy', 'SHLVL', '_', 'PWD'].includes(n))).to.deep.equal([]);

    // Nothing of it reached the history as a secret: the token was never read.
    const history = await s.bob.history('bobs');
    expect(JSON.stringify(history)).to.not.include(token);

    // The daemon and the host killed together: every sandbox goes with them.
    const hostPid = (await s.bob.hostStatus()).host.pid!;
    const sandboxed = processesNaming([PYTHON_GUEST]);
    expect(sandboxed.length, 'the two sessions\' sandboxes').to.be.at.least(2);
    for (const pid of [daemonPid, hostPid]) process.kill(pid, 'SIGKILL');
    const killed = Date.now();
    expect((await Promise.all(sandboxed.map((pid) => waitGone(pid, 5_000)))).every(Boolean), `left: ${processesNaming([PYTHON_GUEST]).join(', ')}`).to.equal(true);
    expect(Date.now() - killed).to.be.below(5_000);
  });

  it("a member's cwd only below their own workspace, after resolving links, never another's folder or another session's; an admin's anywhere", async () => {
    const s = await scene(await httpServer('unused'));
    const refused = async (cwd: string) => {
      try {
        await s.bob.createSession({ cwd });
        return null;
      } catch (err) {
        return (err as { code: number; message: string }).code === -32602 ? (err as Error).message : `code ${(err as { code: number }).code}`;
      }
    };
    const workspaces = join(s.home, 'workspaces');
    for (const cwd of [s.home, '/', join(workspaces, '..', 'state'), workspaces, join(workspaces, 'bob')]) expect(await refused(cwd), cwd).to.match(/^cwd outside your workspace: a member's session works below .*\/workspaces\/bob$/);
    // Another member's folder, a folder under another person's workspace, another session's
    // default folder (alice's, and one of her sessions named under bob's own), a link into hers.
    await s.alice.createSession({ session_id: 'alices' });
    await run(s.alice, 'alices', 'echo alice-secret > secret.txt');
    mkdirSync(join(workspaces, 'alice', 'alice-proj'), { recursive: true });
    expect(await refused(join(workspaces, 'alice', 'alice-proj'))).to.match(/^cwd outside your workspace/);
    expect(await refused(join(workspaces, 'alice', 'alice-proj', 'deeper'))).to.match(/^cwd outside your workspace/);
    expect(await refused(join(workspaces, 'alice', 'alices'))).to.match(/^cwd outside your workspace/);
    expect(await refused(join(workspaces, 'bob', 'alices', 'sub'))).to.match(/^cwd outside your workspace: .*\/workspaces\/bob\/alices is the folder of session alices$/);
    const { symlinkSync } = await import('node:fs');
    symlinkSync(join(workspaces, 'alice'), join(workspaces, 'bob', 'to-alice'));
    expect(await refused(join(workspaces, 'bob', 'to-alice'))).to.match(/^cwd outside your workspace/);
    expect(await refused(join(workspaces, 'bob', 'to-alice', 'alice-proj'))).to.match(/^cwd outside your workspace/);
    const made = await s.bob.createSession({ session_id: 'inside', cwd: join(workspaces, 'bob', 'project') });
    expect(made.session_id).to.equal('inside');
    expect(await run(s.bob, 'inside', 'pwd')).to.equal(join(workspaces, 'bob', 'project'));
    expect(statSync(join(workspaces, 'bob')).mode & 0o777).to.equal(0o700);
    // The owner may name any folder.
    const owner = await TestClient.connect(s.daemon);
    const anywhere = h.tempDir('turnhost-admin-folder-');
    await owner.call('session.create', { session_id: 'admins', cwd: anywhere });
    const turn = async (sid: string) => {
      const { turn_id } = await owner.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text: 'hello' });
      await owner.until(() => owner.events.some((e) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turn_id), `the end of ${turn_id}`, 20_000);
      return owner.events.find((e) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turn_id)!;
    };
    expect((await turn('admins')).type).to.equal('turn.end');
    // A folder that vanished, or that a link now stands in for, makes no sandbox: the turn says why.
    await owner.call('session.create', { session_id: 'vanished', cwd: join(anywhere, 'gone') });
    const gone = await turn('vanished');
    expect(gone.type).to.equal('turn.error');
    expect(String(gone.payload['message'])).to.match(/the session's folder .*gone cannot be used: ENOENT/);
    const { rmSync, mkdirSync: makeDir } = await import('node:fs');
    makeDir(join(s.home, 'workspaces', 'bob', 'swapped'), { recursive: true });
    await s.bob.createSession({ session_id: 'swapped', cwd: join(s.home, 'workspaces', 'bob', 'swapped') });
    rmSync(join(s.home, 'workspaces', 'bob', 'swapped'), { recursive: true });
    symlinkSync('/', join(s.home, 'workspaces', 'bob', 'swapped'));
    let swapped = '';
    for await (const event of s.bob.turn('swapped', 'run ls')) if (event.type === 'turn.error') swapped = String(event.payload.message);
    expect(swapped).to.match(/is now reached through a symbolic link \(to \/\): its sandbox is not made/);
    owner.close();
  });

  it('says how it confines (status), and a machine without bubblewrap: --agent acp exits 78 saying what to do, while the script agent and a model agent without MCP servers start as before', async () => {
    const s = await scene(await httpServer('unused'));
    const owner = await TestClient.connect(s.daemon);
    const status = await owner.call<{ sandbox: { mode: string; mechanism: string } }>('host.status');
    expect(status.sandbox.mode).to.equal('required');
    expect(status.sandbox.mechanism).to.match(/^bubblewrap \d+\.\d+/);
    owner.close();
    const shown = await h.runCli(['status', '--home', s.home]);
    expect(shown.stdout).to.match(/sandbox\s+required \(bubblewrap \d+\.\d+\.\d+\)/);

    // A PATH with python3 and a shell, and no bubblewrap.
    const bin = h.tempDir('turnhost-nobwrap-');
    const { symlinkSync } = await import('node:fs');
    for (const program of ['python3', 'sh']) symlinkSync(`/usr/bin/${program}`, join(bin, program));
    const without = { PATH: bin };
    const dir = h.tempDir('turnhost-nobwrap-home-');
    writeFileSync(join(dir, 'agent.json'), JSON.stringify({ acp: { command: 'python3', args: [PYTHON_GUEST] } }));
    const refused = await h.runCli(['start', '--home', join(dir, 'acp'), '--agent', 'acp', '--agent-config', join(dir, 'agent.json')], without);
    expect(refused.code).to.equal(78);
    expect(refused.stderr).to.match(/sandbox: bubblewrap cannot run the agent's processes here: .*ENOENT; install bubblewrap and socat \(Debian: apt install bubblewrap socat\), or set sandbox.mode "off"/);
    // The daemon run by hand (systemd): it tries the sandbox once its host said hello, and ends.
    writeFileSync(join(dir, 'catalogue.json'), JSON.stringify({ agents: { quick: { kind: 'script' }, guest: { kind: 'acp', acp: { command: 'python3', args: [PYTHON_GUEST] } } } }));
    const daemon = await h.runCli(['daemon', '--home', join(dir, 'catalogue'), '--agent-config', join(dir, 'catalogue.json')], without);
    expect(daemon.code, daemon.stderr).to.equal(78);
    expect(daemon.stderr).to.match(/turnhost daemon: .*catalogue\.json: sandbox: bubblewrap cannot run the agent's processes here: .*ENOENT; install bubblewrap/);
    const script = await h.runCli(['chat', '--home', join(dir, 'script'), 'works without bubblewrap'], without);
    expect(script.code, script.stderr).to.equal(0);
    expect(script.stdout).to.equal('works without bubblewrap\n');
    const scriptStatus = JSON.parse((await h.runCli(['status', '--home', join(dir, 'script'), '--json'], without)).stdout) as { sandbox: unknown };
    expect(scriptStatus.sandbox).to.deep.equal({ mode: 'unused', mechanism: null });
    const model = await h.runCli(['start', '--home', join(dir, 'model'), '--agent', 'openai'], { ...without, TURNHOST_MODEL: 'm', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
    expect(model.code, model.stderr).to.equal(0);
    for (const home of ['script', 'model']) await h.runCli(['stop', '--home', join(dir, home)], without);
  });
});
