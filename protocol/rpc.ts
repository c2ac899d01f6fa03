// JSON-RPC 2.0 messages a session's clients receive inside `rpc` frames (PROTOCOL.md §1.4).
import type { MessagePart } from './content.js';
import type { Nanos } from './nanos.js';
import type { QueueView } from './queue-view.js';
import type { TurnUsage } from './usage.js';

export type RequestId = string | number | null;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface RpcResponse {
  jsonrpc: '2.0';
  id: RequestId;
  result?: unknown;
  error?: RpcErrorObject;
}

export type EventPayloads = {
  'message.delta': { text: string };
  'message.complete': { text: string };
  'reasoning.delta': { text: string };
  'tool.start': { id: string; name: string; arguments?: string; title?: string };
  /** `content`: what the tool's result carries beyond its summary (PROTOCOL.md §2.4): diffs, terminals, files. */
  'tool.complete': { id: string; ok: boolean; summary?: string; content?: MessagePart[] };
  /** A running tool call's content so far (a diff proposed, a terminal's output). */
  'tool.update': { id: string; content: MessagePart[] };
  'status.update': { kind: string; text: string; entries?: PlanEntry[] };
  'request.cancel': { id: string; method: string; reason: CancelReason };
  /** To a viewer (PROTOCOL.md §5.6): a question is open that they may see but not answer. */
  'request.open': { request_id: string; method: string; params: Record<string, unknown> };
  error: { message: string; reason?: string };
  'turn.started': { turn_id: string; queue_id?: string; schedule_id?: string };
  'turn.end': { turn_id: string; queue_id?: string; interrupted: boolean; message_count?: number; history_version?: number; usage?: TurnUsage; finish_reason?: 'length' };
  'turn.error': { turn_id: string; queue_id?: string; message: string; reason: string };
  'session.queue': QueueView;
  /** A rewind (PROTOCOL.md §2.2): the line now ends after `to_turn_id` (null: empty); the turns it left, in order. */
  'session.rewound': { to_turn_id: string | null; superseded: string[] };
  /** The session was deleted (PROTOCOL.md §2.3): its last event; its id is never used again. */
  'session.deleted': { session_id: string; by: string };
  /** Archived or brought back (PROTOCOL.md §2.3). */
  'session.archived': { session_id: string; archived: boolean };
};

export type EventType = keyof EventPayloads;

/** One step of a guest agent's plan (AGENT.md §6), as ACP gives it. */
export interface PlanEntry {
  content: string;
  status: string;
  priority: string;
}

/** `node_lost`: the node that asked died, and another took its session over (PROTOCOL.md §6.2). */
export type CancelReason = 'interrupted' | 'timeout' | 'shutdown' | 'node_lost';

export interface RpcEvent<T extends EventType = EventType> {
  jsonrpc: '2.0';
  method: 'event';
  params: { type: T; session_id: string; payload: EventPayloads[T] };
}

export type ServerRequestMethod = 'clarify.request' | 'approval.request';

export interface RpcServerRequest {
  jsonrpc: '2.0';
  id: string;
  method: ServerRequestMethod;
  params: { session_id: string } & Record<string, unknown>;
}

export interface RpcActivity {
  jsonrpc: '2.0';
  method: 'compute_host.activity';
  params: { session_id: string; turn_id: string; activity_ns: Nanos | null };
}

export type RpcMessage = RpcEvent | RpcServerRequest | RpcActivity;

export function rpcEvent<T extends EventType>(sid: string, type: T, payload: EventPayloads[T]): RpcEvent<T> {
  return { jsonrpc: '2.0', method: 'event', params: { type, session_id: sid, payload } };
}

export function rpcResult(id: RequestId, result: unknown): RpcResponse {
  return { jsonrpc: '2.0', id, result };
}

export function rpcError(id: RequestId, code: number, message: string, data?: unknown): RpcResponse {
  const error: RpcErrorObject = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: '2.0', id, error };
}
