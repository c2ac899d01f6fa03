// The events a webhook is sent (PROTOCOL.md §8.2), by their names on the wire, and `--webhook-events`
// read against them.

export const WEBHOOK_EVENTS = ['turn.end', 'turn.error', 'request.open', 'schedule.fired', 'session.deleted'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** `--webhook-events a,b`: the events named, each checked; an unknown one is an error naming it. */
export function parseWebhookEvents(text: string): WebhookEvent[] {
  const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
  for (const name of names) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(name)) throw new Error(`--webhook-events: unknown event ${JSON.stringify(name)} (events: ${WEBHOOK_EVENTS.join(', ')})`);
  }
  return names as WebhookEvent[];
}
