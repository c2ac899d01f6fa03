// A method's calls to the host, through the supervisor (which routes, parks and times them out),
// and the client's attachment to a session's events that a call on that session makes.
import { RpcError } from '../../../protocol/client-rpc.js';
import { ask, tell, SECOND_MS, type Ref } from '../../runtime.js';
import type { CallReply, HostCall, HostStatus, SupervisorMsg } from '../supervisor-messages.js';
import type { ClientContext } from '../client-context.js';

/** Longer than any reply timeout in the supervisor, so the supervisor always answers first. */
export const CALL_TIMEOUT_MS = 40 * SECOND_MS;

export function callHost(ctx: ClientContext, call: HostCall): Promise<unknown> {
  return askHost(ctx.supervisor, call);
}

/** A call to the host through the supervisor: its value, or its error as an RpcError. */
export async function askHost(supervisor: Ref<SupervisorMsg>, call: HostCall): Promise<unknown> {
  const reply = await ask(supervisor, (replyTo: Ref<CallReply>): SupervisorMsg => ({ kind: 'call', call, replyTo }), CALL_TIMEOUT_MS);
  if (!reply.ok) throw new RpcError(reply.error.code, reply.error.message, reply.error.data);
  return reply.value;
}

export function hostStatus(ctx: ClientContext): Promise<HostStatus> {
  return ask(ctx.supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), CALL_TIMEOUT_MS);
}

/** The client gets the session's events from now on; a queue waiting for a client may run (PROTOCOL.md §2.1). */
export function attach(ctx: ClientContext, sid: string): void {
  // Neither forgets an attachment while the client is connected: a submit need not repeat it.
  if (ctx.attached.has(sid)) return;
  ctx.attached.add(sid);
  tell(ctx.gateway, { kind: 'attach', sid, clientId: ctx.clientId });
  tell(ctx.supervisor, { kind: 'attached', sid });
}
