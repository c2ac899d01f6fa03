// The edge's answers (PROTOCOL.md §5.3): JSON bodies, and errors as `{error: {code, message,
// data?}}` with the client protocol's code and the HTTP status that follows from it. Request
// bodies are read here, bounded.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { ContentRefused } from '../protocol/content.js';
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
    case ErrorCodes.budgetExceeded:
      return 429;
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
  // A body still coming is drained from now on (lingerOnRefusedBody), before the answer finishes:
  // Node ends an unread request once its answer is sent, and stops reading the connection, so a
  // client still writing a large body would block. The connection stays open for the drain even
  // when the client asked to close (Python's urllib does); the client closes it once it has read.
  const draining = res.req.complete ? {} : { connection: 'keep-alive' };
  if (!res.req.complete) lingerOnRefusedBody(res.req);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...draining, ...headers });
  res.end(text);
}

/** JSON lines (`application/x-ndjson`) as a file to save: a session's export (PROTOCOL.md §2.3). */
export function sendLines(res: ServerResponse, items: readonly unknown[], fileName: string): void {
  const text = items.map((item) => `${JSON.stringify(item)}\n`).join('');
  res.writeHead(200, {
    'content-type': 'application/x-ndjson; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'content-disposition': `attachment; filename="${fileName.replace(/[^\w.-]/g, '_')}"`,
    'cache-control': 'no-store',
  });
  res.end(text);
}

/**
 * A file's bytes (PROTOCOL.md §2.4): never sniffed into something else, shown inline only when it
 * is an image, downloaded otherwise; private to whoever may read its session.
 */
export function sendFile(res: ServerResponse, file: { bytes: Buffer; mimeType: string; name: string | null }): void {
  const inline = file.mimeType.startsWith('image/');
  const name = (file.name ?? 'file').replace(/[^\w.-]/g, '_');
  res.writeHead(200, {
    'content-type': file.mimeType,
    'content-length': file.bytes.length,
    'x-content-type-options': 'nosniff',
    'content-disposition': `${inline ? 'inline' : 'attachment'}; filename="${name}"`,
    'cache-control': 'private, no-store',
  });
  res.end(file.bytes);
}

/** Any failure as the error body; what is not a wire error is a 500 with its message. */
export function sendError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof HttpFailure) return sendJson(res, err.status, { error: { code: err.code, message: err.message } }, err.status === 429 ? { 'retry-after': '1' } : {});
  const rpc = err instanceof RpcError ? err : new RpcError(ErrorCodes.internal, (err as Error)?.message ?? String(err));
  // A file refused at the door says why in its status too: 413 too large, 415 a type not taken.
  const status = rpc instanceof ContentRefused ? rpc.httpStatus : statusOf(rpc.code);
  const retry = retryAfter(rpc);
  sendJson(res, status, { error: rpc.toJson() }, retry === null ? {} : { 'retry-after': String(retry) });
}

/** Seconds until it is worth asking again: a budget's reset (PROTOCOL.md §5.7), a host coming back in a second; null: no header. */
export function retryAfter(rpc: RpcError): number | null {
  if (rpc.code === ErrorCodes.budgetExceeded) {
    const resets = isRecord(rpc.data) && typeof rpc.data['resets_at'] === 'string' ? Date.parse(rpc.data['resets_at']) : NaN;
    return Number.isNaN(resets) ? 60 : Math.max(1, Math.ceil((resets - Date.now()) / 1000));
  }
  return statusOf(rpc.code) === 503 ? 1 : null;
}

/**
 * The body as a JSON object: 413 past 1 MiB, 400 when it is not a JSON object; `{}` when empty.
 * A body past the bound is not read further here, and the request is not destroyed: the error's
 * answer goes out at once, and `lingerOnRefusedBody` drains the rest, so the client reads it.
 */
export async function readJsonBody(req: IncomingMessage): Promise<UnknownRecord> {
  const body = await readBody(req);
  if (body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new HttpFailure(400, ErrorCodes.parseError, `the body is not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(value)) throw new HttpFailure(400, ErrorCodes.invalidRequest, 'the body must be a JSON object');
  return value;
}

/** A body read whole as JSON of any shape (a JSON-RPC batch, say): 400 when it is not JSON. */
export function parsedJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new HttpFailure(400, ErrorCodes.parseError, `the body is not JSON: ${(err as Error).message}`);
  }
}

/** The body's bytes: 413 past `maxBytes` (1 MiB unless said, as readJsonBody says). */
export async function readBody(req: IncomingMessage, maxBytes = BODY_MAX_BYTES): Promise<Buffer> {
  const tooLarge = () => new HttpFailure(413, ErrorCodes.invalidRequest, `the body is larger than ${maxBytes / 1024 / 1024} MiB`);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw tooLarge();
  return new Promise<Buffer>((resolve, reject) => {
    // A declared length is read into one buffer of that size: a 20 MiB upload is held once, not as
    // its chunks and then their copy.
    const whole = declared > 0 ? Buffer.allocUnsafe(declared) : null;
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer): void => {
      if (bytes + chunk.length <= maxBytes && (whole === null || bytes + chunk.length <= whole.length)) {
        if (whole === null) chunks.push(chunk);
        else chunk.copy(whole, bytes);
        bytes += chunk.length;
        return;
      }
      req.off('data', onData).off('end', onEnd).pause();
      reject(tooLarge());
    };
    const onEnd = (): void => resolve(whole === null ? Buffer.concat(chunks) : whole.subarray(0, bytes));
    req.on('data', onData).once('end', onEnd).once('error', reject);
  });
}

/** A refused body is read and dropped up to this much, as nginx's lingering close does; past it the connection is closed. */
const LINGER_MAX_BYTES = 64 * 1024 * 1024;
const LINGER_MAX_MS = 10_000;

/**
 * For an answer to a request whose body was not read to its end (a 413, a 401 before the body, a
 * 404): the rest is read and dropped, so that a client still writing it (Node's fetch, which
 * reports EPIPE instead of the answer when the connection closes under it) reads the answer, and
 * the connection serves its next request. Bounded: 64 MiB or 10 s, then it is closed.
 */
function lingerOnRefusedBody(req: IncomingMessage): void {
  let dropped = 0;
  const close = (): void => void req.socket.destroy();
  const timer = setTimeout(close, LINGER_MAX_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_MAX_BYTES) close();
  });
  req.once('end', () => clearTimeout(timer));
  req.resume();
}

