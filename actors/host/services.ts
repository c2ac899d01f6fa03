// What the host's actors share: each is a single owner of its own output or file.
import type { Logger } from 'pino';
import type { AgentCatalogue } from '../../agents/catalogue.js';
import type { WebhookEvent } from '../../protocol/webhook-events.js';
import type { Store } from '../../persistence/store.js';
import type { FrameWriter } from '../../protocol/frame-writer.js';
import type { Clock } from '../clock.js';
import type { QueueAnnouncer } from './queue-events.js';
import type { HostTracing } from './turn-tracing.js';

export interface HostServices {
  store: Store;
  writer: FrameWriter;
  /** How changes of a queue leave the host: `session.queue` events, or deltas for the daemon. */
  queueEvents: QueueAnnouncer;
  /** The agents this host runs (AGENT.md §8): a session's is asked for by the name it stores. */
  agents: AgentCatalogue;
  clock: Clock;
  log: Logger;
  bootId: string;
  /** Default timeout of a server request when the agent's ask gives none. */
  requestTimeoutMs: number;
  /** The webhook events the host writes to the outbox with what they report (PROTOCOL.md §8.2); empty when no webhook is configured. */
  webhookEvents: ReadonlySet<WebhookEvent>;
  /** The spans of turns and questions (PROTOCOL.md §5.8); null when tracing is off. */
  tracing: HostTracing | null;
}
