// The host's spans (PROTOCOL.md §5.8): `invoke_agent <agent>` for each turn, from the moment it
// arrived, a child for its wait for a worker or in its session's queue, and `turnhost.request
// <method>` for each question it asked. The turn's span is the child of the client's trace context
// when it came with one. Its ids are stored with the turn's start (`trace`), so that a host that
// finds the turn lost after a crash ends that same span, with an error, and the spans its agent
// exported before the crash keep their parent.
import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, trace, type Context, type Span } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import type { IdGenerator } from '@opentelemetry/sdk-trace';
import { endFailed, tracer, traceparentOf, usageAttributes, type TurnTrace } from '../../agents/genai-spans.js';
import { OWNER } from '../../persistence/people.js';
import type { LostTurn } from '../../persistence/store.js';
import type { TurnUsage } from '../../protocol/outbound.js';
import type { TraceContext } from '../../protocol/trace-context.js';

/**
 * The SDK's ids, except when the host recreates a lost turn's span: then the ids it had. Used
 * synchronously, one span at a time (the host has one thread).
 */
export class ReusableIds implements IdGenerator {
  private forced: { traceId: string; spanId: string } | null = null;

  constructor(private readonly random: IdGenerator) {}

  generateTraceId(): string {
    return this.forced?.traceId ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.forced?.spanId ?? this.random.generateSpanId();
  }

  /** Runs `make` with the span it makes given these ids. */
  reuse<T>(ids: { traceId: string; spanId: string }, make: () => T): T {
    this.forced = ids;
    try {
      return make();
    } finally {
      this.forced = null;
    }
  }
}

/** A turn as its span begins. */
export interface TracedTurn {
  sid: string;
  turnId: string;
  by: string | null;
  prompt: string;
  /** When it arrived (epoch ms): the span begins there; a wait before its start is its child. */
  arrivedAt: number;
  /** The client's trace context: the turn's span is its child. */
  traceContext?: TraceContext;
}

export interface TurnEnd {
  outcome: 'completed' | 'interrupted' | 'failed';
  model?: string;
  usage?: TurnUsage;
  reply?: string | null;
  /** A failed turn's reason (TurnErrorReason) and message, as its clients were told. */
  error?: { type: string; message: string };
}

/** The stored form of a turn's span: `<trace id>-<span id>-<parent span id or ''>-<flags>`. */
const STORED = /^([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{16})?-([0-9a-f]{2})$/;

export class HostTracing {
  constructor(
    private readonly ids: ReusableIds,
    private readonly agentName: string,
    readonly captureContent: boolean,
  ) {}

  startTurn(turn: TracedTurn, now = Date.now()): TurnSpan {
    const parent = parentContext(turn.traceContext);
    const span = tracer.startSpan(`invoke_agent ${this.agentName}`, { startTime: turn.arrivedAt, attributes: this.turnAttributes(turn) }, parent);
    if (this.captureContent) span.setAttribute('gen_ai.input.messages', JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: turn.prompt }] }]));
    const context = trace.setSpan(ROOT_CONTEXT, span);
    if (now - turn.arrivedAt >= 1) {
      tracer.startSpan('turnhost.queue', { startTime: turn.arrivedAt, attributes: { 'turnhost.queue.wait_ms': now - turn.arrivedAt } }, context).end(now);
    }
    const parentSpanId = trace.getSpanContext(parent)?.spanId ?? '';
    return new TurnSpan(span, { context, traceparent: traceparentOf(span), captureContent: this.captureContent }, storedRef(span, parentSpanId));
  }

  /**
   * Turns found lost (the host that ran them died, or their node): their spans end now, with an
   * error, under the ids they began with. A turn that was not traced, or not sampled, has none.
   */
  endLost(lost: readonly LostTurn[], reason: 'crash' | 'node_lost', now = Date.now()): void {
    for (const turn of lost) {
      const ids = turn.trace === null ? null : STORED.exec(turn.trace);
      if (ids === null || (Number.parseInt(ids[4]!, 16) & TraceFlags.SAMPLED) === 0) continue;
      const [, traceId, spanId, parentSpanId] = ids as unknown as [string, string, string, string | undefined];
      const parent = parentSpanId === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
      const span = this.ids.reuse({ traceId, spanId }, () =>
        tracer.startSpan(`invoke_agent ${this.agentName}`, { startTime: turn.startedAt, attributes: this.turnAttributes({ sid: turn.sid, turnId: turn.turnId, by: turn.by }) }, parent),
      );
      span.setAttribute('turnhost.outcome', 'lost');
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason === 'crash' ? 'the host died during the turn' : "the turn's node was lost" });
      span.setAttribute('error.type', reason);
      span.end(now);
    }
  }

  private turnAttributes(turn: Pick<TracedTurn, 'sid' | 'turnId' | 'by'>): Record<string, string> {
    return {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': this.agentName,
      'gen_ai.conversation.id': turn.sid,
      'turnhost.turn_id': turn.turnId,
      'turnhost.by': turn.by ?? OWNER,
    };
  }
}

/** A running turn's span: what its agent and its questions hang under, ended with the turn. */
export class TurnSpan {
  constructor(
    private readonly span: Span,
    readonly trace: TurnTrace,
    /** For the turn's row: how a later host ends this span if the turn is lost. */
    readonly stored: string | null,
  ) {}

  /** A question's span: ended with its outcome and who answered. */
  request(method: string, id: string): RequestSpan {
    return new RequestSpan(tracer.startSpan(`turnhost.request ${method}`, { attributes: { 'turnhost.request.method': method, 'turnhost.request.id': id } }, this.trace.context));
  }

  end(end: TurnEnd): void {
    this.span.setAttributes({ 'turnhost.outcome': end.outcome, ...usageAttributes(end.usage), ...(end.model === undefined ? {} : { 'gen_ai.response.model': end.model }) });
    if (this.trace.captureContent && end.reply !== undefined && end.reply !== null) {
      this.span.setAttribute('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: end.reply }] }]));
    }
    if (end.error === undefined) this.span.end();
    else endFailed(this.span, end.error.type, end.error.message);
  }
}

export class RequestSpan {
  private readonly began = Date.now();

  constructor(private readonly span: Span) {}

  /** `outcome`: answered, declined, timeout, cancelled (PROTOCOL.md §3); `by`: who answered, when someone did. */
  end(outcome: string, by: string | null): void {
    this.span.setAttributes({ 'turnhost.request.outcome': outcome, 'turnhost.request.wait_ms': Date.now() - this.began, ...(by === null ? {} : { 'turnhost.request.answered_by': by }) });
    this.span.end();
  }
}

function parentContext(traceContext: TraceContext | undefined): Context {
  if (traceContext === undefined) return ROOT_CONTEXT;
  const [, traceId, spanId, flags] = traceContext.traceparent.split('-') as [string, string, string, string];
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
    ...(traceContext.tracestate === undefined ? {} : { traceState: new TraceState(traceContext.tracestate) }),
  });
}

function storedRef(span: Span, parentSpanId: string): string | null {
  const { traceId, spanId, traceFlags } = span.spanContext();
  if ((traceFlags & TraceFlags.SAMPLED) === 0) return null;
  return `${traceId}-${spanId}-${parentSpanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}
