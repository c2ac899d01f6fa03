// A session's file (persistence/session-export.ts) read and checked, and a store copy's columns and
// progress (persistence/store-copy.ts, bin/commands/store-copy.ts), without a store.
import { expect } from 'chai';
import { progressWriter } from '../../bin/commands/store-copy.js';
import { ImportError, importRows, parseExport } from '../../persistence/session-export.js';
import { copiedColumns } from '../../persistence/store-copy.js';

const HEADER = JSON.stringify({
  format: 'turnhost-session/1',
  session: { session_id: 's', status: 'active', end_reason: null, created_at: '2026-12-01T00:00:00.000Z', updated_at: '2026-12-01T00:00:00.000Z', agent: null, overrides: '', forked_from: null, exported_at: '2026-12-01T00:00:00.000Z' },
});
const turn = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ turn: { turn_id: id, status: 'completed', by: null, started_at: null, ended_at: null, error: null, model: null, usage: null, superseded_at: null, superseded_by: null, ...extra } });
const message = (seq: number, turnId: string | null, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ message: { seq, role: seq % 2 === 0 ? 'user' : 'assistant', content: `m${seq}`, turn_id: turnId, at: '2026-12-01T00:00:00.000Z', ...extra } });

function refusal(text: string): string {
  try {
    parseExport(text);
  } catch (err) {
    if (err instanceof ImportError) return err.message;
    throw err;
  }
  throw new Error('the file was taken');
}

describe("a session's file", () => {
  it('reads the live line and each superseded path, numbered; a turn still running in the file is stored lost; renamed turn ids are new and the same for both rows', () => {
    const plan = parseExport([HEADER, turn('t1'), message(0, 't1'), message(1, 't1'), turn('t2', { status: 'running' }), message(2, 't2', { branch: 1 }), message(3, 't2', { branch: 1 }), message(2, null)].join('\n'));
    expect(plan.live.map((m) => m.seq)).to.deep.equal([0, 1, 2]);
    expect(plan.branches.map((path) => path.map((m) => m.seq))).to.deep.equal([[2, 3]]);
    expect(plan.messageCount).to.equal(5);
    const rows = importRows(plan, 'new', 'sk', 1000, true);
    expect(rows.sessions.map((row) => [row[0], row[2], row[10]])).to.deep.equal([
      ['new', 'active', null],
      ['new~1', 'finalized', 'new'],
    ]);
    const [first, second] = rows.turns.map((row) => ({ id: row[0], status: row[2], branch: row[15] }));
    expect(first!.id).to.match(/^imported-[0-9a-f]{24}$/);
    expect(second).to.deep.include({ status: 'lost', branch: 'new~1' });
    expect(rows.messages.filter((row) => row[3] === first!.id)).to.have.length(2);
  });

  it('refuses a broken line naming it, an unknown or newer format by name, and messages out of order or naming a turn not given', () => {
    expect(refusal('')).to.equal('the file is empty');
    expect(refusal([HEADER, turn('t1'), 'not json'].join('\n'))).to.match(/^line 3: not JSON/);
    expect(refusal(HEADER.replace('turnhost-session/1', 'turnhost-session/7'))).to.equal(
      'line 1: the file is turnhost-session/7, newer than this turnhost reads (turnhost-session/2): import it with a newer turnhost',
    );
    expect(refusal(JSON.stringify({ format: 'something-else/1' }))).to.match(/^line 1: not a turnhost session file/);
    expect(refusal([HEADER, turn('t1'), message(1, 't1')].join('\n'))).to.equal("line 3: message 1 is out of order: the session's line is at 0");
    expect(refusal([HEADER, message(0, 'nope')].join('\n'))).to.equal('line 2: message 0 names turn nope, which no line before it gives');
    expect(refusal([HEADER, turn('t1'), turn('t1')].join('\n'))).to.equal('line 3: turn t1 is in the file twice');
    expect(refusal([HEADER, JSON.stringify({ other: 1 })].join('\n'))).to.equal('line 2: expected {"turn": …}, {"blob": …} or {"message": …}');
  });
});

describe('a store copy', () => {
  it('copies the columns both stores have; a column the target lacks is refused, but for a store\'s own (submits.ord, boots.node_id)', () => {
    expect(copiedColumns('submits', ['ord', 'sid', 'turn_id'], ['sid', 'turn_id'])).to.deep.equal(['sid', 'turn_id']);
    expect(copiedColumns('boots', ['boot_id', 'node_id'], ['boot_id'])).to.deep.equal(['boot_id']);
    expect(() => copiedColumns('messages', ['sid', 'seq', 'extra'], ['sid', 'seq'])).to.throw("the target's messages has no column extra");
  });

  it('shows its progress as a bar redrawn in place at a terminal, and as a line now and then otherwise', () => {
    const written: string[] = [];
    let now = 0;
    const stream = (tty: boolean) => ({ isTTY: tty, write: (text: string) => written.push(text) }) as unknown as NodeJS.WriteStream;
    const bar = progressWriter(stream(true), () => now);
    bar({ table: 'sessions', done: 10, total: 100 });
    now = 50;
    bar({ table: 'sessions', done: 20, total: 100 });
    now = 200;
    bar({ table: 'messages', done: 100, total: 100 });
    expect(written).to.deep.equal([`\r[###...........................]  10% 10/100 rows (sessions)\u001b[K`, `\r[##############################] 100% 100/100 rows (messages)\u001b[K\n`]);
    written.length = 0;
    now = 0;
    const lines = progressWriter(stream(false), () => now);
    lines({ table: 'sessions', done: 10, total: 100 });
    now = 1000;
    lines({ table: 'sessions', done: 20, total: 100 });
    now = 2500;
    lines({ table: 'sessions', done: 30, total: 100 });
    expect(written).to.deep.equal(['store copy: 10 of 100 rows (10%), at sessions\n', 'store copy: 30 of 100 rows (30%), at sessions\n']);
  });
});
