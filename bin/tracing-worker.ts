// The tracing worker (PROTOCOL.md §5.8): a thread of the host process where the OpenTelemetry SDK
// turns the span records the turns' thread made (agents/span-recorder.ts) into its spans, under the
// same ids and times, and its batch processor and OTLP exporter send them. Everything that costs
// (the SDK's span objects, the encoding, the HTTP requests) happens here, never on a turn's path.
import { SpanStatusCode, diag, DiagLogLevel, ROOT_CONTEXT, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { setGlobalErrorHandler, TraceState } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BatchSpanProcessor, TracerProvider, type IdGenerator, type SpanExporter } from '@opentelemetry/sdk-trace';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromTracingWorker, SpanRecord, ToTracingWorker } from '../protocol/span-record.js';

export interface TracingWorkerData {
  /** The full URL of the traces endpoint; absent: the exporter reads the OTEL_ variables. */
  url?: string;
  protocol: 'http/protobuf' | 'http/json';
  serviceName: string;
  serviceVersion: string;
  nodeId?: string;
  batch: { maxQueueSize?: number; maxExportBatchSize?: number; scheduledDelayMillis?: number; exportTimeoutMillis?: number };
}

/** The ids of the record being made: the host's thread chose them (and stored a turn's with its start). */
class RecordIds implements IdGenerator {
  next = { traceId: '', spanId: '' };

  generateTraceId(): string {
    return this.next.traceId;
  }

  generateSpanId(): string {
    return this.next.spanId;
  }
}

const port = parentPort!;
const data = workerData as TracingWorkerData;
const post = (message: FromTracingWorker): void => port.postMessage(message);
const warn = (message: string): void => post({ type: 'warn', message });

const exportFailed = (err: unknown): void => warn(`could not export spans: ${err instanceof Error ? err.message : String(err)}`);

setGlobalErrorHandler(exportFailed);
diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);

const exporter = await makeExporter();
const ids = new RecordIds();
const provider = new TracerProvider({
  resource: resourceFromAttributes({
    'service.name': data.serviceName,
    'service.version': data.serviceVersion,
    ...(data.nodeId === undefined ? {} : { 'turnhost.node_id': data.nodeId }),
  }).merge(detectResources({ detectors: [envDetector] })),
  idGenerator: ids,
  // The host's thread sampled: what it sends is recorded.
  sampler: new AlwaysOnSampler(),
  spanProcessors: [new BatchSpanProcessor({ exporter, ...data.batch })],
});
const tracer = provider.getTracer('turnhost', data.serviceVersion);

port.on('message', (message: ToTracingWorker) => {
  if (message.type === 'spans') {
    for (const record of message.spans) make(record);
    post({ type: 'taken', count: message.spans.length });
    return;
  }
  // A failed last export is warned of like any other, and the host is told it may stop either way.
  void provider
    .forceFlush()
    .catch(exportFailed)
    .finally(() => post({ type: 'flushed' }));
});

function make(record: SpanRecord): void {
  ids.next = { traceId: record.traceId, spanId: record.spanId };
  const span = tracer.startSpan(record.name, { kind: record.kind, startTime: record.startMs, attributes: record.attributes }, parentOf(record));
  if (record.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, ...(record.error.message === undefined ? {} : { message: record.error.message }) });
  span.end(record.endMs);
}

function parentOf(record: SpanRecord): Context {
  if (record.parent === undefined) return ROOT_CONTEXT;
  const { spanId, remote, traceState } = record.parent;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: record.traceId,
    spanId,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: remote,
    ...(traceState === undefined ? {} : { traceState: new TraceState(traceState) }),
  });
}

async function makeExporter(): Promise<SpanExporter> {
  const config = data.url === undefined ? {} : { url: data.url };
  if (data.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(config);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(config);
}
