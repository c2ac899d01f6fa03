// The shape of every area's client methods (PROTOCOL.md §2): a table from a method's name to its
// body. client-methods.ts joins the tables; a door reaches a method only through it.
import type { Fields, UnknownRecord } from '../../../protocol/fields.js';
import type { RequestId } from '../../../protocol/rpc.js';
import type { ClientContext } from '../client-context.js';

/** Another method, called as the client would call it: checked and audited (schedule.create makes its session so). */
export type Invoke = (method: string, params: UnknownRecord) => Promise<unknown>;

export type Method = (params: Fields, ctx: ClientContext, id: RequestId, invoke: Invoke) => Promise<unknown> | unknown;

export type MethodTable = Record<string, Method>;

/** The request's answer; ANSWERED_ELSEWHERE when another actor wrote it (session.resume's gateway). */
export const ANSWERED_ELSEWHERE: unique symbol = Symbol('answered elsewhere');
