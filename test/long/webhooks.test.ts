// Webhooks (PROTOCOL.md §8.2) against the real daemon and host, to a receiver this test runs on
// 127.0.0.1 that checks every delivery with the Standard Webhooks library and answers 500, 503 or
// nothing at all on demand: each event signed; one webhook-id across an event's attempts; one
// session's events in order after an outage; the outbox across a kill -9 of the daemon and the host;
// the secret in no log and no output but `webhook secret`.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { LoopbackServer } from '../helpers/loopback-server.js';
import { CLI, Harness } from '../helpers/processes.js';
import { httpRequest } from '../helpers/http.js';
import { readToken } from '../../edge/http-token.js';
import { Waiters } from '../helpers/waiters.js';

interface Delivery {
  id: string;
  type: string;
  data: Record<string, unknown>;
  /** What the receiver answered. */
  answered: number | 'nothing';
}

type Answer = number | 'nothing';

/** A webhook receiver: verifies each POST with `standardwebhooks`; answers what `next` says. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  readonly refused: string[] = [];
  /** The answers to give, in order; 204 once they run out. */
  answers: Answer[] = [];
  /** While down, every request is left without an answer (the sender's attempt times out). */
  down = false;
  private readonly waiters = new Waiters<void>();
  private readonly hanging: ServerResponse[] = [];

  private constructor(
    readonly server: LoopbackServer,
    private readonly secret: () => string,
  ) {}

  static async start(secret: () => string): Promise<Receiver> {
    let receiver: Receiver | null = null;
    const server = await LoopbackServer.start((req, body, res) => receiver!.handle(req, body, res));
    receiver = new Receiver(server, secret);
    return receiver;
  }

  get url(): string {
    return `${this.server.origin}/hook`;
  }

  delivered(): Delivery[] {
    return this.deliveries.filter((d) => d.answered === 204);
  }

  async until(match: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    if (match()) return;
    await this.waiters.wait(match, timeoutMs, () => `no ${what} within ${timeoutMs} ms; got ${JSON.stringify(this.deliveries.map((d) => [d.type, d.answered]))}, refused ${this.refused.join(', ')}`);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    await this.server.close();
  }

  private handle(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    let event: { type: string; data: Record<string, unknown> };
    try {
      event = new Webhook(this.secret()).verify(body.toString(), req.headers as Record<string, string>) as typeof event;
    } catch (err) {
      this.refused.push((err as Error).message);
      res.writeHead(401).end();
      this.waiters.offer(undefined, 'all');
      return;
    }
    const answered = this.down ? 'nothing' : (this.answers.shift() ?? 204);
    this.deliveries.push({ id: String(req.headers['webhook-id']), type: event.type, data: event.data, answered });
    this.waiters.offer(undefined, 'all');
    if (answered === 'nothing') this.hanging.push(res);
    else res.writeHead(answered).end(answered === 204 ? undefined : 'down for maintenance');
  }
}

describe('webhooks (real daemon, real host, a receiver on 127.0.0.1)', function () {
  this.timeout(120_000);
  const h = new Harness();
  const receivers: Receiver[] = [];
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.close();
    await h.cleanup();
  });

  async function receiverFor(home: string): Promise<Receiver> {
    const secret = await h.runCli(['webhook', 'secret', '--home', home]);
    expect(secret.stdout).to.match(/^whsec_[A-Za-z0-9+/=]+\n$/);
    const receiver = await Receiver.start(() => readFileSync(join(home, 'webhook.secret'), 'utf8').trim());
    receivers.push(receiver);
    return receiver;
  }

  it('turn.end, turn.error, request.open and schedule.fired arrive signed, each checked by the standardwebhooks library; the secret is in no log', async () => {
    const home = h.tempDir();
    const receiver = await receiverFor(home);
    const daemon = await startDaemon(h, ['--webhook', receiver.url], {}, home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'a' });
    await client.call('prompt.submit', { session_id: 'a', text: 'hello there' });
    await client.nextEvent('turn.end', 'a');
    await client.call('prompt.submit', { session_id: 'a', text: '/fail on purpose' });
    await client.nextEvent('turn.error', 'a');
    await client.call('prompt.submit', { session_id: 'a', text: '/ask what colour?' });
    await client.until(() => client.requests.length === 1, 'the clarify');
    await receiver.until(() => receiver.deliveries.some((d) => d.type === 'request.open'), 'request.open');
    client.rpc.respond(client.requests[0]!.id, { result: { answer: 'blue' } });
    await client.call('schedule.create', { session_id: 'a', text: 'by schedule', at: new Date(Date.now() + 200).toISOString() });
    await receiver.until(() => receiver.delivered().filter((d) => d.type === 'turn.end').length === 3, 'three turn.end');
    const [end, error, open, fired] = ['turn.end', 'turn.error', 'request.open', 'schedule.fired'].map((type) => receiver.deliveries.find((d) => d.type === type)!);
    expect(end!.data).to.include({ session_id: 'a', interrupted: false, reply: 'hello there' });
    expect(end!.data['turn_id']).to.be.a('string');
    expect(error!.data).to.include({ session_id: 'a' });
    expect(String(error!.data['message'])).to.contain('on purpose');
    expect(open!.data).to.include({ session_id: 'a', method: 'clarify.request', question: 'what colour?' });
    expect(fired!.data).to.include({ session_id: 'a' });
    expect(fired!.data['schedule_id']).to.match(/^sch-/);
    // One session's events in the order they happened: the fire's before its turn's end.
    const types = receiver.delivered().map((d) => d.type);
    expect(types).to.deep.equal(['turn.end', 'turn.error', 'request.open', 'turn.end', 'schedule.fired', 'turn.end']);
    expect(receiver.refused).to.deep.equal([]);
    const secret = readFileSync(join(home, 'webhook.secret'), 'utf8').trim();
    expect(daemon.process.stderr).to.not.contain(secret.slice('whsec_'.length));
    expect(readFileSync(join(home, 'logs', 'turnhost.log'), 'utf8')).to.not.contain(secret.slice('whsec_'.length));
    client.close();
  });

  it('a receiver that answers 500, 503, then nothing for 10 s gets the same webhook-id again, then everything once, in order', async () => {
    const home = h.tempDir();
    const receiver = await receiverFor(home);
    receiver.answers = [500, 503, 'nothing'];
    const daemon = await startDaemon(h, ['--webhook', receiver.url, '--webhook-events', 'turn.end', '--listen', '127.0.0.1:0'], {}, home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'o' });
    for (const text of ['one', 'two', 'three']) {
      await client.call('prompt.submit', { session_id: 'o', text });
      await client.nextEvent('turn.end', 'o', (e) => client.events.filter((x) => x.type === 'turn.end').indexOf(e) === ['one', 'two', 'three'].indexOf(text));
    }
    await receiver.until(() => receiver.delivered().length === 3, 'the three turn.end delivered', 60_000);
    const attempts = receiver.deliveries.map((d) => [d.data['reply'], d.answered]);
    expect(attempts).to.deep.equal([
      ['one', 500],
      ['one', 503],
      ['one', 'nothing'],
      ['one', 204],
      ['two', 204],
      ['three', 204],
    ]);
    const firstIds = new Set(receiver.deliveries.slice(0, 4).map((d) => d.id));
    expect(firstIds.size, 'one webhook-id across the attempts of one event').to.equal(1);
    expect(new Set(receiver.delivered().map((d) => d.id)).size).to.equal(3);
    const port = Number(new URL((await client.call<{ http: { url: string } }>('host.status')).http.url).port);
    const metrics = (await httpRequest(port, { path: '/metrics', headers: { authorization: `Bearer ${readToken(home)!}` } })).text;
    const url = receiver.url.replace(/[/.]/g, (c) => `\\${c}`);
    expect(metrics).to.match(new RegExp(`^turnhost_webhook_deliveries_total\\{outcome="retried",url="${url}"\\} 3$`, 'm'));
    expect(metrics).to.match(new RegExp(`^turnhost_webhook_deliveries_total\\{outcome="delivered",url="${url}"\\} 3$`, 'm'));
    expect(metrics).to.match(new RegExp(`^turnhost_webhook_pending\\{url="${url}",status="pending"\\} 0$`, 'm'));
    client.close();
  });

  it('each URL is its own stream: while one receiver is down for 20 s the other gets every event of three sessions in order; the first gets them all after, in order, each once', async () => {
    const home = h.tempDir();
    const healthy = await receiverFor(home);
    const down = await receiverFor(home);
    down.down = true;
    const downSince = Date.now();
    const daemon = await startDaemon(h, ['--webhook', down.url, '--webhook', healthy.url, '--webhook-events', 'turn.end'], {}, home);
    const client = await TestClient.connect(daemon);
    const sessions = ['s1', 's2', 's3'];
    const texts = ['one', 'two', 'three', 'four'];
    for (const sid of sessions) await client.call('session.create', { session_id: sid });
    // Each session's prompts one after another, the sessions side by side.
    await Promise.all(
      sessions.map(async (sid) => {
        for (const text of texts) {
          const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text: `${sid} ${text}` });
          await client.nextEvent('turn.end', sid, (e) => e.payload['turn_id'] === turn_id);
        }
      }),
    );
    const all = sessions.length * texts.length;
    await healthy.until(() => healthy.delivered().length === all, 'every event at the healthy receiver while the other is down', 15_000);
    expect(down.down, 'the healthy receiver was served while the other was down').to.equal(true);
    expect(down.delivered()).to.deep.equal([]);
    expect(down.deliveries.length, 'the down receiver was tried').to.be.greaterThan(0);
    const inOrder = (receiver: Receiver, sid: string) => receiver.delivered().filter((d) => d.data['session_id'] === sid).map((d) => d.data['reply']);
    for (const sid of sessions) expect(inOrder(healthy, sid)).to.deep.equal(texts.map((t) => `${sid} ${t}`));
    // The outage lasts its 20 s whatever the turns took: that is what it is, not a wait for an event.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, downSince + 20_000 - Date.now())));
    down.down = false;
    await down.until(() => down.delivered().length === all, 'every event at the receiver that came back', 90_000);
    for (const sid of sessions) expect(inOrder(down, sid)).to.deep.equal(texts.map((t) => `${sid} ${t}`));
    const ids = down.delivered().map((d) => d.id);
    expect(new Set(ids).size, 'each event once').to.equal(all);
    expect(new Set(ids)).to.deep.equal(new Set(healthy.delivered().map((d) => d.id)));
    expect(healthy.deliveries.length, 'the healthy receiver was asked each event once').to.equal(all);
    client.close();
  });

  it('the outbox survives a kill -9 of the daemon and the host: events of a receiver that was down arrive after the restart', async () => {
    const home = h.tempDir();
    const receiver = await receiverFor(home);
    receiver.answers = Array<Answer>(1000).fill(503);
    const first = await startDaemon(h, ['--webhook', receiver.url, '--webhook-events', 'turn.end'], {}, home);
    const client = await TestClient.connect(first);
    const hostPid = (await client.call<{ host: { pid: number } }>('host.status')).host.pid;
    await client.call('session.create', { session_id: 'k' });
    await client.call('prompt.submit', { session_id: 'k', text: 'before the crash' });
    await client.nextEvent('turn.end', 'k');
    await receiver.until(() => receiver.deliveries.length >= 1, 'a refused attempt');
    const repl = await h.runScript(CLI, ['repl', '--home', home], {}, '.webhooks\n.schedules\n');
    expect(repl.stdout).to.match(/URL\s+PENDING\s+FAILED\n.*http:\/\/127\.0\.0\.1:\d+\/hook\s+1\s+0\n/);
    expect(repl.stdout).to.match(/EVENT\s+URL\s+SESSION\s+TYPE\s+STATUS\s+ATTEMPTS/);
    expect(repl.stdout).to.match(/msg_\S+\s+http:\/\/127\.0\.0\.1:\d+\/hook\s+k\s+turn\.end\s+pending\s+\d+\s+\S+\s+HTTP 503/);
    client.close();
    first.process.kill('SIGKILL');
    process.kill(hostPid, 'SIGKILL');
    await first.process.waitExit(10_000);
    receiver.answers = [];
    const second = await startDaemon(h, ['--webhook', receiver.url, '--webhook-events', 'turn.end'], {}, home);
    await receiver.until(() => receiver.delivered().length === 1, 'the event after the restart');
    const ids = new Set(receiver.deliveries.map((d) => d.id));
    expect(ids.size, 'every attempt, before and after the crash, carries one id').to.equal(1);
    expect(receiver.delivered()[0]!.data['reply']).to.equal('before the crash');
    const after = await TestClient.connect(second);
    await after.call('prompt.submit', { session_id: 'k', text: 'after the crash' });
    await receiver.until(() => receiver.delivered().length === 2, 'the next event');
    after.close();
  });
});
