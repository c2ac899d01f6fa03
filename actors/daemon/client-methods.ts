// The client methods of PROTOCOL.md §2, one door into them for every door of the daemon: who may
// call a method (authorize), then the method, found in its area's table (methods/), its params
// checked there (naming the bad field); a route of the table in routes.ts goes to the host as a
// control. What succeeded is audited here.
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { FieldError, Fields, type UnknownRecord } from '../../protocol/fields.js';
import type { RequestId } from '../../protocol/rpc.js';
import { routeClass } from '../host/routes.js';
import type { ClientContext } from './client-context.js';
import { isSessionMethod } from './peer-links.js';
import { ANSWERS } from './session-access.js';
import { AGENT_METHODS, checkModel } from './methods/agents.js';
import { ANSWER_METHODS, sidForRequest } from './methods/answers.js';
import { BRANCH_METHODS } from './methods/branches.js';
import { CONTENT_METHODS } from './methods/content.js';
import { callHost } from './methods/host-calls.js';
import { HOST_METHODS } from './methods/host.js';
import { LIFE_METHODS } from './methods/life.js';
import type { MethodTable } from './methods/method-table.js';
import { PEOPLE_METHODS } from './methods/people.js';
import { SCHEDULE_METHODS } from './methods/schedules.js';
import { SESSION_METHODS } from './methods/sessions.js';
import { USAGE_METHODS } from './methods/usage.js';

/** Every area's table (methods/): a new area's methods get a file of their own there, and a place here. */
const METHODS: MethodTable = { ...SESSION_METHODS, ...CONTENT_METHODS, ...ANSWER_METHODS, ...BRANCH_METHODS, ...LIFE_METHODS, ...PEOPLE_METHODS, ...SCHEDULE_METHODS, ...AGENT_METHODS, ...USAGE_METHODS, ...HOST_METHODS };

/** A method as a client calls it: who it is may do it (authorize), then it runs (invokeMethod). */
export async function callMethod(method: string, params: UnknownRecord, ctx: ClientContext, id: RequestId = null): Promise<unknown> {
  if (!ctx.identity.admin) await authorize(method, params, ctx);
  return invokeMethod(method, params, ctx, id);
}

/**
 * Throws unless the client's identity may call the method on its session (session-access.ts). A
 * node checks before it forwards a method to the session's owner: both read the same store.
 */
export async function authorize(method: string, params: UnknownRecord, ctx: ClientContext): Promise<void> {
  const sid = ANSWERS.has(method) ? await requestSession(params, ctx) : typeof params['session_id'] === 'string' ? params['session_id'] : null;
  await ctx.access.check(ctx.identity, method, sid ?? '');
}

/** The session of the server request a method answers; an unknown request checks as an unknown session. */
async function requestSession(params: UnknownRecord, ctx: ClientContext): Promise<string | null> {
  const requestId = params['request_id'];
  return typeof requestId === 'string' ? sidForRequest(ctx, requestId) : null;
}

export async function invokeMethod(method: string, params: UnknownRecord, ctx: ClientContext, id: RequestId = null): Promise<unknown> {
  const known = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  const cls = routeClass(method);
  // Routes are checked against the table before any I/O.
  if (known === undefined && (cls === undefined || cls === 'turn-path')) throw new RpcError(ErrorCodes.methodNotFound, `method not found: ${method}`);
  if (ctx.peer === true && !isSessionMethod(method)) throw new RpcError(ErrorCodes.forbidden, `forbidden: a node's link may call session methods only, not ${method}`);
  try {
    const result = known ? await known(new Fields(params), ctx, id, (other, otherParams) => invokeMethod(other, otherParams, ctx)) : await routeMethod(method, params, ctx);
    recordAudit(method, params, result, ctx);
    return result;
  } catch (err) {
    if (err instanceof FieldError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${err.message}`);
    throw err;
  }
}

/** What each audited method is called in the audit log (PROTOCOL.md §5.6); an answer may be an approval or a denial. */
function auditAction(method: string, params: UnknownRecord): string | null {
  switch (method) {
    case 'session.create':
      return 'create';
    case 'session.delete':
      return 'delete';
    case 'session.import':
      return 'import';
    case 'prompt.submit':
      return params['on_busy'] === 'steer' ? 'steer' : 'submit';
    case 'session.interrupt':
      return 'interrupt';
    case 'session.queue.update':
      return 'queue edit';
    case 'clarify.lock':
      return 'answer';
    case 'session.share':
      return 'share';
    case 'session.unshare':
      return 'unshare';
    case 'session.fork':
      return 'fork';
    case 'session.rewind':
      return 'rewind';
    case 'session.retry':
      return 'retry';
    case 'prompt.edit':
      return 'edit';
    default:
      return null;
  }
}

/** The audit record of a method that succeeded, when it is one the audit log keeps (an answer's is answerServerRequest's). */
function recordAudit(method: string, params: UnknownRecord, result: unknown, ctx: ClientContext): void {
  const action = auditAction(method, params);
  if (action === null) return;
  const sid = typeof params['session_id'] === 'string' ? params['session_id'] : (result as { session_id?: string } | null)?.session_id;
  const detail: Record<string, unknown> = {};
  for (const key of ['request_id', 'queue_id', 'turn_id', 'action', 'user', 'role'] as const) if (typeof params[key] === 'string') detail[key] = params[key];
  const turnId = (result as { turn_id?: unknown } | null)?.turn_id;
  if (typeof turnId === 'string') detail['turn_id'] = turnId;
  ctx.audit({ user: ctx.identity.user, action, ...(sid === undefined ? {} : { session_id: sid }), ...(Object.keys(detail).length === 0 ? {} : { detail }) });
}

/** A run-concurrent or idle-gated route: its params go to the host as the control's params. */
async function routeMethod(route: string, params: UnknownRecord, ctx: ClientContext): Promise<unknown> {
  const sid = new Fields(params).identifier('session_id');
  const { session_id: _sid, ...rest } = params;
  if (route === 'slash.model' && typeof rest['model'] === 'string') await checkModel(ctx, sid, rest['model']);
  return callHost(ctx, { op: 'control', sid, route, params: rest });
}
