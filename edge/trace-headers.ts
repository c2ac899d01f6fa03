// A client's trace context on an HTTP request (PROTOCOL.md §5.8): the W3C `traceparent` and
// `tracestate` headers, passed on as a submit's `trace_context`.
import type { IncomingMessage } from 'node:http';
import type { TraceContext } from '../protocol/trace-context.js';

/** The `traceparent` (and `tracestate`) headers as a submit's `trace_context` (PROTOCOL.md §5.8); the method checks them. */
export function traced(req: IncomingMessage): { trace_context?: TraceContext } {
  const { traceparent, tracestate } = req.headers;
  if (typeof traceparent !== 'string') return {};
  return { trace_context: { traceparent, ...(typeof tracestate === 'string' ? { tracestate } : {}) } };
}
