// The host's spans (PROTOCOL.md §5.8): `invoke_agent <agent>` for each turn, from the moment it
// arrived, a child for its wait for a worker or in its session's queue, and `turnhost.request
// <method>` for each question it asked. The turn's span is the child of the client's trace context
// when it came with one. Its ids are stored with the turn's start (`trace`), so that a host that
// finds the turn lost after a crash ends that same span, with an error, and the spans its agent
// exported before the crash keep their parent.
import { usageAttributes, type TurnTrace } from '../../agents/genai-spans.js';
import { type RecordedSpan, type SpanContext, type SpanRecorder } from '../../agents/span-recorder.js';
import { OWNER } from '../../persistence/people.js';
import type { LostTurn } from '../../persistence/store.js';
import type { TurnUsage } from '../../protocol/usage.js';
import { traceparentParts, type TraceContext } from '../../protocol/trace-context.js';

/** A turn as its span begins. */
export interface TracedTurn {
  sid: string;
  turnId: string;
  /** The session's agent, the catalogue's name (AGENT.md §8): `gen_ai.agent.name`. */
  agent: string;
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
    private readonly spans: SpanRecorder,
    /** The catalogue's default agent: a lost turn's session stored before there were several has no name of its own. */
    private readonly defaultAgent: string,
    readonly captureContent: boolean,
  ) {}

  startTurn(turn: TracedTurn, now = Date.now()): TurnSpan {
    const parent = parentContext(turn.traceContext);
    const span = this.spans.start(`invoke_agent ${turn.agent}`, parent, { startMs: turn.arrivedAt, attributes: this.turnAttributes(turn) });
    if (this.captureContent) span.setAttributes({ 'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: turn.prompt }] }]) });
    // A turn that started at once has no wait worth a span: the arrival's millisecond is its actor's round trip.
    if (span.recorded && now - turn.arrivedAt >= 1) span.child('turnhost.queue', { startMs: turn.arrivedAt, attributes: { 'turnhost.queue.wait_ms': now - turn.arrivedAt } }).end(now);
    return new TurnSpan(span, { span, captureContent: this.captureContent }, storedRef(span, parent));
  }

  /**
   * Turns found lost (the host that ran them died, or their node): their spans end now, with an
   * error, under the ids they began with. A turn that was not traced, or not sampled, has none.
   */
  endLost(lost: readonly LostTurn[], reason: 'crash' | 'node_lost', now = Date.now()): void {
    for (const turn of lost) {
      const ids = turn.trace === null ? null : STORED.exec(turn.trace);
      if (ids === null || (Number.parseInt(ids[4]!, 16) & 1) === 0) continue;
      const [, traceId, spanId, parentSpanId] = ids as unknown as [string, string, string, string | undefined];
      const parent: SpanContext | null = parentSpanId === undefined ? null : { traceId, spanId: parentSpanId, sampled: true, remote: true };
      const agent = turn.agent ?? this.defaultAgent;
      const span = this.spans.start(`invoke_agent ${agent}`, parent, { ids: { traceId, spanId }, startMs: turn.startedAt, attributes: this.turnAttributes({ sid: turn.sid, turnId: turn.turnId, by: turn.by, agent }) });
      span.setAttributes({ 'turnhost.outcome': 'lost' });
      span.fail(reason, reason === 'crash' ? 'the host died during the turn' : "the turn's node was lost", now);
    }
  }

  private turnAttributes(turn: Pick<TracedTurn, 'sid' | 'turnId' | 'by' | 'agent'>): Record<string, string> {
    return {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': turn.agent,
      'gen_ai.conversation.id': turn.sid,
      'turnhost.turn_id': turn.turnId,
      'turnhost.by': turn.by ?? OWNER,
    };
  }
}

/** A running turn's span: what its agent and its questions hang under, ended with the turn. */
export class TurnSpan {
  constructor(
    private readonly span: RecordedSpan,
    readonly trace: TurnTrace,
    /** For the turn's row: how a later host ends this span if the turn is lost. */
    readonly stored: string | null,
  ) {}

  /** A question's span: ended with its outcome and who answered. */
  request(method: string, id: string): RequestSpan {
    return new RequestSpan(this.span.child(`turnhost.request ${method}`, { attributes: { 'turnhost.request.method': method, 'turnhost.request.id': id } }));
  }

  end(end: TurnEnd): void {
    const attributes = usageAttributes(end.usage);
    attributes['turnhost.outcome'] = end.outcome;
    if (end.model !== undefined) attributes['gen_ai.response.model'] = end.model;
    this.span.setAttributes(attributes);
    if (this.trace.captureContent && end.reply !== undefined && end.reply !== null) {
      this.span.setAttributes({ 'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: end.reply }] }]) });
    }
    if (end.error === undefined) this.span.end();
    else this.span.fail(end.error.type, end.error.message);
  }
}

export class RequestSpan {
  private readonly began = Date.now();

  constructor(private readonly span: RecordedSpan) {}

  /** `outcome`: answered, declined, timeout, or why it was withdrawn (PROTOCOL.md §3); `by`: who answered, when someone did. */
  end(outcome: string, by: string | null): void {
    this.span.setAttributes({ 'turnhost.request.outcome': outcome, 'turnhost.request.wait_ms': Date.now() - this.began, ...(by === null ? {} : { 'turnhost.request.answered_by': by }) });
    this.span.end();
  }
}

/** The client's span as the turn's parent; the edge checked it (a turn.start without a valid one has none). */
function parentContext(traceContext: TraceContext | undefined): SpanContext | null {
  if (traceContext === undefined) return null;
  const parts = traceparentParts(traceContext.traceparent);
  if (parts === null) return null;
  return { ...parts, remote: true, ...(traceContext.tracestate === undefined ? {} : { traceState: traceContext.tracestate }) };
}

function storedRef(span: RecordedSpan, parent: SpanContext | null): string | null {
  if (!span.recorded) return null;
  return `${span.context.traceId}-${span.context.spanId}-${parent?.spanId ?? ''}-01`;
}
