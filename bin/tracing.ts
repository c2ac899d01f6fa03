// Tracing for the host process (PROTOCOL.md §5.8), set up once at its start from `--otlp-endpoint`
// and the standard OTEL_ variables. The turns' thread makes spans as plain records (about a
// microsecond each, agents/span-recorder.ts) and hands them in batches to a worker thread
// (bin/tracing-worker.ts), where the OpenTelemetry SDK makes its spans and its OTLP exporter sends
// them. A collector that is down costs dropped spans (the queues are bounded) and a warning at most
// once a minute. Off (no endpoint, OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none), none of it is loaded.
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { HostTracing } from '../actors/host/turn-tracing.js';
import { SpanRecorder, type RootSampler, type SpanContext } from '../agents/span-recorder.js';
import { packageVersion } from '../protocol/package-version.js';
import { shownUrl } from '../protocol/shown-url.js';
import type { FromTracingWorker, ToTracingWorker } from '../protocol/span-record.js';
import type { TracingWorkerData } from './tracing-worker.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface TracingOptions {
  /** `--otlp-endpoint`: the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` is added). */
  endpoint?: string;
  env: Env;
  agentName: string;
  nodeId?: string;
  log: Logger;
}

export interface Tracing {
  host: HostTracing;
  /** Sends what is batched, waiting at most `timeoutMs`, and stops. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** One warning about the exporter a minute at most; the others are counted into the next. */
const WARN_EVERY_MS = 60_000;
const PROTOCOLS = ['http/protobuf', 'http/json'] as const;
/** The SDK's default bound on spans waiting for export (OTEL_BSP_MAX_QUEUE_SIZE): also what may wait between the threads. */
const DEFAULT_QUEUE = 2048;
/** Spans go to the worker 256 at a time, or 100 ms after the first of a batch: one message per batch, not per span. */
const HANDOFF_BATCH = 256;
const HANDOFF_DELAY_MS = 100;

export async function startTracing(options: TracingOptions): Promise<Tracing | null> {
  const { env, log } = options;
  const endpoint = options.endpoint ?? (nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) || nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT']));
  if (!endpoint || env['OTEL_SDK_DISABLED'] === 'true' || env['OTEL_TRACES_EXPORTER'] === 'none') return null;
  const protocol = nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) || nonEmpty(env['OTEL_EXPORTER_OTLP_PROTOCOL']) || 'http/protobuf';
  if (!isProtocol(protocol)) {
    log.warn({ protocol }, `tracing is off: OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${PROTOCOLS.join(', ')} (grpc is not supported)`);
    return null;
  }
  const warn = rateLimitedWarning(log);
  const [{ HostTracing }, sample] = await Promise.all([import('../actors/host/turn-tracing.js'), rootSampler(env, log)]);
  const batch = batchOptions(env);
  const data: TracingWorkerData = {
    ...(options.endpoint === undefined ? {} : { url: tracesUrl(options.endpoint) }),
    protocol,
    serviceName: nonEmpty(env['OTEL_SERVICE_NAME']) || 'turnhost',
    serviceVersion: packageVersion(),
    ...(options.nodeId === undefined ? {} : { nodeId: options.nodeId }),
    batch,
  };
  const worker = new Worker(workerFile(), { workerData: data });
  // The worker ends with the host: it holds nothing a stop must wait for but what `shutdown` flushes.
  worker.unref();
  let flushed: () => void = () => {};
  const spans = new SpanRecorder({
    send: (records) => worker.postMessage({ type: 'spans', spans: records } satisfies ToTracingWorker),
    sample,
    maxPending: batch.maxQueueSize ?? DEFAULT_QUEUE,
    batchSize: HANDOFF_BATCH,
    delayMs: HANDOFF_DELAY_MS,
    dropped: () => warn('a span was dropped: the exporter is behind (OTEL_BSP_MAX_QUEUE_SIZE bounds what waits)'),
  });
  worker.on('message', (message: FromTracingWorker) => {
    if (message.type === 'taken') spans.taken(message.count);
    else if (message.type === 'warn') warn(message.message);
    else flushed();
  });
  worker.on('error', (err) => log.warn({ err: err.message }, 'tracing: the tracing worker failed; spans are no longer sent'));
  log.info({ endpoint: shownUrl(endpoint), protocol }, 'tracing: spans go to an OTLP collector');
  return {
    host: new HostTracing(spans, options.agentName, env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT'] === 'true'),
    async shutdown(timeoutMs) {
      spans.flush();
      const done = new Promise<void>((resolve) => (flushed = resolve));
      worker.postMessage({ type: 'flush' } satisfies ToTracingWorker);
      await Promise.race([done, new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref())]);
      await worker.terminate();
    },
  };
}

/** The worker's module beside this one: `.js` when built, `.ts` when run from the sources (tsx). */
function workerFile(): URL {
  const built = new URL('./tracing-worker.js', import.meta.url);
  return existsSync(built) ? built : new URL('./tracing-worker.ts', import.meta.url);
}

function isProtocol(text: string): text is (typeof PROTOCOLS)[number] {
  return (PROTOCOLS as readonly string[]).includes(text);
}

function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}

function tracesUrl(base: string): string {
  return new URL('v1/traces', base.endsWith('/') ? base : `${base}/`).toString();
}


/** The OTEL_BSP_ variables, where set to a positive integer; the SDK's defaults otherwise (a queue of 2,048 spans bounds the memory). */
function batchOptions(env: Env): { maxQueueSize?: number; maxExportBatchSize?: number; scheduledDelayMillis?: number; exportTimeoutMillis?: number } {
  const read = (name: string): number | undefined => {
    const value = Number(env[name]);
    return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  };
  const options = {
    maxQueueSize: read('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: read('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
    scheduledDelayMillis: read('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: read('OTEL_BSP_EXPORT_TIMEOUT'),
  };
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/** The SDK's sampler of OTEL_TRACES_SAMPLER, asked at each trace's root (a turn's span), under the client's span when it sent one. */
async function rootSampler(env: Env, log: Logger): Promise<RootSampler> {
  const [sampler, { ROOT_CONTEXT, trace, TraceFlags }, { SamplingDecision }] = await Promise.all([samplerFromEnv(env, log), import('@opentelemetry/api'), import('@opentelemetry/sdk-trace')]);
  const contextOf = (parent: SpanContext | null) =>
    parent === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: parent.remote });
  return (traceId, parent, name) => sampler.shouldSample(contextOf(parent), traceId, name, 0, {}, []).decision === SamplingDecision.RECORD_AND_SAMPLED;
}

/** OTEL_TRACES_SAMPLER (and its _ARG), as the specification names them; parentbased_always_on by default. */
async function samplerFromEnv(env: Env, log: Logger) {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace');
  const ratio = Number(env['OTEL_TRACES_SAMPLER_ARG'] ?? '1');
  const fraction = Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
  const name = nonEmpty(env['OTEL_TRACES_SAMPLER']) ?? 'parentbased_always_on';
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(fraction);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(fraction) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    default:
      log.warn({ sampler: name }, 'OTEL_TRACES_SAMPLER is not one this host knows: parentbased_always_on');
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function rateLimitedWarning(log: Logger): (message: string) => void {
  let last = 0;
  let suppressed = 0;
  return (message) => {
    const now = Date.now();
    if (now - last < WARN_EVERY_MS) {
      suppressed++;
      return;
    }
    log.warn({ suppressed }, `tracing: ${message}`);
    last = now;
    suppressed = 0;
  };
}
