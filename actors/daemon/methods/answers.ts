// A client's answers to the agent's questions (PROTOCOL.md §2): a clarify locked answer by answer,
// an approval or a reply to any server request. The host takes the first answer; the gateway knows
// which session asked.
import { ask, tell, type Ref } from '../../runtime.js';
import type { GatewayMsg } from '../supervisor-messages.js';
import type { ClientContext } from '../client-context.js';
import { CALL_TIMEOUT_MS, callHost } from './host-calls.js';
import type { MethodTable } from './method-table.js';

export async function sidForRequest(ctx: ClientContext, requestId: string): Promise<string | null> {
  return ask(ctx.gateway, (replyTo: Ref<string | null>): GatewayMsg => ({ kind: 'request-session', requestId, replyTo }), CALL_TIMEOUT_MS);
}

/** A client's answer to a server request, whichever way it came: the first answer wins in the host, and is the one audited. */
export async function answerServerRequest(ctx: ClientContext, requestId: string, answer: { result?: unknown; error?: unknown }): Promise<{ status: string }> {
  const sid = await sidForRequest(ctx, requestId);
  if (sid === null) return { status: 'expired' };
  const frame = answer.error !== undefined ? { jsonrpc: '2.0', id: requestId, error: answer.error } : { jsonrpc: '2.0', id: requestId, result: answer.result ?? {} };
  const outcome = (await callHost(ctx, { op: 'respond', sid, params: { frame, by: ctx.identity.user } })) as { status: string };
  if (outcome.status !== 'ok') return outcome;
  tell(ctx.gateway, { kind: 'request-closed', requestId });
  const approved = (answer.result as { approved?: unknown } | null | undefined)?.approved;
  const action = approved === true ? 'approve' : approved === false ? 'deny' : 'answer';
  ctx.audit({ user: ctx.identity.user, action, session_id: sid, detail: { request_id: requestId } });
  return outcome;
}

/** Answers to the server requests a turn opened. */
export const ANSWER_METHODS: MethodTable = {

  async 'clarify.lock'(p, ctx) {
    const requestId = p.identifier('request_id');
    const questionId = p.identifier('question_id');
    const raw = p.raw('answer');
    const answer = typeof raw === 'string' ? raw : JSON.stringify(raw ?? null);
    const sid = await sidForRequest(ctx, requestId);
    if (sid === null) return { status: 'expired' };
    const result = (await callHost(ctx, { op: 'respond', sid, params: { lock: { request_id: requestId, question_id: questionId, answer }, by: ctx.identity.user } })) as { remaining?: unknown[] };
    if (Array.isArray(result.remaining) && result.remaining.length === 0) tell(ctx.gateway, { kind: 'request-closed', requestId });
    return result;
  },


  'request.answer'(p, ctx) {
    return answerServerRequest(ctx, p.identifier('request_id'), { result: p.raw('result') });
  },
};
