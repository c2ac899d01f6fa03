// What the daemon hands its HTTP edge (PROTOCOL.md §5): where it listens, who may call it, and
// the daemon's shared context, caps and metrics. Below the edge's server and its routes alike.
import type { Logger } from 'pino';
import type { ClientLines } from '../actors/daemon/client-connection.js';
import type { SharedContext } from '../actors/daemon/client-context.js';
import type { UnreadLimits } from '../actors/daemon/unread-bound.js';
import type { AnyRef } from '../actors/runtime.js';
import type { JwtOptions } from './jwt-verifier.js';
import type { ListenAddress } from './listen-address.js';
import type { DaemonMetrics } from './metrics.js';
import type { Places } from './places.js';

export interface EdgeOptions {
  listen: ListenAddress;
  home: string;
  /** $TURNHOST_TOKEN; the token file of the home when unset. */
  envToken: string | undefined;
  allowHosts: readonly string[];
  corsOrigins: readonly string[];
  metricsPublic: boolean;
  /** The address people use (behind a proxy); an https one makes the login cookie Secure. */
  publicUrl?: string | undefined;
  /** How long a page login lasts (default 7 days). */
  loginDays?: number | undefined;
  /** An identity provider's JWTs are taken (PROTOCOL.md §5.6). */
  jwt?: JwtOptions | undefined;
  shared: SharedContext;
  /** The parent of the WebSocket clients' actors. */
  clients: AnyRef;
  limits: UnreadLimits;
  /** The daemon's one cap on clients, whatever their door: false when it is reached. */
  admit(): boolean;
  /** The connections waiting to authenticate (at most MAX_WAITING_FOR_AUTH), which the cap counts too. */
  preAuth: Places;
  /** Keeps a client's output to end when the daemon stops; returns its release. */
  track(lines: ClientLines): () => void;
  maxClients: number;
  metrics: DaemonMetrics;
  log: Logger;
}
