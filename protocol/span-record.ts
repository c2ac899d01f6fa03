// What the host's thread hands the tracing worker (bin/tracing-worker.ts): a finished span as plain
// data, which the worker turns into the OpenTelemetry SDK's span under the same ids and times and
// exports. Structured-cloned between the threads, so only plain values.
import type { Attributes } from '@opentelemetry/api';

export interface SpanRecord {
  name: string;
  /** OpenTelemetry's SpanKind: 0 internal, 2 client. */
  kind: 0 | 2;
  traceId: string;
  spanId: string;
  /** Absent for a root span. */
  parent?: { spanId: string; remote: boolean; traceState?: string };
  startMs: number;
  endMs: number;
  attributes: Attributes;
  /** Set only for an error: a span without it ends unset, as the conventions ask of a success. */
  error?: { message?: string };
}

/** Host thread → worker. */
export type ToTracingWorker = { type: 'spans'; spans: SpanRecord[] } | { type: 'flush' };

/** Worker → host thread. */
export type FromTracingWorker =
  /** `count` records of one batch have gone into the SDK's batch processor. */
  | { type: 'taken'; count: number }
  | { type: 'flushed' }
  /** The SDK or its exporter complained: the host logs it, rate-limited. */
  | { type: 'warn'; message: string };
