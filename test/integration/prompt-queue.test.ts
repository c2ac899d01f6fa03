import { expect } from 'chai';
import { connect as connectSocket } from 'node:net';
import { join } from 'node:path';
import { connect, type TurnhostClient } from '../../client/index.js';
import type { EventParams } from '../../client/rpc-connection.js';
import { hostPid, hostReady, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

interface Submitted {
  status: string;
  turn_id?: string;
  queue_id?: string;
  position?: number;
  state?: string;
}

const payload = (e: EventParams) => e.payload as Record<string, unknown>;

/** What the daemon's REPL prints for `input`, over its socket. */
function replOutput(home: string, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connectSocket(join(home, 'repl.sock'));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.on('connect', () => socket.end(input));
  });
}

describe('input while a turn runs: the queue, steering, targeted stop, idempotent submit (real processes)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const clients: (TestClient | TurnhostClient)[] = [];
  const open = async (daemon: Pick<Daemon, 'socket'>) => {
    const client = await TestClient.connect(daemon);
    clients.push(client);
    return client;
  };
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await h.cleanup();
  });

  const submit = (c: TestClient, sid: string, text: string, more: Record<string, unknown> = {}) =>
    c.call<Submitted>('prompt.submit', { session_id: sid, text, ...more });
  const ends = (c: TestClient, sid: string) => c.events.filter((e) => e.session_id === sid && (e.type === 'turn.end' || e.type === 'turn.error'));
  const untilEnds = (c: TestClient, sid: string, n: number, timeoutMs = 20_000) => c.until(() => ends(c, sid).length >= n, `${n} turn ends of ${sid}`, timeoutMs);
  const queueEvents = (c: TestClient, sid: string) => c.events.filter((e) => e.session_id === sid && e.type === 'session.queue');
  const replies = (c: TestClient, sid: string) => c.events.filter((e) => e.session_id === sid && e.type === 'message.complete').map((e) => String(payload(e)['text']));
  const history = async (c: TestClient, sid: string) =>
    (await c.call<{ messages: { role: string; content: string }[] }>('session.history', { session_id: sid })).messages.map((m) => `${m.role}:${m.content}`);

  it('queues three prompts behind a running turn; they run in order with their queue_ids, one session.queue revision per change', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    const first = await submit(c, 'q', '/sleep 2');
    expect(first.status).to.equal('streaming');
    const queued = [await submit(c, 'q', 'one'), await submit(c, 'q', 'two'), await submit(c, 'q', 'three')];
    expect(queued.map((q) => [q.status, q.position])).to.deep.equal([['queued', 1], ['queued', 2], ['queued', 3]]);
    await untilEnds(c, 'q', 4);
    expect(replies(c, 'q')).to.deep.equal(['', 'one', 'two', 'three']);
    const started = c.events.filter((e) => e.session_id === 'q' && e.type === 'turn.started').slice(1);
    expect(started.map((e) => payload(e)['queue_id'])).to.deep.equal(queued.map((q) => q.queue_id));
    expect(ends(c, 'q').slice(1).map((e) => payload(e)['queue_id'])).to.deep.equal(queued.map((q) => q.queue_id));
    const revisions = queueEvents(c, 'q').map((e) => payload(e)['revision'] as number);
    expect(revisions).to.have.length(6); // three added, three started
    revisions.forEach((revision, i) => expect(revision).to.equal(revisions[0]! + i));
    // Each event carries the whole queue (the daemon makes them from the host's queue.delta frames).
    const queues = queueEvents(c, 'q').map((e) => (e.payload as { items: { text: string }[] }).items.map((i) => i.text));
    expect(queues).to.deep.equal([['one'], ['one', 'two'], ['one', 'two', 'three'], ['two', 'three'], ['three'], []]);
  });

  it('edits and deletes a queued prompt; an unknown item is 4041', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    await submit(c, 'e', '/sleep 2');
    const a = await submit(c, 'e', 'first draft');
    const b = await submit(c, 'e', 'to be deleted');
    expect((await c.call<{ revision: number }>('session.queue.update', { session_id: 'e', queue_id: a.queue_id, action: 'edit', text: 'edited' })).revision).to.be.a('number');
    await c.call('session.queue.update', { session_id: 'e', queue_id: b.queue_id, action: 'delete' });
    const unknown = await c.call('session.queue.update', { session_id: 'e', queue_id: 'q-nothing', action: 'delete' }).catch((e: { code: number }) => e);
    expect(unknown).to.include({ code: 4041 });
    const queue = await c.call<{ items: { queue_id: string; text: string }[] }>('session.queue.get', { session_id: 'e' });
    expect(queue.items.map((i) => i.text)).to.deep.equal(['edited']);
    await untilEnds(c, 'e', 2);
    expect(replies(c, 'e')).to.deep.equal(['', 'edited']);
  });

  it('a stop with an old turn_id leaves the running turn alone; a stop clears the queue, keep_queue keeps it', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    const old = await submit(c, 's', 'quick');
    await untilEnds(c, 's', 1);
    const running = await submit(c, 's', '/sleep 30');
    await c.nextEvent('turn.started', 's', (e) => payload(e)['turn_id'] === running.turn_id);
    await submit(c, 's', 'kept');
    expect(await c.call('session.interrupt', { session_id: 's', turn_id: old.turn_id })).to.deep.equal({ applied: false, reason: 'not_current' });
    expect((await c.call<{ items: unknown[] }>('session.queue.get', { session_id: 's' })).items).to.have.length(1);
    expect(await c.call('session.interrupt', { session_id: 's', turn_id: running.turn_id, keep_queue: true })).to.include({ applied: true });
    await untilEnds(c, 's', 3);
    expect(replies(c, 's').at(-1)).to.equal('kept');
    const again = await submit(c, 's', '/sleep 30');
    await c.nextEvent('turn.started', 's', (e) => payload(e)['turn_id'] === again.turn_id);
    await submit(c, 's', 'dropped one');
    await submit(c, 's', 'dropped two');
    await c.call('session.interrupt', { session_id: 's' });
    await untilEnds(c, 's', 4);
    expect((await c.call<{ items: unknown[] }>('session.queue.get', { session_id: 's' })).items).to.deep.equal([]);
    expect((queueEvents(c, 's').at(-1)!.payload as { items: unknown[] }).items).to.deep.equal([]);
    expect(replies(c, 's')).to.not.include('dropped one');
  });

  it('on_busy "interrupt": the running turn ends interrupted, then the new prompt runs; "reject" is 4009', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    const slow = await submit(c, 'i', '/sleep 30');
    await c.nextEvent('turn.started', 'i');
    const refused = await submit(c, 'i', 'no', { on_busy: 'reject' }).catch((e: { code: number }) => e);
    expect(refused).to.include({ code: 4009 });
    const now = await submit(c, 'i', 'right now', { on_busy: 'interrupt' });
    expect(now.status).to.equal('streaming');
    await untilEnds(c, 'i', 2);
    const [firstEnd, secondEnd] = ends(c, 'i');
    expect(payload(firstEnd!)).to.include({ turn_id: slow.turn_id, interrupted: true });
    expect(payload(secondEnd!)).to.include({ turn_id: now.turn_id, interrupted: false });
    expect(replies(c, 'i').at(-1)).to.equal('right now');
  });

  it('steering: /await-steer takes a steered text (stored where taken); one that arrives too late runs next, queued first', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    const waiting = await submit(c, 'st', '/await-steer 10');
    await c.nextEvent('turn.started', 'st');
    const steered = await submit(c, 'st', 'go left', { on_busy: 'steer' });
    expect(steered).to.deep.equal({ status: 'steered', turn_id: waiting.turn_id });
    await untilEnds(c, 'st', 1);
    expect(replies(c, 'st')).to.deep.equal(['steered: go left']);
    expect(await history(c, 'st')).to.deep.equal(['user:/await-steer 10', 'user:go left', 'assistant:steered: go left']);
    // A turn that never takes steering: the text becomes the queue's head when it ends.
    await submit(c, 'st', '/sleep 2');
    await c.until(() => c.events.filter((e) => e.session_id === 'st' && e.type === 'turn.started').length === 2, 'the second turn');
    const late = await submit(c, 'st', 'too late', { on_busy: 'steer' });
    expect(late.status).to.equal('steered');
    await untilEnds(c, 'st', 3);
    const lastQueueChanges = queueEvents(c, 'st').map((e) => (e.payload as { items: { text: string }[] }).items.map((i) => i.text));
    expect(lastQueueChanges.slice(-2)).to.deep.equal([['too late'], []]);
    expect(replies(c, 'st').at(-1)).to.equal('too late');
    expect(payload(ends(c, 'st').at(-1)!)['queue_id']).to.be.a('string');
  });

  it('a repeated client_message_id runs nothing and answers duplicate, also across a kill -9 of the host', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    const first = await submit(c, 'd', '/sleep 2', { client_message_id: 'm-1' });
    const again = await submit(c, 'd', '/sleep 2', { client_message_id: 'm-1' });
    expect(again).to.deep.equal({ status: 'duplicate', state: 'running', turn_id: first.turn_id });
    const queued = await submit(c, 'd', 'once', { client_message_id: 'm-2' });
    expect(await submit(c, 'd', 'once', { client_message_id: 'm-2' })).to.deep.equal({ status: 'duplicate', state: 'queued', queue_id: queued.queue_id, turn_id: queued.turn_id });
    await untilEnds(c, 'd', 2);
    expect(await submit(c, 'd', 'once', { client_message_id: 'm-2' })).to.include({ status: 'duplicate', state: 'done', turn_id: queued.turn_id });
    process.kill(await hostPid(c), 'SIGKILL');
    await hostReady(daemon, 2);
    expect(await submit(c, 'd', 'once', { client_message_id: 'm-2' })).to.include({ status: 'duplicate', state: 'done' });
    expect(await submit(c, 'd', 'new', { client_message_id: 'm-3' })).to.include({ status: 'streaming' });
    await untilEnds(c, 'd', 3);
    expect(replies(c, 'd').filter((r) => r === 'once')).to.have.length(1);
    expect((await history(c, 'd')).filter((m) => m === 'user:once')).to.have.length(1);
  });

  it('kill -9 with three queued prompts: after the restart all three run in order, none twice', async () => {
    const daemon = await startDaemon(h);
    const c = await open(daemon);
    await submit(c, 'k', '/sleep 30');
    await c.nextEvent('turn.started', 'k');
    for (const text of ['a', 'b', 'c']) await submit(c, 'k', text);
    process.kill(await hostPid(c), 'SIGKILL');
    await untilEnds(c, 'k', 4, 30_000);
    expect(ends(c, 'k').map((e) => e.type)).to.deep.equal(['turn.error', 'turn.end', 'turn.end', 'turn.end']);
    expect(replies(c, 'k')).to.deep.equal(['a', 'b', 'c']);
    expect(await history(c, 'k')).to.deep.equal(['user:/sleep 30', 'user:a', 'assistant:a', 'user:b', 'assistant:b', 'user:c', 'assistant:c']);
  });

  it('turnhost stop with queued prompts, then start: nothing runs until a client resumes the session', async () => {
    const home = h.tempDir();
    const daemon = await startDaemon(h, [], {}, home);
    const c = await open(daemon);
    await submit(c, 'p', '/sleep 30');
    await c.nextEvent('turn.started', 'p');
    for (const text of ['x', 'y']) await submit(c, 'p', text);
    const stop = await h.runCli(['stop', '--home', home, '--wait', '0']);
    expect(stop.code, stop.stderr).to.equal(0);
    c.close();
    const next = await startDaemon(h, [], {}, home);
    const watcher = await open(next);
    // Another session's whole turn: the host is working, and the queue of p is still untouched.
    await submit(watcher, 'other', 'busy elsewhere');
    await untilEnds(watcher, 'other', 1);
    const queue = await watcher.call<{ items: { queue_id: string; text: string }[] }>('session.queue.get', { session_id: 'p' });
    expect(queue.items.map((i) => i.text)).to.deep.equal(['x', 'y']);
    // Nothing runs: a steer has nowhere to go, and the item stays where it was.
    const steer = await watcher.call('session.queue.update', { session_id: 'p', queue_id: queue.items[1]!.queue_id, action: 'steer' }).catch((e: { code: number }) => e);
    expect(steer).to.include({ code: 4009 });
    expect((await watcher.call<typeof queue>('session.queue.get', { session_id: 'p' })).items.map((i) => i.text)).to.deep.equal(['x', 'y']);
    // An operator sees the waiting queue in the REPL.
    expect(await replOutput(home, '.queues\n')).to.match(/SESSION\s+QUEUED\s+OLDEST\s*\n\s*p\s+2\s/);
    expect(await history(watcher, 'p')).to.deep.equal(['user:/sleep 30']);
    await watcher.call('session.resume', { session_id: 'p' });
    await untilEnds(watcher, 'p', 2);
    expect(replies(watcher, 'p')).to.deep.equal(['x', 'y']);
  });

  it('turnhost/client: a submit carries a client_message_id; the queue methods are typed', async () => {
    const daemon = await startDaemon(h);
    const client = await connect({ home: daemon.home });
    clients.push(client);
    await client.createSession({ session_id: 'lib' });
    const running = await client.submit('lib', '/sleep 2');
    const queued = await client.submit('lib', 'later', { client_message_id: 'cm-1' });
    expect(queued).to.include({ status: 'queued', position: 1 });
    expect(await client.submit('lib', 'later', { client_message_id: 'cm-1' })).to.include({ status: 'duplicate', state: 'queued' });
    const queue = await client.queue('lib');
    expect(queue.items.map((i) => [i.text, i.client_message_id])).to.deep.equal([['later', 'cm-1']]);
    await client.updateQueue('lib', queue.items[0]!.queue_id, 'edit', 'later, edited');
    const events = [];
    for await (const event of client.events('lib')) {
      events.push(event);
      if (event.type === 'turn.end' && event.payload.turn_id === (queued as { turn_id: string }).turn_id) break;
    }
    expect(events.filter((e) => e.type === 'message.complete').map((e) => (e.payload as { text: string }).text)).to.deep.equal(['', 'later, edited']);
    expect(running.status).to.equal('streaming');
  });
});
