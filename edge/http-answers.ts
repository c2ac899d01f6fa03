// The edge's answers (PROTOCOL.md §5.3): JSON bodies, and errors as `{error: {code, message,
// data?}}` with the client protocol's code and the HTTP status that follows from it. Request
// bodies are read here, bounded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { isRecord, type UnknownRecord } from '../protocol/fields.js';

/** The largest request body read: 413 past it. */
export const BODY_MAX_BYTES = 1024 * 1024;

/** An answer that is not the client protocol's: the status decides, the code is the nearest one. */
export class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (what: string): HttpFailure => new HttpFailure(404, ErrorCodes.methodNotFound, `not found: ${what}`);
export const wrongMethod = (allowed: readonly string[]): HttpFailure => new HttpFailure(405, ErrorCodes.methodNotFound, `method not allowed here; allowed: ${allowed.join(', ')}`);

export function statusOf(code: number): number {
  switch (code) {
    case ErrorCodes.parseError:
    case ErrorCodes.invalidRequest:
    case ErrorCodes.invalidParams:
    case ErrorCodes.badQuestionId:
      return 400;
    case ErrorCodes.forbidden:
      return 403;
    case ErrorCodes.sessionNotFound:
    case ErrorCodes.unknownQueueItem:
    case ErrorCodes.methodNotFound:
      return 404;
    case ErrorCodes.sessionBusy:
      return 409;
    case ErrorCodes.shuttingDown:
    case ErrorCodes.hostUnavailable:
    case ErrorCodes.tooManyClients:
      return 503;
    default:
      return 500;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  res.end(text);
}

/** Any failure as the error body; what is not a wire error is a 500 with its message. */
export function sendError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof HttpFailure) return sendJson(res, err.status, { error: { code: err.code, message: err.message } }, err.status === 429 ? { 'retry-after': '1' } : {});
  const rpc = err instanceof RpcError ? err : new RpcError(ErrorCodes.internal, (err as Error)?.message ?? String(err));
  const status = statusOf(rpc.code);
  sendJson(res, status, { error: rpc.toJson() }, status === 503 ? { 'retry-after': '1' } : {});
}

/** The body as a JSON object: 413 past 1 MiB, 400 when it is not a JSON object; `{}` when empty. */
export async function readJsonBody(req: IncomingMessage): Promise<UnknownRecord> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > BODY_MAX_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req) {
    bytes += (chunk as Buffer).length;
    if (bytes > BODY_MAX_BYTES) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  if (bytes === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new HttpFailure(400, ErrorCodes.parseError, `the body is not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(value)) throw new HttpFailure(400, ErrorCodes.invalidRequest, 'the body must be a JSON object');
  return value;
}

function tooLarge(): HttpFailure {
  return new HttpFailure(413, ErrorCodes.invalidRequest, `the body is larger than ${BODY_MAX_BYTES / 1024 / 1024} MiB`);
}
