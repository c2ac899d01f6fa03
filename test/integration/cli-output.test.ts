import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SqliteStore } from '../../persistence/sqlite/sqlite-store.js';
import { CLI, Harness } from '../helpers/processes.js';

const run = promisify(execFile);
const MESSAGE_BYTES = 1024 * 1024;

/** A home whose session `big` holds about 10 MB of history, written as the host would write it. */
async function homeWithBigHistory(h: Harness): Promise<string> {
  const home = h.tempDir();
  const store = SqliteStore.open(join(home, 'turnhost.db'));
  const filler = (i: number) => `${i} ${'word '.repeat(MESSAGE_BYTES / 5)}\n"quoted" ünïcode`;
  await store.commit((w) => {
    w.saveSession({ sid: 'big', activate: true, sessionKey: 'big', historyVersion: 1, overridesText: '', cwd: null, bootId: 'b', agent: 'script' });
    w.appendMessages('big', 0, Array.from({ length: 10 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: filler(i) })), 't');
  });
  store.closeNow();
  return home;
}

describe('the command line writes all of its output, whatever stdout is', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('history --json, history and sessions --json through a pipe equal what goes to a file', async () => {
    const home = await homeWithBigHistory(h);
    const out = h.tempDir();
    for (const [name, args] of [['history-json', 'history big --json'], ['history', 'history big'], ['sessions-json', 'sessions --json']] as const) {
      const command = `"${process.execPath}" "${CLI}" ${args} --home "${home}"`;
      await run('sh', ['-c', `${command} | cat > "${join(out, `${name}.piped`)}" && ${command} > "${join(out, `${name}.file`)}"`], { maxBuffer: 1024 });
      const piped = readFileSync(join(out, `${name}.piped`));
      const file = readFileSync(join(out, `${name}.file`));
      expect(piped.length, name).to.equal(file.length);
      expect(piped.equals(file), name).to.equal(true);
    }
    const json = JSON.parse(readFileSync(join(out, 'history-json.piped'), 'utf8')) as unknown[];
    expect(json).to.have.length(10);
    expect(readFileSync(join(out, 'history-json.file')).length).to.be.greaterThan(10 * MESSAGE_BYTES);
  });

  it('a reader that leaves early (| head -1) ends the command quietly: no EPIPE, no trace', async () => {
    const home = await homeWithBigHistory(h);
    const { stdout, stderr } = await run('bash', ['-c', `"${process.execPath}" "${CLI}" history big --home "${home}" | head -c 10; echo " exit=\${PIPESTATUS[0]}"`]);
    expect(stdout).to.equal('[0] user:  exit=0\n');
    expect(stderr).to.equal('');
  });
});
