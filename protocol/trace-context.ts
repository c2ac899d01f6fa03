// A W3C trace context (https://www.w3.org/TR/trace-context/) as a client hands it over (PROTOCOL.md
// §5.8): the `trace_context` param of prompt.submit, the `traceparent` header on REST and AG-UI, and
// on to the host in turn.start. Checked at the edge; what is not a valid one is dropped, not refused
// (a trace is a hint: a bad one costs the turn nothing).

export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** W3C's bound on a tracestate: 32 members of at most 256 characters, kept to 512 characters here. */
const TRACESTATE_MAX = 512;

/** A traceparent's parts: its trace and parent span ids, and whether the caller records the trace. */
export interface TraceparentParts {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

/** The parts of a W3C traceparent; null when it is not one (version ff, an all-zero id, not hex). */
export function traceparentParts(text: string): TraceparentParts | null {
  const match = TRACEPARENT.exec(text);
  if (match === null || text.startsWith('ff') || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return null;
  return { traceId: match[1]!, spanId: match[2]!, sampled: (Number.parseInt(match[3]!, 16) & 1) === 1 };
}

export function validTraceparent(text: unknown): text is string {
  return typeof text === 'string' && traceparentParts(text) !== null;
}

/** `{traceparent, tracestate?}`, or a traceparent alone; null when it is not one. */
export function traceContextOf(value: unknown): TraceContext | null {
  if (validTraceparent(value)) return { traceparent: value };
  if (typeof value !== 'object' || value === null) return null;
  const { traceparent, tracestate } = value as Record<string, unknown>;
  if (!validTraceparent(traceparent)) return null;
  return typeof tracestate === 'string' && tracestate.length <= TRACESTATE_MAX && tracestate !== '' ? { traceparent, tracestate } : { traceparent };
}
