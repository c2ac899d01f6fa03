// What the daemon counts for /metrics (edge/metrics.ts, PROTOCOL.md §5.4): its clients, the turns
// the gateway sees end, webhook deliveries and retention's sweeps. Only the HTTP edge serves
// /metrics, so a daemon without one counts nothing: it loads neither the edge nor prom-client,
// whose event-loop monitor wakes an idle daemon every 10 ms.
import type { ClientWatcher } from './client-connection.js';
import type { DeliveryOutcome } from './webhook-delivery.js';

export interface DaemonCounters extends ClientWatcher {
  retained(action: 'deleted' | 'archived', count: number): void;
  delivery(outcome: DeliveryOutcome, url: string): void;
  /** A turn event of any session, as the gateway sends it to clients. */
  turnEvent(type: string, payload: Record<string, unknown>): void;
}

/** A daemon without an edge: nobody could read what it counted. */
export const NO_COUNTERS: DaemonCounters = {
  opened() {},
  closed() {},
  dropped() {},
  retained() {},
  delivery() {},
  turnEvent() {},
};
