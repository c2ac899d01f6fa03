// A client's methods on a session that another live node owns are carried out there (PROTOCOL.md
// §6.2). The client's own messages go, unchanged, over a WebSocket to the owner's edge, which is
// shown the cluster secret; whatever the owner sends back on it (answers, the session's events
// with the owner's `seq`, server requests) reaches the client unchanged. One link per client and
// owner, so a replay that one client asks for never reaches another. A message that came over such
// a link is never forwarded again (the edge gives a peer no PeerLinks): the owner answers or refuses.
import { OWNER } from '../../persistence/people.js';
import type { Identity } from './identity.js';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import type { LeaseView, PeerNode } from '../../persistence/reader.js';
import { ErrorCodes, errorLine, RpcError, type ClientMessage } from '../../protocol/client-rpc.js';
import { MAX_FRAME_BYTES } from '../../protocol/line-reader.js';
import { freshNonce, helloFrame, ownerProof, parseChallenge, PEER_HEADER, PEER_WELCOME, peerProof, proofFrame, sameProof } from '../../protocol/peer-handshake.js';
import type { RequestId } from '../../protocol/rpc.js';
import { routeClass } from '../host/routes.js';
import { SECOND_MS } from '../runtime.js';

/** What a node knows of the cluster to forward: who owns a session now, and the secret to show. */
export interface Cluster {
  readonly nodeId: string;
  /** The live node other than this one that holds the session's lease, or null. */
  liveOwner(sid: string): Promise<PeerNode | null>;
  /** Null until the store has one (the host makes it at its first start). */
  secret(): Promise<string | null>;
  /** `end` runs whenever the secret is replaced (every link made with the old one ends); returns the unsubscribe. */
  onSecretRotated(end: () => void): () => void;
  /** The session's lease, whoever holds it; null when none does. */
  lease(sid: string): Promise<LeaseView | null>;
  /** A client follows the session here: this node takes it over once no live node holds it (takeover-watch.ts). */
  follow(sid: string): void;
}

type Request = Extract<ClientMessage, { kind: 'request' }>;

/** Sent in place of an answer: the owner's answer comes over the link. */
export const FORWARDED: unique symbol = Symbol('forwarded');

/** A peer edge that does not finish its handshake in this time is taken as gone. */
const CONNECT_TIMEOUT_MS = 5 * SECOND_MS;
/** Methods that name a session but only read the shared store: answered here, whoever owns it. */
const READ_HERE = new Set(['session.history', 'session.forks', 'session.usage', 'session.export']);
/** Methods on a session that make another here: the new session is this node's (PROTOCOL.md §2.2). */
const MADE_HERE = new Set(['session.fork', 'session.import']);
/** Methods that act on one session besides `session.*` and the control routes (PROTOCOL.md §6.2). */
const ON_A_SESSION = new Set(['prompt.submit', 'prompt.edit', 'clarify.lock', 'request.answer']);

/**
 * Only methods on a session cross nodes: whatever its params name, any other method (`host.status`,
 * `host.restart`, `daemon.shutdown`) acts on the node the client reached, and a peer may call none.
 */
export function isSessionMethod(method: string): boolean {
  return method.startsWith('session.') || ON_A_SESSION.has(method) || routeClass(method) !== undefined;
}

/** Methods the host carries out on the session, which it loads (and so takes its lease) first. */
const TAKES_LEASE = new Set(['prompt.submit', 'session.create', 'session.queue.get', 'session.queue.update']);
/** Methods after which the client follows the session's events (PROTOCOL.md §2). */
const FOLLOWS = new Set(['prompt.submit', 'session.create', 'session.resume', 'session.retry', 'prompt.edit']);
/** Methods that name a server request, not a session: they go where that request came from. */
const ANSWERS = new Set(['request.answer', 'clarify.lock']);
/** An event line as the gateway writes it: relayed without being parsed. */
const EVENT_PREFIX = '{"jsonrpc":"2.0","method":"event"';

export class PeerLinks {
  /** By node id: at most one per node of the cluster. */
  private readonly links = new Map<string, PeerLink>();
  /** A server request the client was sent over a link → that link, where its answer goes. */
  private readonly serverRequests = new Map<string, PeerLink>();
  /** Sessions this node's host took a request of: no need to ask the store who owns them, until the host refuses one. */
  private readonly ownedHere = new Set<string>();
  /** Each message's way is chosen after the one before it: the client's order holds wherever they go. */
  private chosen: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly cluster: Cluster,
    private readonly write: (line: string) => void,
    /** The client follows the session's events on this node (the gateway attaches it). */
    private readonly followHere: (sid: string) => void,
    private readonly log: Logger,
    /** Who the client is: vouched for on each request sent on, so the owner node applies the same rules (PROTOCOL.md §5.6). */
    private readonly identity: Identity,
  ) {
    this.unsubscribe = cluster.onSecretRotated(() => {
      for (const link of [...this.links.values()]) link.end('the cluster secret was replaced');
    });
  }

  /**
   * A request of the client: `here` runs it on this node, unless another node owns its session. A
   * host that refuses a session another node took in the meantime (its lease is taken in the host,
   * after the look) has its request sent on to that node.
   */
  request(message: Request, text: string, here: () => Promise<unknown>): Promise<unknown> {
    if (!isSessionMethod(message.method)) return here();
    const sid = sessionOf(message);
    const outcome = this.inOrder(() => this.destination(message)).then(async (target) => {
      if (target !== null) return this.forwardOrHere(target, message, text, here);
      try {
        const result = await here();
        if (sid !== null && TAKES_LEASE.has(message.method)) this.ownedHere.add(sid);
        return result;
      } catch (err) {
        if (!(err instanceof RpcError) || err.code !== ErrorCodes.sessionBusy || sid === null) throw err;
        this.ownedHere.delete(sid);
        const owner = await this.ownerLink(sid);
        if (owner === null) throw err;
        return this.forwardOrHere(owner, message, text, here);
      }
    });
    // Until this node is known to own the session, the next message waits for this one's outcome:
    // one refused here and sent on must not arrive at the owner after those sent there directly.
    if (sid !== null && !this.ownedHere.has(sid)) this.chosen = outcome.catch(() => {});
    return outcome;
  }

  /** The client's answer to a server request that came over a link goes back over it; false when it is this node's. */
  response(id: RequestId, text: string): boolean {
    const link = typeof id === 'string' ? this.serverRequests.get(id) : undefined;
    if (link === undefined) return false;
    this.serverRequests.delete(id as string);
    void this.inOrder(async () => link).then((target) => this.forward(target, text, undefined)).catch(() => {});
    return true;
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    for (const link of this.links.values()) link.close();
    this.links.clear();
  }

  private inOrder<T>(choose: () => Promise<T>): Promise<T> {
    const next = this.chosen.then(choose);
    this.chosen = next.catch(() => {});
    return next;
  }

  private async destination(message: Request): Promise<PeerLink | null> {
    if (ANSWERS.has(message.method)) {
      const requestId = message.params['request_id'];
      return typeof requestId === 'string' ? (this.serverRequests.get(requestId) ?? null) : null;
    }
    const sid = sessionOf(message);
    return sid === null || READ_HERE.has(message.method) || MADE_HERE.has(message.method) || this.ownedHere.has(sid) ? null : this.ownerLink(sid);
  }

  private async ownerLink(sid: string): Promise<PeerLink | null> {
    let owner: PeerNode | null;
    try {
      owner = await this.cluster.liveOwner(sid);
    } catch {
      return null; // the store cannot say: this node's host answers (with `storage` if it cannot read either)
    }
    if (owner === null) return null;
    if (owner.url === null) {
      throw new RpcError(ErrorCodes.sessionBusy, `session ${sid} is owned by node ${owner.node_id}, which has no address to forward to (--advertise)`, { node_id: owner.node_id });
    }
    const known = this.links.get(owner.node_id);
    if (known !== undefined && known.url === owner.url) return known;
    // Read before the new link is registered: a rotation this read discovers ends the older links, not this one.
    const secret = await this.cluster.secret();
    const raced = this.links.get(owner.node_id);
    if (raced !== undefined && raced.url === owner.url) return raced;
    raced?.close();
    const link = new PeerLink(owner.node_id, owner.url, this.cluster.nodeId, Promise.resolve(secret), {
      message: (text) => this.fromOwner(link, text),
      closed: (pending, why) => this.linkClosed(link, pending, why),
    });
    this.links.set(owner.node_id, link);
    return link;
  }

  private async forward(link: PeerLink, text: string, id: RequestId | undefined): Promise<typeof FORWARDED> {
    await link.send(this.vouching(text), id);
    return FORWARDED;
  }

  /** The home's owner is who a link's requests are by when they say nothing; anyone else is named. */
  private vouching(text: string): string {
    if (this.identity.user === OWNER) return text;
    const { user, admin } = this.identity;
    return JSON.stringify({ ...(JSON.parse(text) as object), vouched: { user, admin } });
  }

  /**
   * A resume whose owner cannot be reached is answered here, from the store, and the client follows
   * the session on this node: when the owner is dead, this node may well be the one that takes it over.
   */
  private async forwardOrHere(link: PeerLink, message: Request, text: string, here: () => Promise<unknown>): Promise<unknown> {
    const sid = sessionOf(message);
    try {
      if (sid !== null && FOLLOWS.has(message.method)) link.followed.add(sid);
      return await this.forward(link, text, message.id);
    } catch (err) {
      if (!(err instanceof RpcError) || err.code !== ErrorCodes.hostUnavailable) throw err;
      if (message.method === 'session.resume') return here();
      // The client asked to follow a session whose owner is gone: it follows it here, where the session comes once its lease expires.
      if (sid !== null && FOLLOWS.has(message.method)) this.followHere(sid);
      throw err;
    }
  }

  private fromOwner(link: PeerLink, text: string): void {
    if (!text.startsWith(EVENT_PREFIX)) this.noteServerRequest(link, text);
    this.write(`${text}\n`);
  }

  private noteServerRequest(link: PeerLink, text: string): void {
    try {
      const message = JSON.parse(text) as { id?: unknown; method?: unknown };
      if (typeof message.method === 'string' && typeof message.id === 'string') this.serverRequests.set(message.id, link);
      else if (message.id !== undefined) link.answered(message.id as RequestId);
    } catch {
      // Not JSON: relayed as it came, for the client to refuse.
    }
  }

  /** The owner went away: every request still waiting on it is answered, so no client call hangs. */
  private linkClosed(link: PeerLink, pending: RequestId[], why: string): void {
    if (this.links.get(link.nodeId) === link) this.links.delete(link.nodeId);
    for (const [id, via] of this.serverRequests) if (via === link) this.serverRequests.delete(id);
    if (this.closed) return;
    this.log.warn({ node: link.nodeId, pending: pending.length, why }, 'the link to the node that owns a session closed');
    // Its sessions go on wherever they are taken over; when it is here, the client sees their events.
    for (const sid of link.followed) this.followHere(sid);
    const error = new RpcError(ErrorCodes.hostUnavailable, `node ${link.nodeId}, which owns the session, cannot be reached (${why}): try again; its sessions move to another node once its leases expire`, {
      reason: 'crash',
      node_id: link.nodeId,
    });
    for (const id of pending) this.write(errorLine(id, error));
  }
}

function sessionOf(message: Request): string | null {
  const sid = message.params['session_id'];
  return typeof sid === 'string' ? sid : null;
}

interface LinkHandlers {
  message(text: string): void;
  closed(pending: RequestId[], why: string): void;
}

/** One WebSocket to a peer's edge, carrying one client's messages. */
class PeerLink {
  private readonly socket: Promise<WebSocket>;
  private readonly pending = new Set<RequestId>();
  /** The sessions whose events the client gets over this link. */
  readonly followed = new Set<string>();
  private ended = false;

  constructor(
    readonly nodeId: string,
    readonly url: string,
    /** This node's id, which the owner's proof must name as the peer it answers. */
    private readonly selfId: string,
    secret: Promise<string | null>,
    private readonly handlers: LinkHandlers,
  ) {
    this.socket = secret.then((value) => this.open(value));
    this.socket.catch((err: Error) => this.end(err.message));
  }

  async send(text: string, id: RequestId | undefined): Promise<void> {
    const ws = await this.socket;
    if (this.ended) throw this.gone('it closed');
    if (id !== undefined) this.pending.add(id);
    ws.send(text);
  }

  answered(id: RequestId): void {
    this.pending.delete(id);
  }

  close(): void {
    this.ended = true;
    void this.socket.then((ws) => ws.terminate(), () => {});
  }

  /**
   * The WebSocket to the owner's edge, once each side has proved it holds the cluster secret
   * (protocol/peer-handshake.ts): nothing of the client's is sent before the owner's proof, and
   * the secret itself never is.
   */
  private open(secret: string | null): Promise<WebSocket> {
    if (secret === null) return Promise.reject(this.gone('the store has no cluster secret yet'));
    const ws = new WebSocket(new URL('/v1/rpc', this.url).href.replace(/^http/, 'ws'), {
      headers: { [PEER_HEADER]: this.selfId },
      handshakeTimeout: CONNECT_TIMEOUT_MS,
      maxPayload: 2 * MAX_FRAME_BYTES,
    });
    const nonce = freshNonce();
    return new Promise((resolve, reject) => {
      let proved = false;
      const fail = (why: string): void => {
        clearTimeout(timer);
        reject(this.gone(why));
        ws.terminate();
      };
      const timer = setTimeout(() => fail(`no handshake within ${CONNECT_TIMEOUT_MS} ms`), CONNECT_TIMEOUT_MS);
      const handshake = (data: RawData, isBinary: boolean): void => {
        const text = isBinary ? '' : data.toString();
        if (!proved) {
          const challenge = parseChallenge(text);
          if (challenge === null || challenge.node_id !== this.nodeId || !sameProof(challenge.proof, ownerProof(secret, this.nodeId, this.selfId, nonce, challenge.nonce))) {
            return fail('it did not prove that it is that node');
          }
          proved = true;
          ws.send(proofFrame(peerProof(secret, this.selfId, this.nodeId, challenge.nonce, nonce)));
          return;
        }
        if (text !== PEER_WELCOME) return fail('it refused this node');
        clearTimeout(timer);
        ws.off('message', handshake);
        ws.on('message', (message, binary) => {
          if (!binary) this.handlers.message(message.toString());
        });
        ws.once('close', () => this.end('it closed'));
        resolve(ws);
      };
      ws.once('open', () => ws.send(helloFrame({ node_id: this.selfId, nonce })));
      ws.on('message', handshake);
      ws.on('error', (err) => fail(err.message));
      ws.once('close', () => fail('it closed during the handshake'));
    });
  }

  /** The link is over: its requests still waiting are answered (by the handlers), and its socket closed. */
  end(why: string): void {
    if (this.ended && this.pending.size === 0) return;
    this.ended = true;
    const pending = [...this.pending];
    this.pending.clear();
    void this.socket.then((ws) => ws.terminate(), () => {});
    this.handlers.closed(pending, why);
  }

  private gone(why: string): RpcError {
    return new RpcError(ErrorCodes.hostUnavailable, `node ${this.nodeId}, which owns the session, cannot be reached (${why})`, { reason: 'crash', node_id: this.nodeId });
  }
}
