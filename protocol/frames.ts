// Parent → host frames (PROTOCOL.md §1.1). The one place where an untrusted line becomes a
// typed frame; everything past parseFrame trusts the types.
import { traceContextOf, type TraceContext } from './trace-context.js';
import type { ChatMessage } from './chat.js';
import { storedBlocks, type ContentBlock } from './content.js';
import { FieldError, Fields, isIdentifier, isRecord, type UnknownRecord } from './fields.js';
import { ErrorCodes } from './client-rpc.js';
import { DEBUG_TOPICS, type DebugTopic, type HostOutFrame } from './outbound.js';
import type { RequestId } from './rpc.js';

export type TurnStartFrame = {
  type: 'turn.start';
  sid: string;
  request_id: string;
  text: string;
  turn_id?: string;
  session_key?: string;
  history?: ChatMessage[];
  history_version?: number;
  cwd?: string;
  queued_prompt_generation?: number;
  model_override?: string;
  /** What to do when the session is busy (PROTOCOL.md §2.1); absent: reject, as the original host does. */
  on_busy?: OnBusy;
  client_message_id?: string;
  /** Who submitted it (PROTOCOL.md §5.6): stored with its turn, shown as the prompt's `by`. */
  by?: string;
  /** The client's W3C trace context (PROTOCOL.md §5.8): the turn's span is its child. */
  trace_context?: TraceContext;
  /** The prompt's blocks when it carries more than text (PROTOCOL.md §2.4), its files stored already; `text` is their text form. */
  content?: ContentBlock[];
};

export type OnBusy = 'queue' | 'reject' | 'interrupt' | 'steer';
export const ON_BUSY: readonly OnBusy[] = ['queue', 'reject', 'interrupt', 'steer'];

export type QueueOp = 'get' | 'edit' | 'delete' | 'steer' | 'resume';
export const QUEUE_OPS: readonly QueueOp[] = ['get', 'edit', 'delete', 'steer', 'resume'];

/** A look at, or a change of, a session's prompt queue; `resume` lets a new host run it. */
export type QueueFrame =
  | { type: 'queue'; sid: string; request_id: string; op: 'get' | 'resume' }
  | { type: 'queue'; sid: string; request_id: string; op: 'delete' | 'steer'; queue_id: string }
  | { type: 'queue'; sid: string; request_id: string; op: 'edit'; queue_id: string; text: string };

/** With `turn_id`, only that turn is interrupted (PROTOCOL.md §1.3): a stop meant for a turn that has ended never hits the next one. */
export type InterruptFrame = { type: 'interrupt'; sid: string; request_id: string; turn_id?: string; keep_queue?: boolean };

/** A client's answer to a server request, or one locked answer of a batch question. */
/** `by`: who answered, as the daemon vouches (PROTOCOL.md §5.6); stored as the request's answered_by. */
export type RespondParams =
  | { kind: 'lock'; requestId: string; questionId: string; answer: unknown; by?: string }
  | { kind: 'response'; id: RequestId | undefined; error?: unknown; result?: unknown; by?: string };

export type RespondFrame = { type: 'respond'; sid: string; request_id: string; params: RespondParams };

export type ControlFrame = {
  type: 'control';
  sid: string;
  request_id: string;
  route_name: string;
  params?: UnknownRecord;
  command?: string;
};

export type ReloadMcpFrame = { type: 'reload_mcp'; sid: string; request_id: string };

/**
 * Stores a new session's row at once (answered by `control.ack`, route `session.create`); an
 * existing session is left as it is. `agent`: its agent from the catalogue (AGENT.md §8), else the
 * default; `model`: its model (an `openai` agent's).
 */
export type SessionCreateFrame = { type: 'session.create'; sid: string; request_id: string; cwd?: string; agent?: string; model?: string };

/**
 * Deletes a session (PROTOCOL.md §2.3), answered by `control.ack` (route `session.delete`) once it
 * is committed; a running turn refuses it ("session busy") unless `interrupt`, which ends the turn
 * (and clears the queue) first. `by`: who deletes it, as the daemon vouches.
 */
export type SessionDeleteFrame = { type: 'session.delete'; sid: string; request_id: string; interrupt?: boolean; by?: string };

/**
 * The host's catalogue of agents (AGENT.md §8): `list` it, or `reload` it from the file; `env`: the
 * variables its agents need that the host was not started with. Answered by `agents.result` or `agents.error`.
 */
export type AgentsFrame = { type: 'agents'; request_id: string; op: 'list' } | { type: 'agents'; request_id: string; op: 'reload'; env: Record<string, string> };

export type ShutdownFrame = { type: 'shutdown'; request_id: string; wait?: number };

export type DebugFrame = { type: 'debug'; request_id: string; what: DebugTopic };

export type HostInFrame =
  | TurnStartFrame
  | InterruptFrame
  | RespondFrame
  | ControlFrame
  | ReloadMcpFrame
  | SessionCreateFrame
  | SessionDeleteFrame
  | AgentsFrame
  | QueueFrame
  | ShutdownFrame
  | DebugFrame;

export type ParseResult = { ok: true; frame: HostInFrame } | { ok: false; reply: HostOutFrame };

export const FRAME_TOO_LARGE: HostOutFrame = { type: 'error', request_id: null, message: 'frame too large' };

export function parseFrame(line: string): ParseResult {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    return fail({ type: 'error', request_id: null, message: `invalid json: ${(err as Error).message}` });
  }
  if (!isRecord(value)) return fail({ type: 'error', request_id: null, message: 'frame must be an object' });
  const type = value['type'];
  const parser = typeof type === 'string' && Object.hasOwn(PARSERS, type) ? PARSERS[type] : undefined;
  if (parser === undefined) {
    return fail({ type: 'error', request_id: echoedId(value['request_id']), message: `unknown frame type: ${String(type)}` });
  }
  try {
    return { ok: true, frame: parser(new Fields(value)) };
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    return fail(invalidFrameReply(type as HostInFrame['type'], value, err.message));
  }
}

function fail(reply: HostOutFrame): ParseResult {
  return { ok: false, reply };
}

/** An id is echoed only when it is one: a 100,000-character "id" is not sent back. */
function echoedId(value: unknown): string | null {
  if (typeof value === 'string') return isIdentifier(value) ? value : null;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/** The error frame of the frame's own type, so a waiter on that request is answered. */
function invalidFrameReply(type: HostInFrame['type'], raw: UnknownRecord, message: string): HostOutFrame {
  const request_id = echoedId(raw['request_id']);
  const sid = typeof raw['sid'] === 'string' && isIdentifier(raw['sid']) ? raw['sid'] : null;
  switch (type) {
    case 'turn.start':
      return { type: 'turn.error', sid, request_id, message, reason: 'invalid' };
    case 'respond':
      return { type: 'respond.error', sid, request_id, message };
    case 'control':
    case 'reload_mcp':
    case 'session.create':
    case 'session.delete':
      return { type: 'control.error', sid, request_id, message };
    case 'queue':
      return { type: 'queue.error', sid, request_id, message, code: ErrorCodes.invalidParams };
    case 'agents':
      return { type: 'agents.error', request_id, message: `agents: ${message}` };
    case 'interrupt':
    case 'shutdown':
    case 'debug':
      return { type: 'error', request_id, message: `${type}: ${message}` };
  }
}

const PARSERS: Record<string, (f: Fields) => HostInFrame> = {
  'turn.start': parseTurnStart,
  interrupt: parseInterrupt,
  respond: parseRespond,
  control: parseControl,
  queue: parseQueue,
  reload_mcp: (f) => ({ type: 'reload_mcp', sid: f.identifier('sid'), request_id: f.identifier('request_id') }),
  'session.create': (f) => {
    const cwd = f.optionalString('cwd');
    const agent = f.optionalIdentifier('agent');
    const model = f.optionalString('model');
    return { type: 'session.create', sid: f.identifier('sid'), request_id: f.identifier('request_id'), ...(cwd ? { cwd } : {}), ...(agent ? { agent } : {}), ...(model ? { model } : {}) };
  },
  agents: parseAgents,
  'session.delete': (f) => {
    const by = f.optionalIdentifier('by');
    return { type: 'session.delete', sid: f.identifier('sid'), request_id: f.identifier('request_id'), ...(f.optionalBoolean('interrupt') === true ? { interrupt: true } : {}), ...(by ? { by } : {}) };
  },
  shutdown: parseShutdown,
  debug: (f) => ({ type: 'debug', request_id: f.identifier('request_id'), what: f.oneOf('what', DEBUG_TOPICS) }),
};

function parseAgents(f: Fields): AgentsFrame {
  const request_id = f.identifier('request_id');
  if (f.oneOf('op', ['list', 'reload'] as const) === 'list') return { type: 'agents', request_id, op: 'list' };
  const given = f.optionalRecord('env') ?? {};
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || typeof value !== 'string') throw new FieldError('env must map variable names to strings');
    env[name] = value;
  }
  return { type: 'agents', request_id, op: 'reload', env };
}

function parseInterrupt(f: Fields): InterruptFrame {
  const frame: InterruptFrame = { type: 'interrupt', sid: f.identifier('sid'), request_id: f.identifier('request_id') };
  const turnId = f.optionalIdentifier('turn_id');
  if (turnId !== undefined) frame.turn_id = turnId;
  if (f.optionalBoolean('keep_queue') === true) frame.keep_queue = true;
  return frame;
}

function parseQueue(f: Fields): QueueFrame {
  const sid = f.identifier('sid');
  const request_id = f.identifier('request_id');
  const op = f.oneOf('op', QUEUE_OPS);
  if (op === 'get' || op === 'resume') return { type: 'queue', sid, request_id, op };
  const queue_id = f.identifier('queue_id');
  if (op !== 'edit') return { type: 'queue', sid, request_id, op, queue_id };
  const text = f.raw('text');
  if (typeof text !== 'string') throw new FieldError('text must be a string');
  return { type: 'queue', sid, request_id, op, queue_id, text };
}

function parseTurnStart(f: Fields): TurnStartFrame {
  const frame: TurnStartFrame = {
    type: 'turn.start',
    sid: f.identifier('sid'),
    request_id: f.identifier('request_id'),
    text: f.optionalString('text') ?? f.optionalString('prompt') ?? '',
  };
  const turnId = f.optionalIdentifier('turn_id');
  if (turnId !== undefined) frame.turn_id = turnId;
  const sessionKey = f.optionalString('session_key');
  if (sessionKey) frame.session_key = sessionKey;
  const history = f.optionalArray('history');
  if (history !== undefined) frame.history = history.map(parseHistoryEntry);
  const historyVersion = f.optionalInteger('history_version', 0);
  if (historyVersion !== undefined) frame.history_version = historyVersion;
  const cwd = f.optionalString('cwd');
  if (cwd) frame.cwd = cwd;
  const generation = f.optionalInteger('queued_prompt_generation', 0);
  if (generation !== undefined) frame.queued_prompt_generation = generation;
  const model = f.optionalString('model_override');
  if (model) frame.model_override = model;
  const onBusy = f.optionalOneOf('on_busy', ON_BUSY);
  if (onBusy !== undefined) frame.on_busy = onBusy;
  const clientMessageId = f.optionalIdentifier('client_message_id');
  if (clientMessageId !== undefined) frame.client_message_id = clientMessageId;
  const by = f.optionalIdentifier('by');
  if (by !== undefined) frame.by = by;
  const traceContext = traceContextOf(f.raw('trace_context'));
  if (traceContext !== null) frame.trace_context = traceContext;
  const content = f.raw('content');
  if (content !== undefined) frame.content = contentOf(content);
  return frame;
}

function contentOf(value: unknown): ContentBlock[] {
  try {
    return storedBlocks(value);
  } catch (err) {
    throw new FieldError((err as Error).message);
  }
}

function parseHistoryEntry(entry: unknown, index: number): ChatMessage {
  if (!isRecord(entry)) throw new FieldError(`history[${index}] must be an object`);
  const f = new Fields(entry, `history[${index}].`);
  const content = f.raw('content');
  if (typeof content !== 'string') throw new FieldError(`history[${index}].content must be a string`);
  return { role: f.requiredString('role'), content };
}

function parseRespond(f: Fields): RespondFrame {
  const sid = f.identifier('sid');
  const request_id = f.identifier('request_id');
  const params = f.raw('params');
  if (!isRecord(params)) throw new FieldError('response params must be an object');
  return { type: 'respond', sid, request_id, params: parseRespondParams(params) };
}

function parseRespondParams(params: UnknownRecord): RespondParams {
  const by = new Fields(params).optionalIdentifier('by');
  const answeredBy = by === undefined ? {} : { by };
  if (params['lock'] !== undefined) {
    const lock = new Fields(params).requiredRecord('lock');
    const l = new Fields(lock, 'lock.');
    return {
      kind: 'lock',
      requestId: l.identifier('request_id'),
      questionId: l.identifier('question_id'),
      answer: lock['answer'] ?? null,
      ...answeredBy,
    };
  }
  const response = isRecord(params['frame']) ? params['frame'] : params;
  const id = response['id'];
  const parsed: RespondParams = {
    kind: 'response',
    id: typeof id === 'string' || typeof id === 'number' || id === null ? id : undefined,
    ...answeredBy,
  };
  if (response['error'] !== undefined) parsed.error = response['error'];
  else parsed.result = response['result'];
  return parsed;
}

function parseControl(f: Fields): ControlFrame {
  const frame: ControlFrame = {
    type: 'control',
    sid: f.identifier('sid'),
    request_id: f.identifier('request_id'),
    route_name: f.requiredString('route_name'),
  };
  const params = f.optionalRecord('params');
  if (params !== undefined) frame.params = params;
  const command = f.optionalString('command');
  if (command !== undefined) frame.command = command;
  return frame;
}

function parseShutdown(f: Fields): ShutdownFrame {
  const frame: ShutdownFrame = { type: 'shutdown', request_id: f.identifier('request_id') };
  const wait = f.optionalNumber('wait', 0);
  if (wait !== undefined) frame.wait = wait;
  return frame;
}
