import { expect } from 'chai';
import { chownSync } from 'node:fs';
import { connect } from 'node:net';
import { startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const RULE = 'must be 1 to 256 bytes of printable UTF-8 with no control characters';

/** One client: connects, submits a turn in its own session, and says how it ended. */
function oneClient(daemon: Daemon, n: number): Promise<'turn' | 'refused' | string> {
  return new Promise((resolve) => {
    const socket = connect(daemon.socket);
    let buffer = '';
    const done = (outcome: string) => {
      socket.destroy();
      resolve(outcome);
    };
    socket.on('error', (err: NodeJS.ErrnoException) => done(`socket error ${err.code}`));
    socket.on('close', () => done(`closed early: ${buffer.slice(0, 200)}`));
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      if (buffer.includes('too many clients')) done('refused');
      else if (buffer.includes('"type":"turn.end"')) done('turn');
    });
    socket.on('connect', () => socket.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'prompt.submit', params: { session_id: `burst-${n}`, text: 'hi' } })}\n`));
  });
}

async function burst(daemon: Daemon, clients: number): Promise<Record<string, number>> {
  const outcomes = await Promise.all(Array.from({ length: clients }, (_, i) => oneClient(daemon, i)));
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
  return counts;
}

describe('bounded input: identifiers, the client cap, the listen backlog, a foreign home (real processes)', function () {
  this.timeout(120_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('refuses session, request and question ids that are empty, over 256 bytes or hold control characters, naming the rule', async () => {
    const daemon = await startDaemon(h);
    const client = await TestClient.connect(daemon);
    for (const bad of ['x'.repeat(100_000), 'é'.repeat(129), 'two\nlines', 'tab\there', '\u0000']) {
      for (const [method, params] of [
        ['prompt.submit', { session_id: bad, text: 'hi' }],
        ['session.create', { session_id: bad }],
        ['request.answer', { request_id: bad, result: {} }],
        ['clarify.lock', { request_id: 'srq-1', question_id: bad, answer: 'a' }],
      ] as const) {
        const error = await client.call(method, params).catch((e: { code: number; message: string }) => e);
        expect(error, `${method} ${JSON.stringify(bad).slice(0, 20)}`).to.include({ code: -32602 });
        expect((error as { message: string }).message).to.include(RULE);
      }
    }
    expect(await client.call('session.create', { session_id: 'ü'.repeat(128) })).to.include({ session_id: 'ü'.repeat(128) });
    // A created session is stored at once; none of the refused ids is.
    const sessions = JSON.parse((await h.runCli(['sessions', '--home', daemon.home, '--json'])).stdout) as { session_id: string }[];
    expect(sessions.map((s) => s.session_id)).to.deep.equal(['ü'.repeat(128)]);
  });

  it('on the host protocol, a bad sid is a turn.error with reason invalid, and nothing is stored', async () => {
    const home = h.tempDir();
    const host = await h.startHost(home);
    host.send({ type: 'turn.start', sid: 'y'.repeat(100_000), request_id: 'r1', text: 'hi' });
    const error = await host.next('turn.error');
    expect(error).to.include({ request_id: 'r1', reason: 'invalid', sid: null });
    expect(String(error['message'])).to.equal(`sid ${RULE}`);
    host.send({ type: 'interrupt', sid: 'ok', request_id: 'z'.repeat(300) });
    expect(await host.next('error')).to.include({ request_id: null, message: `interrupt: request_id ${RULE}` });
  });

  it('3,000 clients at once: each gets its turn or the cap\'s error line, never a refused connection; with --max-clients 4096 all are served', async () => {
    const capped = await startDaemon(h, ['--workers', '64']);
    const first = await burst(capped, 3000);
    expect(Object.keys(first).sort(), JSON.stringify(first)).to.satisfy((keys: string[]) => keys.every((k) => k === 'turn' || k === 'refused'));
    expect(first['turn']).to.be.at.least(1024);
    const roomy = await startDaemon(h, ['--workers', '64', '--max-clients', '4096']);
    expect(await burst(roomy, 3000)).to.deep.equal({ turn: 3000 });
  });

  it('refuses a home that belongs to another user', async () => {
    const home = h.tempDir();
    chownSync(home, 65534, 65534);
    for (const command of [['start'], ['chat', 'hi'], ['host']]) {
      const out = await h.runCli([...command, '--home', home]);
      expect(out.code, out.stderr).to.equal(1);
      expect(out.stderr).to.include('belongs to another user (uid 65534').and.include('refusing to use it');
    }
  });
});
