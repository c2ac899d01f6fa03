// Delivers the webhook outbox (PROTOCOL.md §8.2): each event is POSTed to every `--webhook` URL,
// signed as Standard Webhooks says, with the same `webhook-id` on every attempt. Each URL is its
// own stream: the events the host wrote are made one delivery per URL (persistence/outbox.ts), and
// each URL's deliveries go by their own loop, so a receiver that is down or slow holds up no other.
// A delivery that did not get a 2xx is tried again (1 s, doubling, at most 5 min apart) for a day,
// then marked failed. One session's events reach a URL in order: its next is not sent there before
// its last went there or was given up on; different sessions' events go side by side.
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { FAN_OUT_BATCH, webhookBody, webhookId, type DeliveryOutcomes, type DeliveryRow, type Outbox } from '../../persistence/outbox.js';
import type { SideStore } from '../../persistence/side-store.js';
import { shownUrl } from '../../protocol/shown-url.js';
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
/** Sessions whose next event is sent to one URL at once. */
const SESSIONS_AT_ONCE = 64;

export type DeliveryOutcome = 'delivered' | 'retried' | 'failed';

export interface WebhookDeliveryOptions {
  side(): Promise<SideStore | null>;
  urls: readonly string[];
  /** The signing secret now (`whsec_…`): read at each attempt, so a rotation applies at once. */
  secret(): string;
  counted(outcome: DeliveryOutcome, url: string): void;
  log: Logger;
}

/** How long after `attempts` failed attempts the next is made: 1 s, doubling, at most 5 min. */
export function retryDelayMs(attempts: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 20));
}

/** A webhook URL as logs, `.webhooks` and the metrics show it; '' is the stream of the failed rows kept from before each URL had its own. */
export function shownWebhookUrl(url: string): string {
  return url === '' ? '(every URL, before each had its own stream)' : shownUrl(url);
}

export class WebhookDelivery {
  /** Makes what the host wrote one delivery per URL; each stream then sends its own. */
  private readonly fanOutLoop = new WakeLoop(() => this.fanOut());
  private readonly streams: UrlStream[];
  private readonly poster = new WebhookPoster(ATTEMPT_TIMEOUT_MS);

  constructor(private readonly options: WebhookDeliveryOptions) {
    this.streams = options.urls.map((url) => new UrlStream(url, options, this.poster));
  }

  start(): void {
    this.fanOutLoop.wake();
    for (const stream of this.streams) stream.wake();
  }

  /** A turn just ended, and its event is in the outbox: it becomes each URL's now, not at the next look. */
  wake(): void {
    this.fanOutLoop.wake();
  }

  /** Stops: attempts under way are aborted and stay pending, tried again at the next start. */
  async close(): Promise<void> {
    for (const stream of this.streams) stream.closing();
    this.poster.close();
    await Promise.all([this.fanOutLoop.close(), ...this.streams.map((stream) => stream.close())]);
  }

  private async fanOut(): Promise<number> {
    try {
      const side = await this.options.side();
      if (side === null) return LOOK_EVERY_MS;
      const moved = await side.outbox.fanOut(this.options.urls);
      if (moved > 0) for (const stream of this.streams) stream.nudge();
      return moved === FAN_OUT_BATCH ? 0 : LOOK_EVERY_MS;
    } catch (err) {
      this.options.log.warn({ why: (err as Error).message }, 'webhooks: could not read the outbox; looking again in a second');
      return LOOK_EVERY_MS;
    }
  }
}

/** One URL's deliveries: its own loop, its own retries, its own order per session. */
class UrlStream {
  private readonly loop = new WakeLoop(() => this.look());
  private readonly shown: string;
  private closed = false;
  /** The last look found nothing waiting, or delivered something. */
  private flowing = true;

  constructor(
    private readonly url: string,
    private readonly options: WebhookDeliveryOptions,
    private readonly poster: WebhookPoster,
  ) {
    this.shown = shownWebhookUrl(url);
  }

  wake(): void {
    this.loop.wake();
  }

  /**
   * New events are this URL's: looks now, while its events go out. While they wait for a receiver
   * that is down, the next look is the timer's, at most a second away: each turn of a busy daemon
   * would otherwise make a look at a backlog that only grows.
   */
  nudge(): void {
    if (this.flowing) this.loop.wake();
  }

  closing(): void {
    this.closed = true;
  }

  close(): Promise<void> {
    return this.loop.close();
  }

  /** Sends each session's next event to this URL; sleeps until the next is due, at most a second. */
  private async look(): Promise<number> {
    try {
      const side = await this.options.side();
      if (side === null) return LOOK_EVERY_MS;
      const ready = await side.outbox.ready(this.url, Date.now(), SESSIONS_AT_ONCE);
      const errors = await Promise.all(ready.map((row) => this.attempt(side.outbox, row)));
      const outcomes = this.outcomes(ready, errors);
      // One write for the whole look: a write (and its sync) per event held up the host's commits.
      if (outcomes.delivered.length + outcomes.retried.length + outcomes.failed.length > 0) await side.outbox.settle(outcomes);
      this.count(outcomes);
      this.flowing = outcomes.delivered.length > 0;
      // A session's next event may be ready now that the one before it went.
      if (this.flowing) return 0;
      const next = await side.outbox.nextDue(this.url);
      this.flowing = next === null;
      return next === null ? LOOK_EVERY_MS : Math.max(0, Math.min(LOOK_EVERY_MS, next - Date.now()));
    } catch (err) {
      this.options.log.warn({ url: this.shown, why: (err as Error).message }, 'webhooks: could not read the deliveries; looking again in a second');
      return LOOK_EVERY_MS;
    }
  }

  /** One attempt: null when the receiver answered 2xx; else what went wrong, without the secret or the signature. */
  private async attempt(outbox: Outbox, row: DeliveryRow): Promise<string | null> {
    const id = webhookId(row);
    const body = webhookBody(row, await outbox.facts(row));
    const now = new Date();
    return this.poster.post(
      this.url,
      {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(this.options.secret()).sign(id, now, body),
      },
      body,
    );
  }

  /** What each attempt means for its delivery: gone, tried again later, or given up after a day. An attempt the stop aborted is none. */
  private outcomes(rows: readonly DeliveryRow[], errors: readonly (string | null)[]): DeliveryOutcomes {
    const outcomes: DeliveryOutcomes = { delivered: [], retried: [], failed: [] };
    const now = Date.now();
    rows.forEach((row, i) => {
      const error = errors[i] ?? null;
      if (error === null) {
        outcomes.delivered.push(row.id);
        return;
      }
      if (this.closed) return;
      const attempts = row.attempts + 1;
      const fields = { id: webhookId(row), url: this.shown, sid: row.sid, type: row.type, attempts, why: error };
      if (now - row.created_at >= GIVE_UP_AFTER_MS) {
        outcomes.failed.push({ id: row.id, attempts, error });
        this.options.log.error(fields, 'webhook: an event was not taken in a day of tries: given up (failed)');
      } else {
        outcomes.retried.push({ id: row.id, attempts, nextAt: now + retryDelayMs(attempts), error });
        this.options.log.warn(fields, 'webhook: an attempt failed; it is tried again');
      }
    });
    return outcomes;
  }

  private count(outcomes: DeliveryOutcomes): void {
    for (const _ of outcomes.delivered) this.options.counted('delivered', this.shown);
    for (const _ of outcomes.retried) this.options.counted('retried', this.shown);
    for (const _ of outcomes.failed) this.options.counted('failed', this.shown);
  }
}
