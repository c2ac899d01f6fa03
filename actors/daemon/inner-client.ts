// The daemon calling a client method itself (the retention sweep, PROTOCOL.md §2.3), as one
// identity, the way a connected client's call goes: run here, or, as a node of several, sent on to
// the node that owns the session (peer-links.ts), whose answer comes back over the link.
import type { Logger } from 'pino';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { isRecord, type UnknownRecord } from '../../protocol/fields.js';
import { invokeMethod } from './client-methods.js';
import { ANSWERED_ELSEWHERE } from './methods/method-table.js';
import { clientContext, type SharedContext } from './client-context.js';
import type { Identity } from './identity.js';
import { FORWARDED, PeerLinks } from './peer-links.js';
import { SECOND_MS } from '../runtime.js';

/** A call another node carries out is answered within this, or refused as that node's failure. */
const FORWARDED_TIMEOUT_MS = 60 * SECOND_MS;
/** No client id a connection takes (those count up from 1). */
const INNER_CLIENT_ID = -2;

interface Waiting {
  resolve(value: unknown): void;
  reject(err: RpcError): void;
  timer: NodeJS.Timeout;
}

export class InnerClient {
  private readonly peers: PeerLinks | null;
  private readonly waiting = new Map<string, Waiting>();
  private next = 0;

  constructor(
    private readonly shared: SharedContext,
    private readonly identity: Identity,
    log: Logger,
  ) {
    // Events of the sessions it acts on come over a link too: nobody follows them here.
    this.peers = shared.cluster === null ? null : new PeerLinks(shared.cluster, (line) => this.fromOwner(line), () => {}, log, identity);
  }

  async call(method: string, params: UnknownRecord): Promise<unknown> {
    const id = `inner-${++this.next}`;
    const ctx = { ...clientContext({ ...this.shared, identity: this.identity }, INNER_CLIENT_ID), attached: new Set<string>() };
    const here = () => invokeMethod(method, params, ctx, id);
    if (this.peers === null) return here();
    const answered = this.answerOf(id);
    const result = await this.peers.request({ kind: 'request', id, method, params }, JSON.stringify({ jsonrpc: '2.0', id, method, params }), here).catch((err: unknown) => {
      this.forget(id);
      throw err;
    });
    if (result === FORWARDED || result === ANSWERED_ELSEWHERE) return answered;
    this.forget(id);
    return result;
  }

  close(): void {
    this.peers?.close();
    for (const id of [...this.waiting.keys()]) this.settle(id, { error: { code: ErrorCodes.shuttingDown, message: 'the daemon is stopping' } });
  }

  private answerOf(id: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, { error: { code: ErrorCodes.hostUnavailable, message: `the node that owns the session did not answer within ${FORWARDED_TIMEOUT_MS / SECOND_MS} s` } }), FORWARDED_TIMEOUT_MS);
      this.waiting.set(id, { resolve, reject, timer });
    });
  }

  private forget(id: string): void {
    const waiting = this.waiting.get(id);
    if (waiting === undefined) return;
    clearTimeout(waiting.timer);
    this.waiting.delete(id);
  }

  /** A line the owner node sent back: the answer of a call waiting here; events and anything else are not this caller's. */
  private fromOwner(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (isRecord(message) && typeof message['id'] === 'string' && !('method' in message)) this.settle(message['id'], message);
  }

  private settle(id: string, answer: UnknownRecord): void {
    const waiting = this.waiting.get(id);
    if (waiting === undefined) return;
    this.forget(id);
    const error = answer['error'];
    if (isRecord(error)) waiting.reject(new RpcError(Number(error['code']), String(error['message']), error['data']));
    else waiting.resolve(answer['result']);
  }
}
