// `turnhost/client`: the typed client library of turnhost's daemon (PROTOCOL.md §2).
export { connect, ConnectionClosedError, DaemonUnreachableError, TurnhostClient } from './turnhost-client.js';
export type { ConnectOptions, ConnectionState, ReconnectOptions } from './turnhost-client.js';
/** A JSON-RPC error from the daemon: `code` (PROTOCOL.md §2's error codes) and `data`. */
export { RpcError as TurnhostError, ErrorCodes } from '../protocol/client-rpc.js';
export type * from './types.js';
