// The REST routes of PROTOCOL.md §5.3: thin translations into the client methods, which check
// the params and answer as they do for a socket client. The event stream and the page are
// served by edge-server.ts; this table is the rest.
import type { IncomingMessage } from 'node:http';
import { authorize, callMethod } from '../actors/daemon/client-methods.js';
import { type ClientContext } from '../actors/daemon/client-context.js';
import type { GatewayMsg, HostStatus, SessionPeek, SupervisorMsg } from '../actors/daemon/supervisor-messages.js';
import { ask, type Ref } from '../actors/runtime.js';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import type { UnknownRecord } from '../protocol/fields.js';
import { notFound, readBody, readJsonBody } from './http-answers.js';
import { putBlob, readBlob } from '../actors/daemon/methods/content.js';
import { optionalName } from '../protocol/content.js';
import { traced } from './trace-headers.js';

const ASK_TIMEOUT_MS = 40_000;

export interface RouteAnswer {
  status: number;
  body: unknown;
  /** Sent as JSON lines (`application/x-ndjson`), one per item, in place of `body`, under this file name. */
  lines?: { items: readonly unknown[]; fileName: string };
  /** A file's bytes, in place of `body` (http-answers.ts, sendFile). */
  file?: { bytes: Buffer; mimeType: string; name: string | null };
}

type Handler = (call: RouteCall) => Promise<RouteAnswer>;

export interface RouteCall {
  req: IncomingMessage;
  /** The path's `{…}` parts, by name. */
  parts: Record<string, string>;
  query: URLSearchParams;
  ctx: ClientContext;
}

interface Route {
  method: string;
  path: string[];
  handle: Handler;
}

const ok = (body: unknown, status = 200): RouteAnswer => ({ status, body });
const method = (name: string, params: UnknownRecord, ctx: ClientContext): Promise<unknown> => callMethod(name, params, ctx);

const ROUTES: Route[] = [
  route('GET', '/v1/status', async ({ ctx }) => {
    if (!ctx.identity.admin) throw new RpcError(ErrorCodes.forbidden, 'forbidden: /v1/status is for admins');
    return ok(await method('host.status', {}, ctx));
  }),
  route('GET', '/v1/sessions', async ({ ctx, query }) =>
    ok(await method('session.list', { ...(query.has('status') ? { status: query.get('status') } : {}), ...(query.get('archived') === 'true' ? { archived: true } : {}) }, ctx)),
  ),
  route('POST', '/v1/sessions', async ({ ctx, req }) => ok(await method('session.create', pick(await readJsonBody(req), ['session_id', 'agent', 'model']), ctx), 201)),
  // Several agents (AGENT.md §8): those the caller may make a session with.
  route('GET', '/v1/agents', async ({ ctx }) => ok(await method('agents.list', {}, ctx))),
  route('GET', '/v1/sessions/{id}', async ({ ctx, parts }) => ok(await sessionView(parts['id']!, ctx))),
  // A session's life (PROTOCOL.md §2.3): `?interrupt=true` ends a running turn first.
  route('DELETE', '/v1/sessions/{id}', async ({ ctx, parts, query }) => ok(await method('session.delete', { session_id: parts['id'], ...(query.get('interrupt') === 'true' ? { interrupt: true } : {}) }, ctx))),
  route('PATCH', '/v1/sessions/{id}', async ({ ctx, parts, req }) => ok(await markSession(parts['id']!, await readJsonBody(req), ctx))),
  route('GET', '/v1/sessions/{id}/history', async ({ ctx, parts, query }) =>
    ok(await method('session.history', { session_id: parts['id'], ...integerParam(query, 'limit'), ...(query.get('all') === 'true' ? { all: true } : {}) }, ctx)),
  ),
  // Branches (PROTOCOL.md §2.2).
  route('POST', '/v1/sessions/{id}/fork', async ({ ctx, parts, req }) =>
    ok(await method('session.fork', { ...pick(await readJsonBody(req), ['new_session_id', 'at_turn_id', 'cwd', 'agent']), session_id: parts['id'] }, ctx), 201),
  ),
  route('GET', '/v1/sessions/{id}/export', async ({ ctx, parts }) => {
    const exported = (await method('session.export', { session_id: parts['id'] }, ctx)) as { lines: unknown[] };
    return { status: 200, body: null, lines: { items: exported.lines, fileName: `${parts['id']}.jsonl` } };
  }),
  route('GET', '/v1/sessions/{id}/usage', async ({ ctx, parts }) => ok(await method('session.usage', { session_id: parts['id'] }, ctx))),
  route('GET', '/v1/usage', async ({ ctx, query }) => ok(await method('usage.report', pick(Object.fromEntries(query), ['by', 'since', 'until']), ctx))),
  route('GET', '/v1/sessions/{id}/forks', async ({ ctx, parts }) => ok(await method('session.forks', { session_id: parts['id'] }, ctx))),
  route('POST', '/v1/sessions/{id}/rewind', async ({ ctx, parts, req }) =>
    ok(await method('session.rewind', { ...pick(await readJsonBody(req), ['to_turn_id']), session_id: parts['id'] }, ctx)),
  ),
  route('POST', '/v1/sessions/{id}/retry', async ({ ctx, parts, req }) =>
    ok(await method('session.retry', { ...pick(await readJsonBody(req), ['on_busy', 'client_message_id']), ...traced(req), session_id: parts['id'] }, ctx), 202),
  ),
  route('POST', '/v1/sessions/{id}/turns/{turn_id}/edit', async ({ ctx, parts, req }) =>
    ok(await method('prompt.edit', { ...pick(await readJsonBody(req), ['text', 'on_busy', 'client_message_id']), ...traced(req), session_id: parts['id'], turn_id: parts['turn_id'] }, ctx), 202),
  ),
  route('POST', '/v1/sessions/{id}/prompts', async ({ ctx, parts, req }) =>
    ok(await method('prompt.submit', { ...pick(await readJsonBody(req), ['text', 'content', 'on_busy', 'client_message_id']), ...traced(req), session_id: parts['id'] }, ctx), 202),
  ),
  route('POST', '/v1/sessions/{id}/interrupt', async ({ ctx, parts, req }) =>
    ok(await method('session.interrupt', { ...pick(await readJsonBody(req), ['turn_id', 'keep_queue']), session_id: parts['id'] }, ctx)),
  ),
  route('GET', '/v1/sessions/{id}/queue', async ({ ctx, parts }) => ok(await method('session.queue.get', { session_id: parts['id'] }, ctx))),
  route('PATCH', '/v1/sessions/{id}/queue/{queue_id}', async ({ ctx, parts, req }) =>
    ok(await method('session.queue.update', { ...pick(await readJsonBody(req), ['action', 'text']), session_id: parts['id'], queue_id: parts['queue_id'] }, ctx)),
  ),
  route('PUT', '/v1/sessions/{id}/shares/{user}', async ({ ctx, parts, req }) =>
    ok(await method('session.share', { ...pick(await readJsonBody(req), ['role']), session_id: parts['id'], user: parts['user'] }, ctx)),
  ),
  route('DELETE', '/v1/sessions/{id}/shares/{user}', async ({ ctx, parts }) => ok(await method('session.unshare', { session_id: parts['id'], user: parts['user'] }, ctx))),
  route('GET', '/v1/schedules', async ({ ctx, query }) => ok(await method('schedule.list', query.has('session_id') ? { session_id: query.get('session_id') } : {}, ctx))),
  route('POST', '/v1/schedules', async ({ ctx, req }) =>
    ok(await method('schedule.create', pick(await readJsonBody(req), ['session_id', 'text', 'cron', 'every_secs', 'at', 'tz', 'catch_up', 'on_busy']), ctx), 201),
  ),
  route('DELETE', '/v1/schedules/{id}', async ({ ctx, parts }) => ok(await method('schedule.delete', { schedule_id: parts['id'] }, ctx))),
  // A prompt's files (PROTOCOL.md §2.4): the raw body, bounded by --max-blob-mib, named by the session.
  route('POST', '/v1/sessions/{id}/blobs', async ({ ctx, parts, req }) => {
    const name = optionalName(headerText(req.headers['x-filename']), 'X-Filename');
    const bytes = await readBody(req, ctx.contentBounds.maxBlobBytes);
    return ok(await putBlob(ctx, bytes, req.headers['content-type'], name, parts['id']!), 201);
  }),
  route('GET', '/v1/sessions/{id}/blobs/{sha256}', async ({ ctx, parts }) => ({ status: 200, body: null, file: await blobOf(ctx, parts['id']!, parts['sha256']!) })),
  route('POST', '/v1/requests/{request_id}/answer', async ({ ctx, parts, req }) => {
    const body = await readJsonBody(req);
    // One answer of a batch locks that question; a whole answer resolves the request.
    if ('question_id' in body) return ok(await method('clarify.lock', { ...pick(body, ['question_id', 'answer']), request_id: parts['request_id'] }, ctx));
    return ok(await method('request.answer', { result: body['result'], request_id: parts['request_id'] }, ctx));
  }),
];

/** A header's value as a person wrote it (percent-encoded for what is not ASCII); undefined when absent or not decodable. */
function headerText(value: string | string[] | undefined): string | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * The bytes of a blob the session names, to whoever may read the session; one 404, the same
 * whether the session is not theirs, names no such blob, or the blob is held for others only.
 */
async function blobOf(ctx: ClientContext, sid: string, sha256: string): Promise<NonNullable<RouteAnswer['file']>> {
  const ref = sha256.startsWith('sha256:') ? sha256 : `sha256:${sha256}`;
  try {
    if (!ctx.identity.admin) await authorize('blob.get', { session_id: sid }, ctx);
    const { info, bytes } = await readBlob(ctx, sid, ref);
    return { bytes, mimeType: info.mimeType, name: info.name };
  } catch (err) {
    if (err instanceof RpcError && (err.code === ErrorCodes.sessionNotFound || err.code === ErrorCodes.invalidParams || err.code === ErrorCodes.forbidden)) throw notFound(`blob ${ref} of session ${sid}`);
    throw err;
  }
}

function route(method: string, path: string, handle: Handler): Route {
  return { method, path: path.split('/').filter((part) => part !== ''), handle };
}

export type RouteMatch = { kind: 'route'; handle: Handler; parts: Record<string, string> } | { kind: 'wrong-method'; allowed: string[] } | { kind: 'none' };

/** The route for a method and path; a known path with another method says which methods it has. */
export function matchRoute(httpMethod: string, pathname: string): RouteMatch {
  const segments = pathname.split('/').filter((part) => part !== '');
  const allowed: string[] = [];
  for (const candidate of ROUTES) {
    const parts = matchPath(candidate.path, segments);
    if (parts === null) continue;
    if (candidate.method === httpMethod) return { kind: 'route', handle: candidate.handle, parts };
    allowed.push(candidate.method);
  }
  return allowed.length > 0 ? { kind: 'wrong-method', allowed } : { kind: 'none' };
}

/** `{name}` matches one segment, decoded; null when the path is another. */
export function matchPath(pattern: readonly string[], segments: readonly string[]): Record<string, string> | null {
  if (pattern.length !== segments.length) return null;
  const parts: Record<string, string> = {};
  for (const [i, expected] of pattern.entries()) {
    const actual = segments[i]!;
    if (expected.startsWith('{')) {
      try {
        parts[expected.slice(1, -1)] = decodeURIComponent(actual);
      } catch {
        return null;
      }
    } else if (expected !== actual) {
      return null;
    }
  }
  return parts;
}

function pick(body: UnknownRecord, keys: readonly string[]): UnknownRecord {
  const picked: UnknownRecord = {};
  for (const key of keys) if (key in body) picked[key] = body[key];
  return picked;
}

function integerParam(query: URLSearchParams, name: string): UnknownRecord {
  const text = query.get(name);
  if (text === null) return {};
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${name} must be an integer`);
  return { [name]: value };
}

/** One session as a page first draws it: its row, whether a turn runs, its queue and open questions. */
async function sessionView(sid: string, ctx: ClientContext): Promise<unknown> {
  if (!ctx.identity.admin) await authorize('session.queue.get', { session_id: sid }, ctx);
  const session = await (await ctx.reader())?.session(sid);
  if (session === undefined) throw new RpcError(ErrorCodes.sessionNotFound, `session not found: ${sid}`);
  const [status, peek, queue] = await Promise.all([
    ask(ctx.supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), ASK_TIMEOUT_MS),
    ask(ctx.gateway, (replyTo: Ref<SessionPeek>): GatewayMsg => ({ kind: 'peek', sid, replyTo }), ASK_TIMEOUT_MS),
    callMethod('session.queue.get', { session_id: sid }, ctx),
  ]);
  const turnId = status.running_turns[sid] ?? null;
  return {
    session_id: sid,
    status: session.status,
    running: turnId !== null,
    turn_id: turnId,
    message_count: session.message_count,
    last_seq: peek.last_seq,
    queue,
    open_requests: peek.open_requests.map(asOpenRequest),
  };
}

/** `PATCH /v1/sessions/{id}` with `{archived?, pinned?}`: each flag given is one of the §2.3 methods. */
async function markSession(sid: string, body: UnknownRecord, ctx: ClientContext): Promise<unknown> {
  const marks: Array<[string, string, string]> = [
    ['archived', 'session.archive', 'session.unarchive'],
    ['pinned', 'session.pin', 'session.unpin'],
  ];
  const given = marks.filter(([field]) => field in body);
  if (given.length === 0) throw new RpcError(ErrorCodes.invalidParams, 'invalid params: give archived or pinned');
  // Checked whole before the first change, so a bad body changes nothing.
  for (const [field] of given) if (typeof body[field] !== 'boolean') throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${field} must be a boolean`);
  let result: UnknownRecord = { session_id: sid };
  for (const [field, on, off] of given) result = { ...result, ...((await method(body[field] ? on : off, { session_id: sid }, ctx)) as UnknownRecord) };
  return result;
}

function asOpenRequest(message: unknown): unknown {
  const m = message as { id?: unknown; method?: unknown; params?: unknown };
  return { request_id: m.id, method: m.method, params: m.params };
}
