// The README's commands work as written, as a new user types them in the repository: each line of
// its shell blocks that runs `node dist/bin/turnhost.js`, in order, with the default home moved to
// a temp folder (TURNHOST_HOME), and the guest example with the Python agent.json it shows.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Harness, REPO_ROOT } from '../helpers/processes.js';

const run = promisify(execFile);
const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

/** The README's shell lines that run turnhost, without their comments. */
function readmeCommands(): string[] {
  const blocks = [...README.matchAll(/```sh\n([^]*?)```/g)].map((m) => m[1]!);
  return blocks.flatMap((block) => block.split('\n')).filter((line) => line.startsWith('node dist/bin/turnhost.js')).map((line) => line.replace(/\s+#.*$/, ''));
}

describe("the README's commands, as written (real processes)", function () {
  this.timeout(60_000);
  const h = new Harness();
  after(() => h.cleanup());

  it('the quickstart: a turn, the page, a stop; and a guest agent with the agent.json it shows', async () => {
    const home = h.tempDir();
    const commands = readmeCommands();
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
      const { stdout } = await run('sh', ['-c', shell], { cwd: REPO_ROOT, env: { ...process.env, TURNHOST_HOME: home, TURNHOST_LOG_LEVEL: 'warn' }, timeout: 30_000 });
      outputs[command] = stdout;
    }
    const said = (part: string) => Object.entries(outputs).find(([command]) => command.includes(part))![1];
    expect(said('chat "hello, turnhost"')).to.include('hello, turnhost');
    expect(said(' web')).to.match(/http:\/\/127\.0\.0\.1:7433\/login/);
    expect(said(' stop')).to.match(/stopped/);
    expect(said('--agent acp')).to.include('python guest: what is in this folder?');
    await run('node', [join(REPO_ROOT, 'dist/bin/turnhost.js'), 'stop'], { env: { ...process.env, TURNHOST_HOME: home } });
  });
});
