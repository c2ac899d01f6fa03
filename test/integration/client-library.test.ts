import { expect } from 'chai';
import { connect, ErrorCodes, TurnhostError, type SessionEvent, type TurnhostClient } from '../../client/index.js';
import { createServer, type AddressInfo } from 'node:net';
import { readToken } from '../../edge/http-token.js';
import { startDaemon as startDaemonAt, startDaemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

async function collect(events: AsyncIterable<SessionEvent>, until: (e: SessionEvent) => boolean): Promise<SessionEvent[]> {
  const seen: SessionEvent[] = [];
  for await (const event of events) {
    seen.push(event);
    if (until(event)) break;
  }
  return seen;
}

const text = (events: SessionEvent[]) => events.map((e) => (e.type === 'message.delta' ? e.payload.text : '')).join('');

type Transport = 'unix socket' | 'WebSocket';

/** A free port on 127.0.0.1 (a restarted daemon must listen where its clients reconnect). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

for (const transport of ['unix socket', 'WebSocket'] as Transport[]) {
describe(`turnhost/client against the real daemon, over its ${transport}`, function () {
  this.timeout(40_000);
  const h = new Harness();
  const clients: TurnhostClient[] = [];
  let port = 0;
  /** The daemon's arguments for this transport: a WebSocket client needs the edge. */
  const listen = (): string[] => (transport === 'WebSocket' ? ['--listen', `127.0.0.1:${port}`] : []);
  const startDaemon = (harness: Harness, args: string[] = [], env: NodeJS.ProcessEnv = {}, home?: string) => startDaemonAt(harness, [...args, ...listen()], env, home);
  const open = async (home: string) => {
    const client = transport === 'WebSocket' ? await connect({ url: `http://127.0.0.1:${port}`, token: readToken(home) }) : await connect({ home });
    clients.push(client);
    return client;
  };
  beforeEach(async () => {
    port = await freePort();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
  });

  it('runs a turn: typed results, the turn\'s events in order, and JSON-RPC errors as TurnhostError with code and data', async () => {
    const daemon = await startDaemon(h);
    const client = await open(daemon.home);
    const created = await client.createSession({ session_id: 'lib' });
    expect(created).to.deep.equal({ session_id: 'lib', session_key: 'lib' });
    const events: SessionEvent[] = [];
    for await (const event of client.turn('lib', 'hello from the library')) events.push(event);
    expect(events.map((e) => e.type)).to.deep.equal(['turn.started', 'message.delta', 'message.delta', 'message.delta', 'message.delta', 'message.complete', 'turn.end']);
    expect(text(events)).to.equal('hello from the library');
    const history = await client.history('lib');
    expect(history.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
    const status = await client.hostStatus();
    expect(status.host.state).to.equal('running');
    expect(status.supervisor.agent).to.equal('script');
    const missing = await client.history('nobody').catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(TurnhostError);
    expect((missing as TurnhostError).code).to.equal(ErrorCodes.sessionNotFound);
    const busy = client.submit('lib', '/sleep 5');
    await busy;
    const refused = await client.submit('lib', 'again', { on_busy: 'reject' }).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(TurnhostError);
    expect(refused).to.include({ code: ErrorCodes.sessionBusy });
    await client.interrupt('lib');
  });

  it("a session's life through the library: archive, pin, export, import and delete (PROTOCOL.md §2.3)", async () => {
    const daemon = await startDaemon(h);
    const client = await open(daemon.home);
    await client.createSession({ session_id: 'kept' });
    for await (const _event of client.turn('kept', 'worth keeping')) continue;
    expect(await client.archiveSession('kept')).to.deep.equal({ session_id: 'kept', archived: true });
    expect((await client.listSessions()).sessions).to.deep.equal([]);
    expect(await client.pinSession('kept')).to.deep.equal({ session_id: 'kept', pinned: true });
    expect((await client.listSessions({ archived: true })).sessions[0]).to.deep.include({ session_id: 'kept', archived: true, pinned: true });
    const file = await client.exportSession('kept');
    const data = file.lines.map((line) => JSON.stringify(line)).join('\n');
    const imported = await client.importSession(data, { session_id: 'copy' });
    expect(imported).to.deep.include({ session_id: 'copy', messages: 2, turns: 1, turn_ids: 'renamed' });
    expect((await client.history('copy')).messages.map((m) => m.content)).to.deep.equal(['worth keeping', 'worth keeping']);
    expect(await client.deleteSession('kept')).to.deep.equal({ session_id: 'kept', deleted: true });
    const gone = await client.history('kept').catch((e: unknown) => e);
    expect(gone).to.include({ code: ErrorCodes.sessionNotFound });
  });

  it('answers clarify and approval questions with its handlers', async () => {
    const daemon = await startDaemon(h);
    const client = await open(daemon.home);
    client.onClarify((request) => (request.questions ? { q0: 'one', q1: 'two' } : `blue for "${request.question}"`));
    client.onApproval((request) => request.question === 'deploy');
    await client.createSession({ session_id: 'ask' });
    const events = await collect(client.turn('ask', '/ask colour?\n/batch a? | b?\n/approve deploy\n/approve delete'), () => false);
    const reply = events.find((e) => e.type === 'message.complete');
    expect(reply?.payload).to.deep.equal({ text: 'answer: blue for "colour?"\nanswers: q0=one, q1=two\napproved: deploy\ndenied: delete' });
  });

  it('reconnects after a dropped socket in the middle of a turn and resumes: one unbroken stream', async () => {
    const daemon = await startDaemon(h, ['--agent', 'test/fixtures/streaming-agent.mjs']);
    const client = await open(daemon.home);
    const states: string[] = [];
    client.onConnectionState = (state) => states.push(state);
    await client.createSession({ session_id: 'drop' });
    const events = client.events('drop');
    await client.submit('drop', 'stream 200 3');
    const seen: SessionEvent[] = [];
    let dropped = false;
    for await (const event of events) {
      seen.push(event);
      if (!dropped && seen.filter((e) => e.type === 'message.delta').length === 40) {
        dropped = true;
        client['rpc'].close(); // the socket goes away, as it would on a network failure
      }
      if (event.type === 'turn.end') break;
    }
    expect(states).to.deep.equal(['reconnecting', 'connected']);
    expect(text(seen)).to.equal(Array.from({ length: 200 }, (_, i) => `part ${i + 1} `).join(''));
    expect(seen.map((e) => e.seq)).to.deep.equal(Array.from({ length: seen.length }, (_, i) => i + 1));
  });

  // The example connects by its home, over the socket: it runs once.
  if (transport === 'unix socket') it('the example front-end (examples/frontend.mjs) runs a turn and answers its questions from stdin', async () => {
    const daemon = await startDaemon(h);
    const { code, stdout } = await h.runScript('examples/frontend.mjs', ['pick a colour\n/ask which one?\n/approve paint it'], { TURNHOST_HOME: daemon.home }, 'teal\ny\n');
    expect(code).to.equal(0);
    expect(stdout).to.equal('pick a colour\nanswer: teal\napproved: paint it\n');
  });

  it('follows a session across a daemon restart, saying that the replay is partial', async () => {
    const daemon = await startDaemon(h);
    const client = await open(daemon.home);
    await client.createSession({ session_id: 'r' });
    await collect(client.turn('r', 'before the restart'), () => false);
    const events = client.events('r');
    const after = collect(events, (e) => e.type === 'turn.end');
    const reconnected = new Promise<void>((resolve) => {
      client.onConnectionState = (state) => state === 'connected' && resolve();
    });
    const stopped = await h.runCli(['stop', '--home', daemon.home]);
    expect(stopped.code).to.equal(0);
    await startDaemon(h, [], {}, daemon.home);
    await reconnected;
    await client.submit('r', 'after the restart');
    const seen = await after;
    expect(seen[0]!.type).to.equal('replay.partial');
    expect(text(seen)).to.equal('after the restart');
  });
});
}

describe('a stop aimed at one turn (real daemon)', function () {
  this.timeout(30_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('session.interrupt with an old turn_id leaves the running turn alone; with the current one it stops it', async () => {
    const daemon = await startDaemon(h);
    const client = await connect({ home: daemon.home });
    try {
      await client.createSession({ session_id: 'stop' });
      // Followed before the submit: a quick turn's events may arrive before its submit's answer.
      const events = client.events('stop');
      const first = await client.submit('stop', 'quick');
      for await (const event of events) if (event.type === 'turn.end' && event.payload.turn_id === first.turn_id) break;
      const second = await client.submit('stop', 'long\n/sleep 30');
      expect(await client.interrupt('stop', { turn_id: first.turn_id })).to.deep.equal({ applied: false, reason: 'not_current' });
      expect(await client.interrupt('stop', { turn_id: 'never-was' })).to.deep.equal({ applied: false, reason: 'not_current' });
      expect((await client.hostStatus()).sessions.running).to.equal(1);
      expect(await client.interrupt('stop', { turn_id: second.turn_id })).to.deep.equal({ applied: true });
      for await (const event of events) {
        if (event.type === 'turn.end' && event.payload.turn_id === second.turn_id) {
          expect(event.payload.interrupted).to.equal(true);
          break;
        }
      }
    } finally {
      client.close();
    }
  });
});
