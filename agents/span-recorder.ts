// Spans made on the turns' thread (PROTOCOL.md §5.8), as plain records: a span is a few fields set
// and a push, about a microsecond of a turn. The OpenTelemetry SDK's spans, their batching and the
// exporter's encoding (about 10 µs a span, measured: docs/BENCHMARKS.md) run in the tracing worker
// (bin/tracing-worker.ts), on another thread. Whether a trace is recorded is decided at its root by
// the SDK's sampler (OTEL_TRACES_SAMPLER, bin/tracing.ts); a span's children share the decision.
import { randomFillSync } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import type { SpanRecord } from '../protocol/span-record.js';

/** A span as a parent: the ids its children carry, and whether its trace is recorded. */
export interface SpanContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
  /** Another process's span (a client's traceparent). */
  remote: boolean;
  traceState?: string;
}

export interface SpanStart {
  /** OpenTelemetry's SpanKind: 0 internal (default), 2 client. */
  kind?: 0 | 2;
  /** Epoch ms; default now. */
  startMs?: number;
  attributes?: Attributes;
  /** The ids it is to have: a lost turn's span made again under the ids it began with. */
  ids?: { traceId: string; spanId: string };
}

/** Whether a new trace's root span (under a remote parent or none) is recorded. */
export type RootSampler = (traceId: string, parent: SpanContext | null, name: string) => boolean;

/** Now, in epoch ms with the monotonic clock's fraction: a model call's span lasts milliseconds. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

const ZEROS = '0'.repeat(32);

/** Random ids from a pool refilled 4 KiB at a time: one syscall for about 170 spans. */
class IdPool {
  private readonly pool = Buffer.alloc(4096);
  private at = this.pool.length;

  hex(bytes: number): string {
    if (this.at + bytes > this.pool.length) {
      randomFillSync(this.pool);
      this.at = 0;
    }
    const text = this.pool.toString('hex', this.at, this.at + bytes);
    this.at += bytes;
    // W3C forbids an all-zero id: 2^-64 at worst, ruled out all the same.
    return text === ZEROS.slice(0, bytes * 2) ? this.hex(bytes) : text;
  }
}

export interface RecorderOptions {
  /** Hands a batch to the worker. */
  send(spans: SpanRecord[]): void;
  sample: RootSampler;
  /** Records sent and not yet taken by the worker, at most: past it a span is dropped (a worker that fell behind). */
  maxPending: number;
  /** A batch goes once it has this many, or `delayMs` after its first. */
  batchSize: number;
  delayMs: number;
  /** Told of each span dropped. */
  dropped(): void;
}

export class SpanRecorder {
  private batch: SpanRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private pending = 0;
  private readonly ids = new IdPool();

  constructor(private readonly options: RecorderOptions) {}

  /**
   * A span under `parent` (null: a new trace); a local parent's children share its sampling. Written
   * without object spreads: this runs once or more a turn, on the turns' thread.
   */
  start(name: string, parent: SpanContext | null, start: SpanStart = {}): RecordedSpan {
    const traceId = start.ids?.traceId ?? parent?.traceId ?? this.ids.hex(16);
    const spanId = start.ids?.spanId ?? this.ids.hex(8);
    const sampled = parent !== null && !parent.remote ? parent.sampled : this.options.sample(traceId, parent, name);
    const context: SpanContext = { traceId, spanId, sampled, remote: false };
    if (parent?.traceState !== undefined) context.traceState = parent.traceState;
    if (!sampled) return new RecordedSpan(this, context, null);
    // The attributes given are the record's own from here: callers pass a fresh object.
    const record: SpanRecord = { name, kind: start.kind ?? 0, traceId, spanId, startMs: start.startMs ?? nowMs(), endMs: 0, attributes: start.attributes ?? {} };
    if (parent !== null) record.parent = parent.traceState === undefined ? { spanId: parent.spanId, remote: parent.remote } : { spanId: parent.spanId, remote: parent.remote, traceState: parent.traceState };
    return new RecordedSpan(this, context, record);
  }

  /** A span that ended: batched for the worker, or dropped when the worker is that far behind. */
  take(record: SpanRecord): void {
    if (this.pending + this.batch.length >= this.options.maxPending) {
      this.options.dropped();
      return;
    }
    this.batch.push(record);
    if (this.batch.length >= this.options.batchSize) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.delayMs).unref();
  }

  /** The worker took `count` records. */
  taken(count: number): void {
    this.pending = Math.max(0, this.pending - count);
  }

  /** Sends what is batched now. */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.batch.length === 0) return;
    const spans = this.batch;
    this.batch = [];
    this.pending += spans.length;
    this.options.send(spans);
  }
}

/** A span being recorded; with its trace not sampled, only its ids (for the traceparents it passes on). */
export class RecordedSpan {
  private open = true;

  constructor(
    private readonly recorder: SpanRecorder,
    /** This span as its children's parent. */
    readonly context: SpanContext,
    private readonly record: SpanRecord | null,
  ) {}

  /** As a W3C traceparent: for a model server's header, a guest's `_meta`. */
  get traceparent(): string {
    return `00-${this.context.traceId}-${this.context.spanId}-${this.context.sampled ? '01' : '00'}`;
  }

  get recorded(): boolean {
    return this.record !== null;
  }

  child(name: string, start?: SpanStart): RecordedSpan {
    return this.recorder.start(name, this.context, start);
  }

  setAttributes(attributes: Attributes): void {
    if (this.record === null) return;
    for (const key in attributes) this.record.attributes[key] = attributes[key];
  }

  rename(name: string): void {
    if (this.record !== null) this.record.name = name;
  }

  /** Ends it as failed: `error.type`, a short class of failure (never a message that may hold a secret). */
  fail(errorType: string, message?: string, endMs?: number): void {
    if (this.record !== null) {
      this.record.attributes['error.type'] = errorType;
      this.record.error = message === undefined ? {} : { message };
    }
    this.end(endMs);
  }

  end(endMs = nowMs()): void {
    if (!this.open) return;
    this.open = false;
    if (this.record === null) return;
    this.record.endMs = endMs;
    this.recorder.take(this.record);
  }
}
