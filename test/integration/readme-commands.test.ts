// The README's and the docs' commands work as written, as a new user types them in the repository:
// each line of their shell blocks that runs `node dist/bin/turnhost.js`, in order, with the default
// home moved to a temp folder (TURNHOST_HOME), and the guest example with the Python agent.json it
// shows. Every link between the README and the docs leads to a file that exists.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Harness, REPO_ROOT } from '../helpers/processes.js';

const run = promisify(execFile);
const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const DOCS = readdirSync(join(REPO_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name));

/** A Markdown file's shell lines that run turnhost, without their comments. */
function turnhostCommands(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/```sh\n([^]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((block) => block.split('\n')).filter((line) => line.startsWith('node dist/bin/turnhost.js')).map((line) => line.replace(/\s+#.*$/, ''));
}

/** A command line as a new user's shell runs it, with nothing to read on stdin (a question gets no answer). */
function runIn(home: string, command: string) {
  return run('bash', ['-c', `exec </dev/null; ${command}`], { cwd: REPO_ROOT, env: { ...process.env, TURNHOST_HOME: home, TURNHOST_LOG_LEVEL: 'warn' }, timeout: 30_000 });
}

describe("the README's commands, as written (real processes)", function () {
  this.timeout(60_000);
  const h = new Harness();
  after(() => h.cleanup());

  it('the quickstart: a turn, the page, a stop; and a guest agent with the agent.json it shows', async () => {
    const home = h.tempDir();
    const commands = turnhostCommands(README);
    expect(commands).to.have.length.of.at.least(4);
    const outputs: Record<string, string> = {};
    for (const command of commands) {
      const shell = command.includes('--agent acp') ? `cd ${home} && ${command.replace('node dist/bin/turnhost.js', `node ${join(REPO_ROOT, 'dist/bin/turnhost.js')}`)}` : command;
      if (command.includes('--agent acp')) {
        // The README's Python agent.json, with the example's path where it says /path/to/turnhost.
        const json = /```json\n(\{ "acp": \{ "command": "python3"[^\n]*)\n```/.exec(README)![1]!.replace('/path/to/turnhost', REPO_ROOT);
        writeFileSync(join(home, 'agent.json'), json);
        await run('node', [join(REPO_ROOT, 'dist/bin/turnhost.js'), 'stop'], { env: { ...process.env, TURNHOST_HOME: home } }).catch(() => {});
      }
      const { stdout } = await runIn(home, shell);
      outputs[command] = stdout;
    }
    const said = (part: string) => Object.entries(outputs).find(([command]) => command.includes(part))![1];
    expect(said('chat "hello, turnhost"')).to.include('hello, turnhost');
    expect(said(' web')).to.match(/http:\/\/127\.0\.0\.1:7433\/login/);
    expect(said(' stop')).to.match(/stopped/);
    expect(said('--agent acp')).to.include('python guest: what is in this folder?');
    await run('node', [join(REPO_ROOT, 'dist/bin/turnhost.js'), 'stop'], { env: { ...process.env, TURNHOST_HOME: home } });
  });

  it("the docs' commands: each doc's turnhost lines, in order, in a home of its own", async () => {
    const documented = DOCS.map((file) => ({ file, commands: turnhostCommands(readFileSync(join(REPO_ROOT, file), 'utf8')) })).filter((doc) => doc.commands.length > 0);
    // The one doc with such lines; a doc that gains some is added here with what its lines must say.
    expect(documented.map((doc) => doc.file)).to.deep.equal(['docs/CLI.md']);
    for (const { file, commands } of documented) {
      const home = h.tempDir();
      const said: string[] = [];
      for (const command of commands) said.push((await runIn(home, command).catch((error: Error) => expect.fail(`${file}: ${command}: ${error.message}`))).stdout);
      await run('node', [join(REPO_ROOT, 'dist/bin/turnhost.js'), 'stop'], { env: { ...process.env, TURNHOST_HOME: home } }).catch(() => {});
      expect(said.join('\n'), file).to.include('answer: (none)').and.match(/demo\s+active/).and.match(/stopped: 1 session/);
    }
  });

  it('every link of the README and the docs leads to a file that exists', () => {
    const broken: string[] = [];
    for (const file of ['README.md', ...DOCS]) {
      const links = [...readFileSync(join(REPO_ROOT, file), 'utf8').matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1]!);
      for (const link of links.filter((target) => !/^[a-z]+:/.test(target))) {
        if (!existsSync(join(REPO_ROOT, dirname(file), link))) broken.push(`${file}: ${link}`);
      }
    }
    expect(broken).to.deep.equal([]);
  });
});
