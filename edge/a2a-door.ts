// `POST /a2a/{agent}` and the Agent Cards (PROTOCOL.md §7.3): other agents hand work to a catalogue
// agent over A2A's JSON-RPC binding, through the SDK's own transport handlers (1.0, and 0.3's
// names when the request's A2A-Version says 0.3 or nothing, as the SDK's servers do); the tasks
// are the caller's turns (a2a-tasks.ts). A stream is server-sent events, one JSON-RPC response each.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion, type User } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import type { ClientContext } from '../actors/daemon/client-context.js';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { isRecord } from '../protocol/fields.js';
import { agentCard, agentCardJson } from './a2a-card.js';
import { TurnTasks } from './a2a-tasks.js';
import { traced } from './trace-headers.js';
import { HttpFailure, parsedJson, readBody, sendJson } from './http-answers.js';

/** What a request without A2A-Version speaks (A2A's rule). */
const ABSENT_VERSION = '0.3';

/** The agent a door names, as the caller may use it; the default agent's without a name. */
function doorAgent(ctx: Pick<ClientContext, 'agents' | 'identity'>, name: string | null) {
  const chosen = name ?? ctx.agents.config.defaultAgent;
  const definition = ctx.agents.config.definitions.get(chosen);
  if (definition === undefined) throw new HttpFailure(404, ErrorCodes.sessionNotFound, `no agent ${chosen}`);
  return definition;
}

/** The card of `/a2a/{agent}` (or the default agent's), served without a login. */
export function sendAgentCard(res: ServerResponse, ctx: Pick<ClientContext, 'agents' | 'identity'>, agent: string | null, origin: string): void {
  res.setHeader('cache-control', 'no-cache');
  sendJson(res, 200, agentCardJson(agentCard(doorAgent(ctx, agent), origin)));
}

export async function a2aRequest(req: IncomingMessage, res: ServerResponse, ctx: ClientContext, agent: string, origin: string, count: (method: string) => void): Promise<void> {
  const definition = doorAgent(ctx, agent);
  // A member at an agent not open to members is refused here, whatever the method.
  try {
    ctx.agents.choose(ctx.identity, definition.name, undefined);
  } catch (err) {
    if (err instanceof RpcError) throw new HttpFailure(403, err.code, err.message);
    throw err;
  }
  const body = parsedJson(await readBody(req, ctx.contentBounds.maxPromptBytes));
  count(isRecord(body) && typeof body['method'] === 'string' ? body['method'] : 'other');
  const card = agentCard(definition, origin);
  const version = headerText(req.headers['a2a-version']) ?? ABSENT_VERSION;
  const context = new ServerCallContext({ requestedVersion: version, user: caller(ctx) });
  const legacy = version === ABSENT_VERSION;
  const mapError = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError : JsonRpcTransportHandler.mapToJSONRPCError;
  const id = isRecord(body) && (typeof body['id'] === 'string' || typeof body['id'] === 'number') ? body['id'] : null;
  try {
    validateVersion(version, card, 'JSONRPC');
  } catch (err) {
    return sendJson(res, 200, { jsonrpc: '2.0', id, error: mapError(err) });
  }
  const tasks = new TurnTasks(ctx, definition.name, card, traced(req));
  const handler = legacy ? new LegacyJsonRpcTransportHandler(tasks) : new JsonRpcTransportHandler(tasks);
  const answer = await handler.handle(body as Record<string, unknown>, context);
  if (!isStream(answer)) return sendJson(res, 200, answer);
  await sendStream(res, answer, id, mapError);
}

function caller(ctx: ClientContext): User {
  return { isAuthenticated: true, userName: ctx.identity.user };
}

/** Each response as an event; an error inside the stream as its last event. A caller that goes stops it. */
async function sendStream(res: ServerResponse, stream: AsyncGenerator<unknown, void, undefined>, id: string | number | null, mapError: (err: unknown) => unknown): Promise<void> {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  res.once('close', () => void stream.return(undefined));
  try {
    for await (const event of stream) {
      if (res.destroyed) break;
      res.write(formatSSEEvent(event));
    }
  } catch (err) {
    if (!res.destroyed) res.write(formatSSEErrorEvent({ jsonrpc: '2.0', id, error: mapError(err) }));
  } finally {
    if (!res.writableEnded) res.end();
  }
}

function isStream(value: unknown): value is AsyncGenerator<unknown, void, undefined> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';
}


function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

