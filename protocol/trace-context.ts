// A W3C trace context (https://www.w3.org/TR/trace-context/) as a client hands it over (PROTOCOL.md
// §5.8): the `trace_context` param of prompt.submit, the `traceparent` header on REST and AG-UI, and
// on to the host in turn.start. Checked at the edge; what is not a valid one is dropped, not refused
// (a trace is a hint: a bad one costs the turn nothing).

export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
/** W3C's bound on a tracestate: 32 members of at most 256 characters, kept to 512 characters here. */
const TRACESTATE_MAX = 512;

export function validTraceparent(text: unknown): text is string {
  if (typeof text !== 'string') return false;
  const match = TRACEPARENT.exec(text);
  return match !== null && !text.startsWith('ff') && !/^0+$/.test(match[1]!) && !/^0+$/.test(match[2]!);
}

/** `{traceparent, tracestate?}`, or a traceparent alone; null when it is not one. */
export function traceContextOf(value: unknown): TraceContext | null {
  if (validTraceparent(value)) return { traceparent: value };
  if (typeof value !== 'object' || value === null) return null;
  const { traceparent, tracestate } = value as Record<string, unknown>;
  if (!validTraceparent(traceparent)) return null;
  return typeof tracestate === 'string' && tracestate.length <= TRACESTATE_MAX && tracestate !== '' ? { traceparent, tracestate } : { traceparent };
}
