import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { Harness, REPO_ROOT } from '../helpers/processes.js';

const COMMANDS = ['host', 'daemon', 'start', 'stop', 'status', 'chat', 'sessions', 'history', 'repl'];
/** Libraries only some processes need: the daemon's and the edge's, the editor and page protocols', PostgreSQL's, the model agent's. */
const OPTIONAL_LIBRARIES = ['ws', 'prom-client', '@ag-ui/core', '@agentclientprotocol/sdk', 'pg', 'openai', '@modelcontextprotocol/sdk', 'zod'];

/** The packages whose modules a process resolved, from the log of test/fixtures/module-log.mjs. */
function packagesIn(log: string): string[] {
  const names = readFileSync(log, 'utf8')
    .split('\n')
    .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
    .filter((name): name is string => name !== undefined);
  return [...new Set(names)].sort();
}

describe('the command line (real processes)', function () {
  this.timeout(30_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('answers --help on every command', async () => {
    const top = await h.runCli(['--help']);
    expect(top.code).to.equal(0);
    for (const command of COMMANDS) expect(top.stdout, command).to.include(command);
    for (const command of COMMANDS) {
      const help = await h.runCli([command, '--help']);
      expect(help.code, command).to.equal(0);
      expect(help.stdout, command).to.match(new RegExp(`Usage: turnhost ${command}`));
      expect(help.stdout, command).to.include('--home');
    }
  });

  it('host: loads only the libraries it runs, so that a host restarted after a crash says hello sooner', async () => {
    const loaded = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<string[]> => {
      const home = h.tempDir();
      const log = join(home, 'modules.log');
      const host = await h.startHost(home, args, { NODE_OPTIONS: `--import ${JSON.stringify(join(REPO_ROOT, 'test/fixtures/module-log.mjs'))}`, MODULE_LOG: log, ...env });
      host.closeStdin();
      expect((await host.waitExit()).code, host.stderr).to.equal(0);
      return packagesIn(log);
    };
    const scriptHost = await loaded([]);
    expect(scriptHost, 'the log sees what the host needs').to.include.members(['better-sqlite3', 'nact', 'pino']);
    expect(scriptHost.filter((name) => OPTIONAL_LIBRARIES.includes(name))).to.deep.equal([]);
    // The model agent's host loads the model agent's libraries, and only it.
    const modelHost = await loaded(['--agent', 'openai'], { TURNHOST_MODEL: 'm', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
    expect(modelHost).to.include.members(['openai', '@modelcontextprotocol/sdk', 'zod']);
    expect(modelHost.filter((name) => OPTIONAL_LIBRARIES.includes(name))).to.have.members(['openai', '@modelcontextprotocol/sdk', 'zod']);
  });

  it('chat: starts a daemon when none runs, streams one turn, exits 0', async () => {
    const home = h.tempDir();
    const out = await h.runCli(['chat', '--home', home, '--session', 'demo', 'hello from the command line']);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.equal('hello from the command line\n');
    const status = await h.runCli(['status', '--home', home, '--json']);
    expect(status.code).to.equal(0);
    const history = JSON.parse((await h.runCli(['history', 'demo', '--home', home, '--json'])).stdout) as { role: string }[];
    expect(history.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
  });

  it('chat: reads the answers to questions from stdin lines when stdin is not a terminal', async () => {
    const daemon = await startDaemon(h);
    const child = h.spawnCli(['chat', '--home', daemon.home, 'choose\n/ask colour?\n/approve deploy\n/batch a? | b?']);
    child.stdin!.end('teal\ny\nfirst\nsecond\n');
    const out = await collect(child);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.equal('choose\nanswer: teal\napproved: deploy\nanswers: q0=first, q1=second\n');
    // Each question is still shown, with the answer read for it: the log reads as a conversation.
    expect(out.stderr).to.include('colour? teal\n').and.include('approve: deploy? [y/N] y\n').and.include('a? first\n').and.include('b? second\n');
  });

  it('chat --agent X against a daemon running another agent says so in one line', async () => {
    const daemon = await startDaemon(h);
    const out = await h.runCli(['chat', '--home', daemon.home, '--agent', 'test/fixtures/streaming-agent.mjs', 'hello']);
    expect(out.code).to.equal(1);
    expect(out.stderr.trim().split('\n')).to.have.length(1);
    expect(out.stderr).to.include('has no agent streaming-agent (its agents: script)');
    const same = await h.runCli(['chat', '--home', daemon.home, '--agent', 'script', 'hello']);
    expect(same.code, same.stderr).to.equal(0);
  });

  it('chat: without TEXT, runs one turn per stdin line', async () => {
    const daemon = await startDaemon(h);
    const child = h.spawnCli(['chat', '--home', daemon.home, '--session', 'loop']);
    child.stdin!.end('first line\nsecond line\n');
    const out = await collect(child);
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.equal('first line\nsecond line\n');
  });

  it('chat at a terminal: a line typed while a turn runs is queued, the queue is shown, and it runs next', async function () {
    // A terminal needs a pseudo-terminal: script(1) from util-linux gives one.
    if (spawnSync('script', ['--version']).status !== 0) {
      process.stdout.write('      (skipped: script(1) is not installed, so there is no terminal to type into)\n');
      this.skip();
    }
    const daemon = await startDaemon(h);
    const cli = `${JSON.stringify(process.execPath)} dist/bin/turnhost.js chat --home ${JSON.stringify(daemon.home)} --session typed`;
    const chat = h.spawnRaw('script', ['-qfec', cli, '/dev/null']);
    const done = collect(chat);
    await untilOutput(chat, 'Ctrl-D to leave');
    chat.stdin!.write('/tool busy 2\r');
    await untilOutput(chat, '→ busy');
    chat.stdin!.write('queued meanwhile\r');
    await untilOutput(chat, '(queued, #1');
    chat.stdin!.write('\x04');
    const out = await done;
    expect(out.code, out.stdout).to.equal(0);
    expect(out.stdout).to.include('[queue] 1 waiting: 1. queued meanwhile');
    const history = JSON.parse((await h.runCli(['history', 'typed', '--home', daemon.home, '--json'])).stdout) as { role: string; content: string }[];
    expect(history.map((m) => `${m.role}:${m.content}`)).to.deep.equal(['user:/tool busy 2', 'assistant:tool busy ok', 'user:queued meanwhile', 'assistant:queued meanwhile']);
  });

  it('chat: Ctrl-C interrupts the running turn', async () => {
    const daemon = await startDaemon(h);
    const once = h.spawnCli(['chat', '--home', daemon.home, 'waiting\n/sleep 30']);
    await untilOutput(once, 'waiting');
    once.kill('SIGINT');
    const first = await collect(once);
    expect(first.code).to.equal(0);
    expect(first.stderr).to.include('(interrupted)');
  });

  it('chat exits 1 when its turn ends in turn.error, so `chat … && next` stops; 0 when it ends; from a pipe, 1 after every line ran', async () => {
    const daemon = await startDaemon(h);
    const failed = await h.runCli(['chat', '--home', daemon.home, '/fail boom']);
    expect(failed.code, failed.stderr).to.equal(1);
    expect(failed.stderr).to.include('turn failed: boom');
    expect((await h.runCli(['chat', '--home', daemon.home, 'fine'])).code).to.equal(0);
    const piped = h.spawnCli(['chat', '--home', daemon.home, '--session', 'piped']);
    const done = collect(piped);
    piped.stdin!.end('/fail first\nstill runs\n');
    const out = await done;
    expect(out.code, out.stderr).to.equal(1);
    expect(out.stdout).to.include('still runs');
  });

  it('chat: a second Ctrl-C leaves when the interrupt does not end the turn', async () => {
    const daemon = await startDaemon(h, ['--agent', 'test/fixtures/stubborn-agent.mjs']);
    const chat = h.spawnCli(['chat', '--home', daemon.home, 'anything']);
    const done = collect(chat);
    await untilOutput(chat, 'working');
    chat.kill('SIGINT');
    await untilStderr(chat, 'Ctrl-C again to leave');
    chat.kill('SIGINT');
    expect((await done).code).to.equal(130);
  });

  it('says what went wrong in one line, with the exit codes of PROTOCOL.md §3', async () => {
    const home = h.tempDir();
    for (const [args, code] of [
      [['status', '--home', home], 3],
      [['stop', '--home', home], 3],
      [['history', 'ghost', '--home', home], 4],
      [['repl', '--home', home], 3],
    ] as const) {
      const out = await h.runCli(args);
      expect(out.code, args.join(' ')).to.equal(code);
      expect(out.stderr.trim().split('\n'), args.join(' ')).to.have.length(1);
    }
    writeFileSync(join(home, 'turnhost.db'), randomBytes(8192));
    for (const args of [['host', '--home', home], ['sessions', '--home', home], ['history', 'x', '--home', home]]) {
      const corrupt = await h.runCli(args);
      expect(corrupt.code, args.join(' ')).to.equal(1);
      expect(corrupt.stderr.trim().split('\n'), args.join(' ')).to.have.length(1);
      expect(corrupt.stderr, args.join(' ')).to.include('file is not a database');
    }
    const bad = await h.runCli(['host', '--workers', 'many', '--home', home]);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.include("option '--workers <n>' argument 'many' is invalid");
  });
});

function collect(child: import('node:child_process').ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

function untilOutput(child: import('node:child_process').ChildProcess, text: string, stream: 'stdout' | 'stderr' = 'stdout'): Promise<void> {
  let seen = '';
  const source = child[stream]!;
  return new Promise((resolve) => {
    const onData = (c: Buffer) => {
      seen += c.toString();
      if (seen.includes(text)) {
        source.off('data', onData);
        resolve();
      }
    };
    source.on('data', onData);
  });
}

function untilStderr(child: import('node:child_process').ChildProcess, text: string): Promise<void> {
  return untilOutput(child, text, 'stderr');
}
