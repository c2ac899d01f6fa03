// What a holder of one node's token, or a process on a dead node's port, can do to a cluster
// (PROTOCOL.md §6.2): only session methods cross nodes, and nodes prove they hold the cluster
// secret by a challenge and an HMAC of it, both ways, without sending it. Real daemons on a real
// PostgreSQL; the test plays a node itself (with the secret read from the database) or a process
// that took a dead node's port.
import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { expect } from 'chai';
import { WebSocket, WebSocketServer } from 'ws';
import { freshNonce, helloFrame, ownerProof, parseChallenge, PEER_HEADER, PEER_WELCOME, peerProof, proofFrame, sameProof } from '../../protocol/peer-handshake.js';
import { clusterForSuite } from '../helpers/cluster.js';
import { hostPid, type Daemon } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { postgresForSuite } from '../helpers/postgres.js';

const LEASE_SECS = 2;

interface Status {
  supervisor: { pid: number; home: string };
  host: { pid: number; restarts: number };
  http: { url: string };
}

describe('nodes on one PostgreSQL: what one node\'s client, or a process on a dead node\'s port, cannot do (real daemons)', function () {
  this.timeout(60_000);
  const h = new Harness();
  const server = postgresForSuite();
  const { daemons, clientOf } = clusterForSuite(h, LEASE_SECS);

  const secretOf = async (url: string): Promise<string> => (await server().query<{ secret: string }>(url, 'SELECT secret FROM cluster_secret'))[0]!.secret;

  /** A session that node b owns, made by a client of b. */
  async function sessionOnB(b: Daemon): Promise<string> {
    const onB = await clientOf(b);
    await onB.call('session.create', { session_id: 'on-b' });
    expect(await onB.call('prompt.submit', { session_id: 'on-b', text: 'mine' })).to.include({ status: 'streaming' });
    await onB.nextEvent('turn.end', 'on-b');
    return 'on-b';
  }

  it('host.status, host.restart and daemon.shutdown act on the node the client reached, whatever session their params name', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b']);
    const sid = await sessionOnB(b!);
    const onA = await clientOf(a!);
    const onB = await clientOf(b!);
    const bHost = await hostPid(onB);

    const status = await onA.call<Status>('host.status', { session_id: sid });
    expect(status.supervisor.pid).to.equal(a!.process.pid);
    expect(status.supervisor.home).to.equal(a!.home);
    await onA.call('host.restart', { session_id: sid });
    await onA.call('daemon.shutdown', { session_id: sid, wait: 0 });
    expect((await a!.process.waitExit()).code).to.equal(0);
    const after = await onB.call<Status>('host.status');
    expect(after.host).to.include({ pid: bHost, restarts: 0 });
  });

  it('a node\'s link proves the secret both ways and may call session methods only: host.status over it is 4003', async () => {
    const url = await server().database();
    const [, b] = await daemons(url, ['a', 'b']);
    const sid = await sessionOnB(b!);
    const edge = (await (await clientOf(b!)).call<Status>('host.status')).http.url;
    const link = await linkAs('a', edge, 'b', await secretOf(url));
    try {
      const refused = await link.call('host.status', {});
      expect(refused['error']).to.include({ code: 4003 });
      const history = await link.call('session.history', { session_id: sid });
      expect((history['result'] as { messages: unknown[] }).messages).to.have.length(2);
    } finally {
      link.close();
    }
    // A link that shows a wrong proof, or the secret as a bearer token as links once did, is not served.
    await expectRefused(linkAs('a', edge, 'b', 'not-the-secret'));
    const bearer = new WebSocket(new URL('/v1/rpc', edge).href.replace(/^http/, 'ws'), { headers: { authorization: `Bearer ${await secretOf(url)}` } });
    const closed = await new Promise<number>((resolve) => {
      bearer.on('open', () => bearer.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'host.status', params: {} })));
      bearer.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      bearer.on('close', (code) => resolve(code));
      bearer.on('error', () => {});
    });
    expect(closed).to.be.oneOf([401, 1008]);
  });

  it('a process that takes a dead node\'s port learns no secret and no client message; the client is told the node cannot be reached', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b']);
    const sid = await sessionOnB(b!);
    const onB = await clientOf(b!);
    const bStatus = await onB.call<Status>('host.status');
    const port = Number(new URL(bStatus.http.url).port);
    for (const pid of [b!.process.pid, bStatus.host.pid]) process.kill(pid, 'SIGKILL');
    await b!.process.waitExit();

    const impostor = await Impostor.listen(port);
    try {
      const onA = await clientOf(a!);
      const refused = await onA.call('prompt.submit', { session_id: sid, text: 'a prompt for b' }).catch((err: { code?: number; message: string }) => err);
      expect(refused).to.include({ code: 5019 });
      expect(impostor.upgrades).to.be.above(0);
      const secret = await secretOf(url);
      expect(impostor.seen).to.not.include(secret);
      expect(impostor.seen).to.not.include('a prompt for b');
    } finally {
      await impostor.close();
    }
  });

  it('cluster rotate-secret: every node takes the new secret within a heartbeat, the links made with the old one end, and the old one proves nothing', async () => {
    const url = await server().database();
    const [a, b] = await daemons(url, ['a', 'b']);
    const sid = await sessionOnB(b!);
    const onA = await clientOf(a!);
    expect(await onA.call('prompt.submit', { session_id: sid, text: 'through a' })).to.include({ status: 'streaming' });
    await onA.nextEvent('turn.end', sid);
    const old = await secretOf(url);
    const edge = (await (await clientOf(b!)).call<Status>('host.status')).http.url;
    const oldLink = await linkAs('c', edge, 'b', old);

    const rotated = await h.runCli(['cluster', 'rotate-secret', '--store', url]);
    expect(rotated.code, rotated.stderr).to.equal(0);
    const fresh = await secretOf(url);
    expect(fresh).to.not.equal(old);
    expect(rotated.stdout + rotated.stderr).to.not.include(fresh);
    // Within a heartbeat (5 s) and a margin: the link made with the old secret ends.
    expect(await oldLink.closedWithin(8_000)).to.equal(true);
    // a's own link to b ended too (whichever node saw the new secret first closed it).
    await a!.process.logged(/the link to the node that owns a session closed/, 8_000);
    await expectRefused(linkAs('c', edge, 'b', old));
    const again = await linkAs('c', edge, 'b', fresh);
    again.close();
    expect(await onA.call('prompt.submit', { session_id: sid, text: 'after the rotation' })).to.include({ status: 'streaming' });
    await onA.nextEvent('turn.end', sid, (e) => e.seq > 0 && onA.reply(sid).includes('after the rotation'));
  });
});

interface Link {
  call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>>;
  closedWithin(ms: number): Promise<boolean>;
  close(): void;
}

/** Opens a node's link to `edge` as node `self`, proving `secret`; rejects when the owner does not serve it. */
function linkAs(self: string, edge: string, owner: string, secret: string): Promise<Link> {
  const ws = new WebSocket(new URL('/v1/rpc', edge).href.replace(/^http/, 'ws'), { headers: { [PEER_HEADER]: self } });
  const nonce = freshNonce();
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  return new Promise((resolve, reject) => {
    let proved = false;
    ws.on('error', reject);
    ws.once('open', () => ws.send(helloFrame({ node_id: self, nonce })));
    ws.once('close', () => reject(new Error('the owner closed the link')));
    const handshake = (data: Buffer): void => {
      const text = data.toString();
      if (!proved) {
        const challenge = parseChallenge(text);
        if (challenge === null || !sameProof(challenge.proof, ownerProof(secret, owner, self, nonce, challenge.nonce))) {
          ws.close();
          return reject(new Error('the owner did not prove the secret'));
        }
        proved = true;
        ws.send(proofFrame(peerProof(secret, self, owner, challenge.nonce, nonce)));
        return;
      }
      if (text !== PEER_WELCOME) return reject(new Error(`not welcomed: ${text}`));
      ws.off('message', handshake);
      let next = 0;
      resolve({
        call: (method, params) =>
          new Promise((answered) => {
            const id = ++next;
            const onAnswer = (answer: Buffer): void => {
              const message = JSON.parse(answer.toString()) as Record<string, unknown>;
              if (message['id'] !== id) return;
              ws.off('message', onAnswer);
              answered(message);
            };
            ws.on('message', onAnswer);
            ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
          }),
        closedWithin: (ms) => Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]),
        close: () => ws.close(),
      });
    };
    ws.on('message', handshake);
  });
}

async function expectRefused(link: Promise<Link>): Promise<void> {
  const outcome = await link.then(
    (l) => {
      l.close();
      return 'served';
    },
    (err: Error) => err.message,
  );
  expect(outcome).to.not.equal('served');
}

/** A process on a dead node's port: it accepts WebSocket upgrades and keeps all it is sent, headers and frames. */
class Impostor {
  upgrades = 0;
  seen = '';

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    private readonly wss: WebSocketServer,
  ) {}

  static async listen(port: number): Promise<Impostor> {
    const wss = new WebSocketServer({ noServer: true });
    const server = createServer((_req, res) => res.end());
    const impostor = new Impostor(server, wss);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      impostor.upgrades++;
      impostor.seen += JSON.stringify(req.headers);
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('message', (data) => {
          impostor.seen += data.toString();
          // What it can answer without the secret: a challenge with a made-up proof.
          ws.send(JSON.stringify({ peer_challenge: { node_id: 'b', nonce: freshNonce(), proof: 'made-up' } }));
        });
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return impostor;
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
