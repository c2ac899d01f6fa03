// The spans an agent records inside its turn (PROTOCOL.md §5.8), on OpenTelemetry's GenAI semantic
// conventions: `chat <model>` for each model call, `execute_tool <name>` for each tool call. They are
// children of the turn's `invoke_agent` span (the host's, actors/host/turn-tracing.ts), through the
// turn's trace. With tracing off a turn's trace has no span, and nothing here records anything.
import type { Attributes } from '@opentelemetry/api';
import type { TurnUsage } from '../protocol/usage.js';
import type { RecordedSpan } from './span-recorder.js';

/** What an agent gets of its turn's trace. */
export interface TurnTrace {
  /** The turn's span: the parent of the agent's own, and its traceparent for a model server or a guest. Null: tracing is off. */
  readonly span: RecordedSpan | null;
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts, replies and arguments may be recorded. */
  readonly captureContent: boolean;
}

export const UNTRACED: TurnTrace = { span: null, captureContent: false };

/** Token counts as GenAI attributes (assigned, not spread: once a turn, on the turns' thread). */
export function usageAttributes(usage: Partial<TurnUsage> | undefined | null): Attributes {
  const attributes: Attributes = {};
  if (usage === undefined || usage === null) return attributes;
  if (usage.prompt_tokens !== undefined) attributes['gen_ai.usage.input_tokens'] = usage.prompt_tokens;
  if (usage.completion_tokens !== undefined) attributes['gen_ai.usage.output_tokens'] = usage.completion_tokens;
  if (usage.cached_tokens !== undefined) attributes['gen_ai.usage.cache_read.input_tokens'] = usage.cached_tokens;
  if (usage.reasoning_tokens !== undefined) attributes['gen_ai.usage.reasoning.output_tokens'] = usage.reasoning_tokens;
  return attributes;
}

/** A model call's span, or null with tracing off. */
export function startChat(turn: TurnTrace, provider: string, model: string, server: URL): RecordedSpan | null {
  if (turn.span === null) return null;
  const port = server.port === '' ? (server.protocol === 'https:' ? 443 : 80) : Number(server.port);
  return turn.span.child(`chat ${model}`, {
    kind: 2,
    attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, 'gen_ai.request.model': model, 'server.address': server.hostname, 'server.port': port },
  });
}

export interface ChatOutcome {
  responseModel: string | null;
  finishReason: string | null;
  usage: Partial<TurnUsage> | null;
}

export function endChat(span: RecordedSpan | null, outcome: ChatOutcome): void {
  if (span === null) return;
  span.setAttributes({
    ...usageAttributes(outcome.usage),
    ...(outcome.responseModel === null ? {} : { 'gen_ai.response.model': outcome.responseModel }),
    ...(outcome.finishReason === null ? {} : { 'gen_ai.response.finish_reasons': [outcome.finishReason] }),
  });
  span.end();
}

/** A tool call's span, or null with tracing off; its arguments only when content may be recorded. */
export function startTool(turn: TurnTrace, name: string, callId: string, args?: string): RecordedSpan | null {
  if (turn.span === null) return null;
  return turn.span.child(`execute_tool ${name}`, {
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': name,
      'gen_ai.tool.call.id': callId,
      'gen_ai.tool.type': 'function',
      ...(turn.captureContent && args !== undefined ? { 'gen_ai.tool.call.arguments': args } : {}),
    },
  });
}

/** A call whose name and arguments were known only later (a guest's): its span says what they were. */
export function nameTool(span: RecordedSpan | null, turn: TurnTrace, name: string, args: string): void {
  if (span === null) return;
  span.rename(`execute_tool ${name}`);
  span.setAttributes({ 'gen_ai.tool.name': name, ...(turn.captureContent ? { 'gen_ai.tool.call.arguments': args } : {}) });
}

export function endTool(span: RecordedSpan | null, turn: TurnTrace, ok: boolean, result?: string): void {
  if (span === null) return;
  if (turn.captureContent && result !== undefined) span.setAttributes({ 'gen_ai.tool.call.result': result });
  if (ok) span.end();
  else span.fail('tool_error');
}
