// The spans an agent records inside its turn (PROTOCOL.md §5.8), on OpenTelemetry's GenAI semantic
// conventions: `chat <model>` for each model call, `execute_tool <name>` for each tool call. They are
// children of the turn's `invoke_agent` span (the host's, actors/host/turn-tracing.ts), through the
// turn's trace. With tracing off a turn's trace has no traceparent, and nothing here runs.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { TurnUsage } from '../protocol/outbound.js';

/** What an agent gets of its turn's trace. */
export interface TurnTrace {
  /** The turn's span, as the parent of the agent's own. */
  readonly context: Context;
  /** The turn's span as a W3C traceparent (for a guest's `_meta`); null: tracing is off. */
  readonly traceparent: string | null;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts, replies and arguments may be recorded. */
  readonly captureContent: boolean;
}

export const UNTRACED: TurnTrace = { context: ROOT_CONTEXT, traceparent: null, captureContent: false };

/** One tracer for the process: the API hands out a proxy that follows the provider set at start. */
export const tracer = trace.getTracer('turnhost');

export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

/** Token counts as GenAI attributes. */
export function usageAttributes(usage: Partial<TurnUsage> | undefined | null): Attributes {
  if (usage === undefined || usage === null) return {};
  return {
    ...(usage.prompt_tokens === undefined ? {} : { 'gen_ai.usage.input_tokens': usage.prompt_tokens }),
    ...(usage.completion_tokens === undefined ? {} : { 'gen_ai.usage.output_tokens': usage.completion_tokens }),
    ...(usage.cached_tokens === undefined ? {} : { 'gen_ai.usage.cache_read.input_tokens': usage.cached_tokens }),
    ...(usage.reasoning_tokens === undefined ? {} : { 'gen_ai.usage.reasoning.output_tokens': usage.reasoning_tokens }),
  };
}

/** Ends a span as failed: `error.type` (a short class of failure, never a message that may hold a secret). */
export function endFailed(span: Span, errorType: string, message?: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message === undefined ? {} : { message }) });
  span.end();
}

/** A model call's span, or null with tracing off. */
export function startChat(turn: TurnTrace, provider: string, model: string, server: URL): Span | null {
  if (turn.traceparent === null) return null;
  const port = server.port === '' ? (server.protocol === 'https:' ? 443 : 80) : Number(server.port);
  return tracer.startSpan(
    `chat ${model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, 'gen_ai.request.model': model, 'server.address': server.hostname, 'server.port': port },
    },
    turn.context,
  );
}

export interface ChatOutcome {
  responseModel: string | null;
  finishReason: string | null;
  usage: Partial<TurnUsage> | null;
}

export function endChat(span: Span | null, outcome: ChatOutcome): void {
  if (span === null) return;
  span.setAttributes({
    ...usageAttributes(outcome.usage),
    ...(outcome.responseModel === null ? {} : { 'gen_ai.response.model': outcome.responseModel }),
    ...(outcome.finishReason === null ? {} : { 'gen_ai.response.finish_reasons': [outcome.finishReason] }),
  });
  span.end();
}

/** A tool call's span, or null with tracing off; its arguments only when content may be recorded. */
export function startTool(turn: TurnTrace, name: string, callId: string, args?: string): Span | null {
  if (turn.traceparent === null) return null;
  return tracer.startSpan(
    `execute_tool ${name}`,
    {
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'gen_ai.tool.call.id': callId,
        'gen_ai.tool.type': 'function',
        ...(turn.captureContent && args !== undefined ? { 'gen_ai.tool.call.arguments': args } : {}),
      },
    },
    turn.context,
  );
}

/** A call whose name and arguments were known only later (a guest's): its span says what they were. */
export function nameTool(span: Span | null, turn: TurnTrace, name: string, args: string): void {
  if (span === null) return;
  span.updateName(`execute_tool ${name}`);
  span.setAttribute('gen_ai.tool.name', name);
  if (turn.captureContent) span.setAttribute('gen_ai.tool.call.arguments', args);
}

export function endTool(span: Span | null, turn: TurnTrace, ok: boolean, result?: string): void {
  if (span === null) return;
  if (turn.captureContent && result !== undefined) span.setAttribute('gen_ai.tool.call.result', result);
  if (ok) span.end();
  else endFailed(span, 'tool_error');
}
