// The client protocol (PROTOCOL.md §2): JSON-RPC 2.0, one object per line, over turnhost.sock.
// Wire errors are built here and only here.
import { IDENTIFIER_RULE, isIdentifier, isRecord, type UnknownRecord } from './fields.js';
import type { RequestId, RpcErrorObject, RpcResponse } from './rpc.js';

export const ErrorCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  badQuestionId: 4002,
  /** Known, but not to this caller (PROTOCOL.md §5.6, §6.2). */
  forbidden: 4003,
  sessionNotFound: 4004,
  sessionBusy: 4009,
  shuttingDown: 4010,
  /** A person over a budget (PROTOCOL.md §5.7): `data` says which, and when it resets. */
  budgetExceeded: 4029,
  unknownQueueItem: 4041,
  internal: 5000,
  hostUnavailable: 5019,
  /** The daemon's cap on open connections is reached (an implementation-defined server error). */
  tooManyClients: -32000,
} as const;

export type HostUnavailableReason = 'starting' | 'restarting' | 'crash_loop' | 'crash';

/** An error that goes back to the client as a JSON-RPC error object. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  toJson(): RpcErrorObject {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
  }

  static hostUnavailable(reason: HostUnavailableReason): RpcError {
    return new RpcError(ErrorCodes.hostUnavailable, `host unavailable: ${reason}`, { reason });
  }
}

/** What one line from a client is. */
export type ClientMessage =
  | { kind: 'request'; id: RequestId; method: string; params: UnknownRecord; vouched?: unknown }
  | { kind: 'notification'; method: string; params: UnknownRecord }
  | { kind: 'response'; id: RequestId; result?: unknown; error?: unknown }
  | { kind: 'invalid'; id: RequestId; error: RpcError };

export function parseClientMessage(line: string): ClientMessage {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return { kind: 'invalid', id: null, error: new RpcError(ErrorCodes.parseError, `parse error: ${(err as Error).message}`) };
  }
  if (!isRecord(value)) return { kind: 'invalid', id: null, error: new RpcError(ErrorCodes.invalidRequest, 'a message must be a JSON object') };
  const id = value['id'];
  const validId = id === undefined || id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
  if (!validId) return { kind: 'invalid', id: null, error: new RpcError(ErrorCodes.invalidRequest, 'id must be a string, a number or null') };
  if (typeof id === 'string' && !isIdentifier(id)) return { kind: 'invalid', id: null, error: new RpcError(ErrorCodes.invalidRequest, `id ${IDENTIFIER_RULE}`) };
  const rpcId = (id ?? null) as RequestId;
  if (value['jsonrpc'] !== '2.0') return { kind: 'invalid', id: rpcId, error: new RpcError(ErrorCodes.invalidRequest, 'jsonrpc must be "2.0"') };
  const method = value['method'];
  if (method === undefined && id !== undefined && ('result' in value || 'error' in value)) {
    return { kind: 'response', id: rpcId, result: value['result'], error: value['error'] };
  }
  if (typeof method !== 'string' || method === '') return { kind: 'invalid', id: rpcId, error: new RpcError(ErrorCodes.invalidRequest, 'method must be a non-empty string') };
  const params = value['params'] ?? {};
  if (!isRecord(params)) return { kind: 'invalid', id: rpcId, error: new RpcError(ErrorCodes.invalidParams, 'params must be an object') };
  if (id === undefined) return { kind: 'notification', method, params };
  // `vouched`: who a node forwarding the request says its client is (PROTOCOL.md §5.6); only a node's link is believed.
  return value['vouched'] === undefined ? { kind: 'request', id: rpcId, method, params } : { kind: 'request', id: rpcId, method, params, vouched: value['vouched'] };
}

export function resultLine(id: RequestId, result: unknown): string {
  const response: RpcResponse = { jsonrpc: '2.0', id, result };
  return `${JSON.stringify(response)}\n`;
}

export function errorLine(id: RequestId, error: RpcError): string {
  const response: RpcResponse = { jsonrpc: '2.0', id, error: error.toJson() };
  return `${JSON.stringify(response)}\n`;
}
