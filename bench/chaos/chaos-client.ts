// A client of the chaos run, in the manner of Jepsen's: it submits prompts to shared sessions, one
// at a time, each with a `client_message_id` of its own, and records a submit as acknowledged only
// when a node answered it (`streaming`, `queued` or `duplicate`). Whatever was not acknowledged
// it submits again with the same id, on the same node or, when that node is gone or does not
// answer, on the next one. The checker holds the nodes to what was acknowledged.
import { RpcClient } from '../../client/rpc-connection.js';
import { RpcError } from '../../protocol/client-rpc.js';
import type { ChaosNode } from './chaos-node.js';

/** A call that gets no answer in this long (a paused node, a link to one) is tried elsewhere. */
const CALL_TIMEOUT_MS = 5_000;
/** Between a client's acknowledged prompt and its next. */
const THINK_MS = { min: 100, spread: 400 };
/** Between two tries of one submit: a refusal (`storage`, an owner not yet expired) passes in time. */
const RETRY_MS = 250;

export interface Submit {
  client: string;
  /** The client's n-th prompt: its prompts to one session must be in this order in the history. */
  n: number;
  sid: string;
  text: string;
  clientMessageId: string;
}

export interface Acknowledged extends Submit {
  status: string;
  node: string;
  tries: number;
}

export interface ClientRecord {
  acknowledged: Acknowledged[];
  /** Submitted and never acknowledged (the run ended first): each may be in the history once, or not at all. */
  unacknowledged: Submit[];
  /** Refusals and failures seen, by their message's first words. */
  failures: Map<string, number>;
}

export class ChaosClient {
  readonly record: ClientRecord = { acknowledged: [], unacknowledged: [], failures: new Map() };
  private rpc: RpcClient | null = null;
  private at: number;

  constructor(
    readonly id: string,
    private readonly nodes: readonly ChaosNode[],
    private readonly sessions: readonly string[],
    private readonly random: () => number,
    /** Seconds each prompt's turn sleeps, so that turns are under way when faults fall. */
    private readonly turnSecs: number,
  ) {
    this.at = Math.floor(random() * nodes.length);
  }

  /** Submits until `stopping()` says so; the submit under way then is finished (or given up at `giveUpAt()`). */
  async run(stopping: () => boolean, giveUpAt: () => number): Promise<void> {
    for (let n = 1; !stopping(); n++) {
      const sid = this.sessions[Math.floor(this.random() * this.sessions.length)]!;
      const submit: Submit = { client: this.id, n, sid, text: `${this.id}:${n}\n/sleep ${this.turnSecs}`, clientMessageId: `${this.id}-${n}` };
      const acknowledged = await this.untilAcknowledged(submit, giveUpAt);
      if (acknowledged === null) this.record.unacknowledged.push(submit);
      else this.record.acknowledged.push(acknowledged);
      // A person's pace, roughly what the sessions' turns take: queues form behind running turns, and drain.
      await new Promise((resolve) => setTimeout(resolve, THINK_MS.min + this.random() * THINK_MS.spread));
    }
    this.rpc?.close();
  }

  private async untilAcknowledged(submit: Submit, giveUpAt: () => number): Promise<Acknowledged | null> {
    for (let tries = 1; Date.now() < giveUpAt(); tries++) {
      const node = this.nodes[this.at]!;
      try {
        const rpc = await this.connection(node);
        const answer = await rpc.call<{ status: string; state?: string }>(
          'prompt.submit',
          { session_id: submit.sid, text: submit.text, on_busy: 'queue', client_message_id: submit.clientMessageId },
          CALL_TIMEOUT_MS,
        );
        return { ...submit, status: answer.state === undefined ? answer.status : `${answer.status} ${answer.state}`, node: node.id, tries };
      } catch (err) {
        this.failed(err as Error);
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    return null;
  }

  private async connection(node: ChaosNode): Promise<RpcClient> {
    if (this.rpc !== null) return this.rpc;
    const rpc = await RpcClient.connect(node.socket);
    void rpc.closed.then(() => {
      if (this.rpc === rpc) this.rpc = null;
    });
    this.rpc = rpc;
    return rpc;
  }

  /** A node that is gone or does not answer is left for the next; a refusal is tried again where it came from. */
  private failed(err: Error): void {
    const kind = err.message.split(/[:(]/)[0]!.slice(0, 60);
    this.record.failures.set(kind, (this.record.failures.get(kind) ?? 0) + 1);
    if (err instanceof RpcError && this.random() < 0.7) return;
    this.rpc?.close();
    this.rpc = null;
    this.at = (this.at + 1) % this.nodes.length;
  }
}
