// An OTLP/HTTP receiver on 127.0.0.1 for the tracing tests: it answers every export 200 and keeps
// what arrived. Spans sent as `http/json` are decoded (the OTLP JSON encoding: hex ids, attributes
// as typed values); a `http/protobuf` body is kept as it came, for what its bytes show.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback-server.js';
import { Waiters } from './waiters.js';

/** A client's own span, as a W3C traceparent to hand to turnhost. */
export function clientTrace(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error (OTLP's StatusCode). */
  status: { code: number; message?: string };
  startMs: number;
  endMs: number;
  resource: Record<string, unknown>;
}

export interface Export {
  contentType: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}

interface KeyValue {
  key: string;
  value: AnyValue;
}

interface JsonSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes?: KeyValue[];
  status?: { code?: number; message?: string };
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
}

interface JsonExport {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: JsonSpan[] }[] }[];
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly exports: Export[] = [];
  private readonly arrivals = new Waiters<ReceivedSpan[]>();
  private readonly bodies = new Waiters<Export>();

  private constructor(private readonly server: LoopbackServer) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = await LoopbackServer.start((req, body, res) => receiver!.handle(req, body, res));
    receiver = new OtlpReceiver(server);
    return receiver;
  }

  /** The base URL, as `--otlp-endpoint` or OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  get endpoint(): string {
    return this.server.origin;
  }

  /** The first span that matches, once it has arrived. */
  async span(match: (span: ReceivedSpan) => boolean, timeoutMs = 10_000): Promise<ReceivedSpan> {
    const found = this.spans.find(match);
    if (found !== undefined) return found;
    const batch = await this.arrivals.wait((spans) => spans.some(match), timeoutMs, () => `no matching span within ${timeoutMs} ms; received: ${this.spans.map((s) => s.name).join(', ') || 'none'}`);
    return batch.find(match)!;
  }

  /** The first export whose body is in the protobuf encoding. */
  async protobufExport(timeoutMs = 10_000): Promise<Export> {
    const match = (e: Export) => e.contentType === 'application/x-protobuf';
    return this.exports.find(match) ?? this.bodies.wait(match, timeoutMs, () => `no protobuf export within ${timeoutMs} ms`);
  }

  /** Every span of the trace, once one named `until` has arrived in it. */
  async trace(traceId: string, until: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan[]> {
    await this.span((s) => s.traceId === traceId && until(s));
    return this.spans.filter((s) => s.traceId === traceId);
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private handle(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const contentType = String(req.headers['content-type'] ?? '');
    const received: Export = { contentType, headers: req.headers, body };
    this.exports.push(received);
    this.bodies.offer(received, 'all');
    if (req.method === 'POST' && req.url === '/v1/traces' && contentType === 'application/json') {
      const batch = decode(JSON.parse(body.toString('utf8')) as JsonExport);
      this.spans.push(...batch);
      this.arrivals.offer(batch, 'all');
    }
    res.writeHead(200, { 'content-type': contentType || 'application/json' });
    res.end(contentType === 'application/json' ? '{}' : '');
  }
}

function decode(request: JsonExport): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        name: span.name,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        attributes: attributesOf(span.attributes),
        status: { code: span.status?.code ?? 0, ...(span.status?.message ? { message: span.status.message } : {}) },
        startMs: Number(BigInt(span.startTimeUnixNano) / 1_000_000n),
        endMs: Number(BigInt(span.endTimeUnixNano) / 1_000_000n),
        resource,
      })),
    );
  });
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

function valueOf(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}
