// The daemon's metrics (PROTOCOL.md §5.4), in the Prometheus text format through prom-client.
// Turns are counted from the turn events the gateway sees; gauges are read when scraped.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ClientTransport } from '../actors/daemon/client-connection.js';
import type { DaemonCounters } from '../actors/daemon/daemon-counters.js';
import type { HostStatus } from '../actors/daemon/supervisor-messages.js';
import type { Overrun } from '../actors/daemon/unread-bound.js';
import type { DeliveryOutcome } from '../actors/daemon/webhook-delivery.js';
import type { UrlBacklog } from '../persistence/outbox.js';
import type { Reader } from '../persistence/reader.js';

export type ClientKind = ClientTransport['kind'] | 'sse';

export interface MetricSources {
  status(): Promise<HostStatus>;
  reader(): Promise<Reader | null>;
  openRequests(): Promise<number>;
  /** Each webhook URL's pending and failed deliveries (URLs as shown); null when no webhook is configured. */
  webhookBacklogs(): Promise<UrlBacklog[] | null>;
}

/** Turn start times kept for the duration histogram; a turn whose end never comes is forgotten past this. */
const STARTS_KEPT = 10_000;
const TOKEN_KINDS = ['prompt', 'completion', 'cached', 'reasoning'] as const;
const DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800];

export class DaemonMetrics implements DaemonCounters {
  readonly registry = new Registry();
  private readonly turns: Counter<'outcome'>;
  private readonly durations: Histogram;
  private readonly tokens: Counter<'kind'>;
  private readonly modelTokens: Counter<'kind'>;
  private readonly clients: Gauge<'transport'>;
  private readonly droppedClients: Counter<'reason'>;
  private readonly deliveries: Counter<'outcome' | 'url'>;
  private readonly retention: Counter<'action'>;
  private readonly doorCalls: Counter<'door' | 'method'>;
  private readonly starts = new Map<string, number>();

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.turns = new Counter({ name: 'turnhost_turns_total', help: 'Turns ended, by outcome', labelNames: ['outcome'], registers });
    for (const outcome of ['completed', 'interrupted', 'failed', 'lost']) this.turns.inc({ outcome }, 0);
    this.durations = new Histogram({ name: 'turnhost_turn_duration_seconds', help: 'From turn.started to its end', buckets: DURATION_BUCKETS, registers });
    // §5.4's name (prompt and completion) stays for the dashboards that read it; §5.7's adds cached and reasoning.
    this.modelTokens = new Counter({ name: 'turnhost_model_tokens_total', help: 'Model tokens the turns reported', labelNames: ['kind'], registers });
    this.tokens = new Counter({ name: 'turnhost_tokens_total', help: 'Tokens the ended turns reported (PROTOCOL.md §5.7): prompt, completion, and of those cached and reasoning', labelNames: ['kind'], registers });
    for (const kind of TOKEN_KINDS) this.tokens.inc({ kind }, 0);
    this.clients = new Gauge({ name: 'turnhost_clients', help: 'Open client connections, by transport', labelNames: ['transport'], registers });
    for (const transport of ['unix', 'websocket', 'sse']) this.clients.set({ transport }, 0);
    this.droppedClients = new Counter({ name: 'turnhost_clients_dropped_total', help: 'Clients cut off for not reading their output', labelNames: ['reason'], registers });
    new Gauge({
      name: 'turnhost_host_up',
      help: '1 while the compute host runs',
      registers,
      async collect() {
        this.set((await sources.status()).host.state === 'running' ? 1 : 0);
      },
    });
    new Counter({
      name: 'turnhost_host_restarts_total',
      help: 'Restarts of the compute host since the daemon started',
      registers,
      async collect() {
        this.reset();
        this.inc((await sources.status()).host.restarts);
      },
    });
    new Gauge({
      name: 'turnhost_sessions',
      help: 'Sessions in the store, by status',
      labelNames: ['status'],
      registers,
      async collect() {
        const counts = await (await sources.reader())?.statusCounts();
        for (const status of ['active', 'retained', 'finalized'] as const) this.set({ status }, counts?.[status] ?? 0);
      },
    });
    new Gauge({
      name: 'turnhost_queued_prompts',
      help: 'Prompts waiting in the sessions\' queues',
      registers,
      async collect() {
        this.set(((await (await sources.reader())?.queues()) ?? []).reduce((sum, queue) => sum + queue.queued, 0));
      },
    });
    this.doorCalls = new Counter({ name: 'turnhost_door_calls_total', help: 'Calls of other agents at the MCP and A2A doors (PROTOCOL.md §7.3, §7.4), by door and method (a tool call by its tool)', labelNames: ['door', 'method'], registers });
    this.retention = new Counter({ name: 'turnhost_retention_sessions_total', help: 'Sessions the retention sweep deleted or archived (PROTOCOL.md §2.3)', labelNames: ['action'], registers });
    this.deliveries = new Counter({ name: 'turnhost_webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome and URL', labelNames: ['outcome', 'url'], registers });
    new Gauge({
      name: 'turnhost_webhook_pending',
      help: 'Webhook deliveries each URL owes (status="failed": given up after a day)',
      labelNames: ['url', 'status'],
      registers,
      async collect() {
        this.reset();
        for (const backlog of (await sources.webhookBacklogs().catch(() => null)) ?? []) {
          this.set({ url: backlog.url, status: 'pending' }, backlog.pending);
          this.set({ url: backlog.url, status: 'failed' }, backlog.failed);
        }
      },
    });
    new Gauge({
      name: 'turnhost_open_requests',
      help: 'Server requests (clarify, approval) waiting for an answer',
      registers,
      async collect() {
        this.set(await sources.openRequests());
      },
    });
  }

  /** A call at a door for other agents: `method` one of the door's own names, else `other`. */
  doorCall(door: 'mcp' | 'a2a', method: string): void {
    this.doorCalls.inc({ door, method });
  }

  retained(action: 'deleted' | 'archived', count: number): void {
    this.retention.inc({ action }, count);
  }

  delivery(outcome: DeliveryOutcome, url: string): void {
    this.deliveries.inc({ outcome, url });
  }

  /** A turn event of any session, as the gateway sends it to clients. */
  turnEvent(type: string, payload: Record<string, unknown>): void {
    const turnId = String(payload['turn_id']);
    if (type === 'turn.started') {
      this.starts.set(turnId, performance.now());
      if (this.starts.size > STARTS_KEPT) this.starts.delete(this.starts.keys().next().value!);
      return;
    }
    if (type !== 'turn.end' && type !== 'turn.error') return;
    const outcome = type === 'turn.end' ? (payload['interrupted'] === true ? 'interrupted' : 'completed') : payload['reason'] === 'crash' ? 'lost' : 'failed';
    this.turns.inc({ outcome });
    const started = this.starts.get(turnId);
    if (started !== undefined) {
      this.starts.delete(turnId);
      this.durations.observe((performance.now() - started) / 1000);
    }
    const usage = payload['usage'] as Record<string, unknown> | undefined;
    for (const kind of TOKEN_KINDS) {
      const count = usage?.[`${kind}_tokens`];
      if (typeof count !== 'number' || count <= 0) continue;
      this.tokens.inc({ kind }, count);
      if (kind === 'prompt' || kind === 'completion') this.modelTokens.inc({ kind }, count);
    }
  }

  opened(kind: ClientKind): void {
    this.clients.inc({ transport: kind });
  }

  closed(kind: ClientKind): void {
    this.clients.dec({ transport: kind });
  }

  dropped(why: Overrun['why']): void {
    this.droppedClients.inc({ reason: why === 'is not reading its output' ? 'not_reading' : 'too_slow' });
  }
}
