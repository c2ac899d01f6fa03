// `turnhost chat` in a real terminal (tmux, 100×20): what the daemon sends while the prompt is
// shown goes above the input line, and what the person types stays whole, where they left it.
import { expect } from 'chai';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { CLI, Harness } from '../helpers/processes.js';
import { Terminal } from '../helpers/terminal.js';

const SIZE = { columns: 100, rows: 20 };
const HEADER = (sid: string): string => `session ${sid} (Ctrl-D to leave)`;

describe('chat at a terminal (tmux)', function () {
  this.timeout(60_000);
  const h = new Harness();
  let terminal: Terminal;
  let daemon: Daemon;

  before(async () => {
    daemon = await startDaemon(h);
  });
  after(() => h.cleanup());
  afterEach(() => terminal.stop());

  function chat(sid: string, home = daemon.home): Terminal {
    terminal = new Terminal(h.tempDir('turnhost-tmux-'));
    terminal.start(`${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} chat --home ${JSON.stringify(home)} --session ${sid}`, SIZE);
    return terminal;
  }

  /** Sends a line and waits until the reply's last line is on the screen. */
  async function send(t: Terminal, text: string, lastLine: string): Promise<void> {
    t.type(text);
    t.press('Enter');
    await t.until((screen) => screen.at(-2) === lastLine && screen.at(-1) === '>', `${JSON.stringify(lastLine)} above the prompt`);
  }

  it('each sent line stays once as "> text", each reply on its own line, the prompt below', async () => {
    const t = chat('demo');
    await t.untilShown(HEADER('demo'));
    await send(t, 'alpha beta gamma', 'alpha beta gamma');
    await send(t, 'delta epsilon', 'delta epsilon');
    expect(t.screen()).to.deep.equal([HEADER('demo'), '> alpha beta gamma', 'alpha beta gamma', '> delta epsilon', 'delta epsilon', '>']);
    expect(t.cursor()).to.deep.equal({ x: 2, y: 5 });
  });

  it('a line typed while a reply streams stays on the input line, cursor and all, and the reply goes above it', async () => {
    const streaming = await startDaemon(h, ['--agent', 'test/fixtures/streaming-agent.mjs']);
    const t = chat('streamed', streaming.home);
    await t.untilShown(HEADER('streamed'));
    t.type('stream 4 400');
    t.press('Enter');
    t.type('half ');
    // The first half is typed before the reply's first words: a part every 400 ms.
    await t.untilShown('part 2');
    t.type('line');
    t.press('Left', 'Left', 'Left', 'Left');
    const screen = await t.untilShown('part 4');
    expect(screen).to.deep.equal([HEADER('streamed'), '> stream 4 400', 'part 1 part 2 part 3 part 4', '> half line']);
    expect(t.cursor(), 'the cursor stays where the person put it').to.deep.equal({ x: 7, y: 3 });
    t.press('End', 'Enter');
    await t.until((s) => s.at(-1) === '>' && s.at(-2) === '> half line', 'the sent line and a new prompt');
    expect(t.screen()).to.deep.equal([HEADER('streamed'), '> stream 4 400', 'part 1 part 2 part 3 part 4', '> half line', '>']);
  });

  it('a prompt sent while a turn runs is queued: its notices and its reply go above the prompt', async () => {
    const t = chat('queued');
    await t.untilShown(HEADER('queued'));
    t.type('/sleep 2');
    t.press('Enter');
    await t.untilShown('> /sleep 2');
    await send(t, 'queued words', 'queued words');
    const screen = t.screen();
    expect(inOrderOfNotices(screen)).to.deep.equal([
      HEADER('queued'),
      '> /sleep 2',
      '> queued words',
      '(queued, #1: it runs when the turns before it end)',
      '[queue] 1 waiting: 1. queued words',
      '[queue] empty',
      'queued words',
      '>',
    ]);
  });

  it('an approval asked in the middle of typing takes the input line; the half-typed line comes back after', async () => {
    const t = chat('approving');
    await t.untilShown(HEADER('approving'));
    t.type('/sleep 2');
    t.press('Enter');
    await t.untilShown('> /sleep 2');
    t.type('/approve deploy');
    t.press('Enter');
    await t.untilShown('(queued, #1');
    t.type('half of a li');
    const asked = await t.until((s) => s.at(-1) === 'approve: deploy? [y/N]', 'the approval question on the input line');
    expect(asked.join('\n')).to.not.include('half of a li');
    t.type('y');
    t.press('Enter');
    await t.until((s) => s.at(-1) === '> half of a li', 'the half-typed line back on the input line');
    expect(t.cursor().x).to.equal('> half of a li'.length);
    t.type('ne');
    t.press('Enter');
    await t.until((s) => s.at(-2) === 'half of a line' && s.at(-1) === '>', 'the finished line sent and answered');
    expect(inOrderOfNotices(t.screen())).to.deep.equal([
      HEADER('approving'),
      '> /sleep 2',
      '> /approve deploy',
      '(queued, #1: it runs when the turns before it end)',
      '[queue] 1 waiting: 1. /approve deploy',
      '[queue] empty',
      'approve: deploy? [y/N] y',
      'approved: deploy',
      '> half of a line',
      'half of a line',
      '>',
    ]);
  });
});

/**
 * The submit's answer and the queue's event travel separately (a method's answer and a session
 * event), so which of the two notices prints first is not fixed: they are put in one order.
 */
function inOrderOfNotices(screen: string[]): string[] {
  const lines = [...screen];
  const queued = lines.findIndex((line) => line.startsWith('(queued, #'));
  const waiting = lines.findIndex((line) => line.startsWith('[queue] 1 waiting'));
  if (queued !== -1 && waiting !== -1 && waiting === queued - 1) [lines[waiting], lines[queued]] = [lines[queued]!, lines[waiting]!];
  return lines;
}
