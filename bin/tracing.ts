// Tracing for the host process (PROTOCOL.md §5.8), set up once at its start from `--otlp-endpoint`
// and the standard OTEL_ variables, with the OpenTelemetry SDK and its OTLP exporter: spans are
// batched and sent in the background, never on a turn's path. A collector that is down costs
// dropped spans (the batch queue is bounded) and a warning at most once a minute. Off (no endpoint,
// OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none), none of the SDK is even loaded.
import { DiagLogLevel, diag, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { HostTracing } from '../actors/host/turn-tracing.js';
import { packageVersion } from '../protocol/package-version.js';

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

export async function startTracing(options: TracingOptions): Promise<Tracing | null> {
  const { env, log } = options;
  const endpoint = options.endpoint ?? (nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) || nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT']));
  if (!endpoint || env['OTEL_SDK_DISABLED'] === 'true' || env['OTEL_TRACES_EXPORTER'] === 'none') return null;
  const protocol = nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) || nonEmpty(env['OTEL_EXPORTER_OTLP_PROTOCOL']) || 'http/protobuf';
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    log.warn({ protocol }, `tracing is off: OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${PROTOCOLS.join(', ')} (grpc is not supported)`);
    return null;
  }
  const warn = rateLimitedWarning(log);
  const [{ TracerProvider, BatchSpanProcessor, RandomIdGenerator }, { resourceFromAttributes, detectResources, envDetector }, { setGlobalErrorHandler }, { HostTracing, ReusableIds }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
    import('../actors/host/turn-tracing.js'),
  ]);
  const exporterConfig = options.endpoint === undefined ? {} : { url: tracesUrl(options.endpoint) };
  const exporter =
    protocol === 'http/json'
      ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(exporterConfig)
      : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(exporterConfig);
  setGlobalErrorHandler((err) => warn(`could not export spans: ${err instanceof Error ? err.message : String(err)}`));
  diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  const ids = new ReusableIds(new RandomIdGenerator());
  const resource = resourceFromAttributes({
    'service.name': nonEmpty(env['OTEL_SERVICE_NAME']) || 'turnhost',
    'service.version': packageVersion(),
    ...(options.nodeId === undefined ? {} : { 'turnhost.node_id': options.nodeId }),
  }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    idGenerator: ids,
    sampler: await samplerFromEnv(env, log),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...batchOptions(env) })],
  });
  trace.setGlobalTracerProvider(provider);
  log.info({ endpoint: shownEndpoint(endpoint), protocol }, 'tracing: spans go to an OTLP collector');
  return {
    host: new HostTracing(ids, options.agentName, env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT'] === 'true'),
    shutdown: (timeoutMs) => Promise.race([provider.shutdown().catch(() => {}), new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref())]),
  };
}

function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}

function tracesUrl(base: string): string {
  return new URL('v1/traces', base.endsWith('/') ? base : `${base}/`).toString();
}

/** A URL as a log may show it: no credentials, no query. */
function shownEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(not a URL)';
  }
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
