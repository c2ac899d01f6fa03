// `POST /mcp` (PROTOCOL.md §7.4): turnhost's agents as tools of any MCP client (Claude Desktop,
// Cursor, Claude Code), through the MCP SDK's streamable HTTP server, stateless: each request is
// served by a server of its own, as the caller's person, so nothing outlives it but the turns it
// started. `run` starts a turn and answers its reply when it ends within `wait_s` (below the 60 s
// most clients give a call), else `running`, to be polled with `result`; the reply streams as
// progress notifications meanwhile, which lets a client that resets its timeout on progress wait.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';
import { callMethod } from '../actors/daemon/client-methods.js';
import { answerServerRequest } from '../actors/daemon/methods/answers.js';
import type { ClientContext } from '../actors/daemon/client-context.js';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { isRecord } from '../protocol/fields.js';
import { packageVersion } from '../protocol/package-version.js';
import { HttpFailure, parsedJson, readBody } from './http-answers.js';
import type { Places } from './places.js';
import { answerFrom, approves } from './question-answer.js';
import { TurnFollower, type TurnState } from './turn-follower.js';
import { traced } from './trace-headers.js';

/** What `run`, `result` and `answer` wait by default: under the 60 s most MCP clients give a call. */
const DEFAULT_WAIT_S = 50;
/** The longest wait a call may ask for: a client that resets its timeout on progress may wait this long. */
const MAX_WAIT_S = 600;
/** The MCP calls one daemon serves at once; the next is refused, not queued. */
export const MAX_MCP_CALLS = 64;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const TURN_STATUSES = ['queued', 'running', 'input_required', 'completed', 'canceled', 'failed'] as const;
/** A turn's outcome as every turn tool answers it (`structuredContent`). */
const TURN_OUTPUT = {
  status: z.enum(TURN_STATUSES),
  session_id: z.string(),
  turn_id: z.string(),
  usage: z.record(z.string(), z.unknown()).optional(),
  reason: z.string().optional().describe('why the turn failed: agent, lost (its host died), budget, …'),
  message: z.string().optional(),
  request_id: z.string().optional().describe('the open question: answer it with the tool `answer`'),
  question: z.record(z.string(), z.unknown()).optional(),
};
const WAIT = z.number().min(0).max(MAX_WAIT_S).optional().describe(`seconds to wait for the turn to end (default ${DEFAULT_WAIT_S})`);

/** The MCP methods /metrics names; any other is counted as `other`, so a caller cannot grow its labels. */
const COUNTED = new Set(['initialize', 'notifications/initialized', 'tools/list', 'ping', 'notifications/cancelled']);
const TOOLS = new Set(['run', 'result', 'answer', 'sessions', 'cancel']);

export async function mcpRequest(req: IncomingMessage, res: ServerResponse, ctx: ClientContext, calls: Places, count: (method: string) => void): Promise<void> {
  const body = parsedJson(await readBody(req));
  for (const message of Array.isArray(body) ? body : [body]) count(countedName(message));
  const release = calls.take();
  if (release === null) throw new HttpFailure(429, ErrorCodes.tooManyClients, `too many MCP calls at once (at most ${MAX_MCP_CALLS}): try again when one has ended`);
  const server = mcpServer(ctx, traced(req));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.once('close', () => {
    release();
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** A message's method as /metrics counts it: a tool call by its tool. */
function countedName(message: unknown): string {
  if (!isRecord(message) || typeof message['method'] !== 'string') return 'other';
  const method = message['method'];
  if (method === 'tools/call') {
    const name = isRecord(message['params']) ? message['params']['name'] : undefined;
    return typeof name === 'string' && TOOLS.has(name) ? `tools/call:${name}` : 'tools/call:other';
  }
  return COUNTED.has(method) ? method : 'other';
}


/** The five tools, as the caller's person: they see only the agents and sessions they may use. */
function mcpServer(ctx: ClientContext, trace: ReturnType<typeof traced>): McpServer {
  const server = new McpServer({ name: 'turnhost', version: packageVersion() });
  server.registerTool(
    'run',
    {
      description: "Hands a prompt to one of turnhost's agents: a new session (or `session_id`'s), one turn. Answers the reply when the turn ends within `wait_s`, else `running`: then poll with `result`.",
      inputSchema: { prompt: z.string().min(1), agent: z.string().optional(), session_id: z.string().optional(), wait_s: WAIT },
      outputSchema: TURN_OUTPUT,
    },
    async ({ prompt, agent, session_id, wait_s }, extra) => {
      const sid = session_id ?? ((await callMethod('session.create', agent === undefined ? {} : { agent }, ctx)) as { session_id: string }).session_id;
      return follow(ctx, sid, false, extra, wait_s, async (follower) => {
        const submitted = (await callMethod('prompt.submit', { session_id: sid, text: prompt, on_busy: 'queue', ...trace }, follower.ctx)) as { turn_id: string };
        return submitted.turn_id;
      });
    },
  );
  server.registerTool(
    'result',
    {
      description: 'The reply of a turn `run` started: at once when it has ended, else when it ends within `wait_s`, else `running` again.',
      inputSchema: { session_id: z.string(), turn_id: z.string(), wait_s: WAIT },
      outputSchema: TURN_OUTPUT,
    },
    ({ session_id, turn_id, wait_s }, extra) => follow(ctx, session_id, true, extra, wait_s, async () => turn_id),
  );
  server.registerTool(
    'answer',
    {
      description: 'Answers the question a turn waits on (`input_required`): text for a question, true/false (or "yes"/"no") for an approval. Then waits for the turn as `result` does.',
      inputSchema: { session_id: z.string(), turn_id: z.string(), request_id: z.string(), answer: z.union([z.string(), z.boolean()]), wait_s: WAIT },
      outputSchema: TURN_OUTPUT,
    },
    ({ session_id, turn_id, request_id, answer, wait_s }, extra) =>
      follow(ctx, session_id, true, extra, wait_s, async (follower) => {
        const question = follower.question(request_id);
        if (question === undefined) throw new RpcError(ErrorCodes.invalidParams, `no open question ${request_id} in session ${session_id}: it was answered, timed out, or its turn ended`);
        const approved = typeof answer === 'boolean' ? answer : approves(answer);
        const payload = question.method === 'approval.request' ? { approved } : answer;
        const outcome = await answerServerRequest(follower.ctx, request_id, answerFrom(question, 'resolved', payload));
        if (outcome.status !== 'ok') throw new RpcError(ErrorCodes.invalidParams, `the question ${request_id} is no longer open`);
        follower.answered(request_id);
        return turn_id;
      }),
  );
  server.registerTool(
    'sessions',
    {
      description: 'The sessions the caller may use, most recently active last.',
      outputSchema: { sessions: z.array(z.record(z.string(), z.unknown())) },
    },
    async () => {
      const { sessions } = (await callMethod('session.list', {}, ctx)) as { sessions: Record<string, unknown>[] };
      return { content: [{ type: 'text', text: sessions.map((s) => `${String(s['session_id'])} ${String(s['status'])}`).join('\n') }], structuredContent: { sessions } };
    },
  );
  server.registerTool(
    'cancel',
    {
      description: "Interrupts a session's running turn (and clears its queue).",
      inputSchema: { session_id: z.string() },
      outputSchema: { session_id: z.string(), interrupted: z.boolean() },
    },
    async ({ session_id }) => {
      const result = (await callMethod('session.interrupt', { session_id }, ctx)) as { applied?: unknown };
      const interrupted = result.applied === true;
      return { content: [{ type: 'text', text: interrupted ? `interrupted ${session_id}'s turn` : `${session_id} had no turn running` }], structuredContent: { session_id, interrupted } };
    },
  );
  return server;
}

/**
 * Attached to the session first (`replay`: with what the gateway holds of it, for a turn already
 * under way), `start` names the turn (submitting it, or answering its question), then its state
 * is awaited for `wait_s`, its reply sent as progress meanwhile.
 */
async function follow(ctx: ClientContext, sid: string, replay: boolean, extra: Extra, waitS: number | undefined, start: (follower: TurnFollower) => Promise<string>): Promise<CallToolResult> {
  const follower = await TurnFollower.open(ctx, sid, replay);
  try {
    const token = extra._meta?.progressToken;
    let turnId: string | null = null;
    if (token !== undefined) {
      let progress = 0;
      follower.streamText((streamed, text) => {
        // Before the submit answers, the turn's first words may come: they are taken as its.
        if (turnId !== null && streamed !== turnId) return;
        progress += text.length;
        void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message: text } }).catch(() => {});
      });
    }
    turnId = await start(follower);
    return toolResult(sid, turnId, await follower.state(turnId, (waitS ?? DEFAULT_WAIT_S) * 1000, extra.signal));
  } finally {
    follower.close();
  }
}

function toolResult(sid: string, turnId: string, state: TurnState): CallToolResult {
  const base = { status: state.status, session_id: sid, turn_id: turnId };
  switch (state.status) {
    case 'completed':
      return { content: [{ type: 'text', text: state.reply }], structuredContent: { ...base, ...(state.usage === undefined ? {} : { usage: state.usage as Record<string, unknown> }) } };
    case 'input_required': {
      const question = state.question;
      const text = String(question.params['question'] ?? question.params['action'] ?? question.method);
      return { content: [{ type: 'text', text: `the turn asks (${question.method === 'approval.request' ? 'approve or deny' : 'answer'} with the tool answer, request_id ${question.id}): ${text}` }], structuredContent: { ...base, request_id: question.id, question: { method: question.method, ...question.params } } };
    }
    case 'failed':
      return { content: [{ type: 'text', text: `the turn failed (${state.reason}): ${state.message}` }], structuredContent: { ...base, reason: state.reason, message: state.message }, isError: true };
    case 'canceled':
      return { content: [{ type: 'text', text: state.reply === '' ? 'the turn was interrupted' : state.reply }], structuredContent: base };
    default:
      return { content: [{ type: 'text', text: `the turn is ${state.status}: call result with session_id ${sid} and turn_id ${turnId} for its reply` }], structuredContent: base };
  }
}
