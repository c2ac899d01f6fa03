// Delivers the webhook outbox (PROTOCOL.md §8.2): each event is POSTed to every `--webhook` URL,
// signed as Standard Webhooks says, with the same `webhook-id` on every attempt. An event goes once
// all URLs answered 2xx; otherwise it is tried again (1 s, doubling, at most 5 min apart) for a
// day, then marked failed. One session's events go in order: its next is not sent before its
// last is done (persistence/outbox.ts), while different sessions' events go side by side.
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { DeliveryOutcome } from '../../edge/metrics.js';
import { webhookBody, webhookId, type OutboxRow } from '../../persistence/outbox.js';
import type { SideStore } from '../../persistence/side-store.js';
import { WakeLoop } from './wake-loop.js';
import { WebhookPoster } from './webhook-post.js';

/** The longest sleep: an event written by the host is seen within it even when no turn event wakes us. */
const LOOK_EVERY_MS = 1000;
/** A receiver that has not answered in this long failed this attempt (PROTOCOL.md §8.2). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 5 * 60_000;
/** Retried for a day from the event, then given up and kept as failed, for `.webhooks` to show. */
const GIVE_UP_AFTER_MS = 24 * 60 * 60_000;
/** Sessions whose next event is sent at once. */
const SESSIONS_AT_ONCE = 64;

export interface WebhookDeliveryOptions {
  side(): Promise<SideStore | null>;
  urls: readonly string[];
  /** The signing secret now (`whsec_…`): read at each attempt, so a rotation applies at once. */
  secret(): string;
  counted(outcome: DeliveryOutcome): void;
  log: Logger;
}

/** How long after `attempts` failed attempts the next is made: 1 s, doubling, at most 5 min. */
export function retryDelayMs(attempts: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 20));
}

export class WebhookDelivery {
  private readonly loop = new WakeLoop(() => this.look());
  private readonly poster = new WebhookPoster(ATTEMPT_TIMEOUT_MS);
  private closed = false;
  /** The last look found nothing waiting, or delivered something. */
  private flowing = true;

  constructor(private readonly options: WebhookDeliveryOptions) {}

  start(): void {
    this.loop.wake();
  }

  /**
   * A turn just ended, and its event is in the outbox: looks now, while events go out. While
   * they wait for a receiver that is down, the next look is the timer's, at most a second away:
   * each turn of a busy daemon would otherwise make a look at an outbox that only grows.
   */
  wake(): void {
    if (this.flowing) this.loop.wake();
  }

  /** Stops: an attempt under way is aborted and stays pending, tried again at the next start. */
  async close(): Promise<void> {
    this.closed = true;
    this.poster.close();
    await this.loop.close();
  }

  /** Sends each session's next event; sleeps until the next is due, at most a second. */
  private async look(): Promise<number> {
    try {
      const side = await this.options.side();
      if (side === null) return LOOK_EVERY_MS;
      const ready = await side.outbox.ready(Date.now(), SESSIONS_AT_ONCE);
      const done = await Promise.all(ready.map((row) => this.deliver(side.outbox, row)));
      const delivered = ready.filter((_, i) => done[i] === 'delivered').map((row) => row.seq);
      // One write for all that went: a write (and its sync) per event held up the host's commits.
      if (delivered.length > 0) await side.outbox.delivered(delivered);
      for (let i = 0; i < delivered.length; i++) this.options.counted('delivered');
      this.flowing = delivered.length > 0;
      // A session's next event may be ready now that the one before it went.
      if (this.flowing) return 0;
      const next = await side.outbox.nextDue();
      this.flowing = next === null;
      return next === null ? LOOK_EVERY_MS : Math.max(0, Math.min(LOOK_EVERY_MS, next - Date.now()));
    } catch (err) {
      this.options.log.warn({ why: (err as Error).message }, 'webhooks: could not read the outbox; looking again in a second');
      return LOOK_EVERY_MS;
    }
  }

  /** One attempt of an event to the URLs that have not taken it yet; a failed one is stored here, a delivered one by the caller. */
  private async deliver(outbox: SideStore['outbox'], row: OutboxRow): Promise<'delivered' | 'failed' | 'later'> {
    const deliveredTo = new Set<string>(JSON.parse(row.delivered_to) as string[]);
    const targets = this.options.urls.filter((url) => !deliveredTo.has(url));
    const errors: string[] = [];
    const id = webhookId(row);
    const body = webhookBody(row, await outbox.facts(row));
    await Promise.all(
      targets.map(async (url) => {
        const error = await this.post(url, id, body);
        if (error === null) deliveredTo.add(url);
        else errors.push(`${url}: ${error}`);
      }),
    );
    if (errors.length === 0) return 'delivered';
    if (this.closed) return 'later'; // aborted by the stop: not an attempt
    const attempts = row.attempts + 1;
    const error = errors.join('; ');
    if (Date.now() - row.created_at >= GIVE_UP_AFTER_MS) {
      await outbox.failed(row.seq, attempts, error);
      this.options.counted('failed');
      this.options.log.error({ id, sid: row.sid, type: row.type, attempts, why: error }, 'webhook: an event was not taken in a day of tries: given up (failed)');
      return 'failed';
    }
    await outbox.retry(row.seq, attempts, Date.now() + retryDelayMs(attempts), JSON.stringify([...deliveredTo]), error);
    this.options.counted('retried');
    this.options.log.warn({ id, sid: row.sid, type: row.type, attempts, why: error }, 'webhook: an attempt failed; it is tried again');
    return 'later';
  }

  /** One attempt to one URL: null when it answered 2xx; else what went wrong, without the secret or the signature. */
  private post(url: string, id: string, body: string): Promise<string | null> {
    const now = new Date();
    return this.poster.post(
      url,
      {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(this.options.secret()).sign(id, now, body),
      },
      body,
    );
  }
}
