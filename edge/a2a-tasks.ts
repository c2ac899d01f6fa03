// A2A's tasks as turnhost's turns (PROTOCOL.md §7.3), for one caller at one agent's door: the
// SDK's request handler interface, over the client methods as the caller's person. A `contextId`
// is a session (a new one of the door's agent when absent), a `taskId` a turn; a task's state is
// its turn's, read from the store and followed through the gateway (turn-follower.ts), so a task
// reads the same from any node and after any restart. The reply is the task's artifact.
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type AgentCard, type Message, type Part, type StreamResponse, type Task, type TaskStatus } from '@a2a-js/sdk';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import {
  ExtendedAgentCardNotConfiguredError,
  JsonRpcTransportError,
  PushNotificationNotSupportedError,
  TaskNotFoundError,
  A2A_ERROR_CODE,
} from '@a2a-js/sdk/errors';
import { callMethod } from '../actors/daemon/client-methods.js';
import type { ClientContext } from '../actors/daemon/client-context.js';
import { answerServerRequest } from '../actors/daemon/methods/answers.js';
import { ErrorCodes, RpcError } from '../protocol/client-rpc.js';
import { isRecord } from '../protocol/fields.js';
import { answerFrom, approves } from './question-answer.js';
import type { traced } from './trace-headers.js';
import { replyOf, settled, storedState, TurnFollower, type HistoryLine, type TurnState } from './turn-follower.js';

type SendParams = Parameters<A2ARequestHandler['sendMessage']>[0];

/** A blocking SendMessage waits this long at most for the task to end or ask; then it answers WORKING. */
const BLOCKING_MAX_MS = 10 * 60_000;
/** A stream stays open this long at most; the caller resubscribes for the rest. */
const STREAM_MAX_MS = 60 * 60_000;
/** After a cancel, how long the answer waits for the turn to end interrupted. */
const CANCEL_WAIT_MS = 10_000;
/** ListTasks without a contextId looks at this many of the caller's sessions, the most recent. */
const LISTED_SESSIONS_MAX = 100;
/** The reply's artifact: one per task, appended to as the reply streams. */
const REPLY_ARTIFACT_ID = 'reply';

const STATES: Record<TurnState['status'], TaskState> = {
  queued: TaskState.TASK_STATE_SUBMITTED,
  running: TaskState.TASK_STATE_WORKING,
  input_required: TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  canceled: TaskState.TASK_STATE_CANCELED,
  failed: TaskState.TASK_STATE_FAILED,
};

export class TurnTasks implements A2ARequestHandler {
  constructor(
    private readonly ctx: ClientContext,
    private readonly agent: string,
    private readonly card: AgentCard,
    /** The caller's trace context (its request's traceparent): the turn's span is a child of it (PROTOCOL.md §5.8). */
    private readonly trace: ReturnType<typeof traced>,
  ) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError();
  }

  async sendMessage(params: SendParams): Promise<Message | Task> {
    const started = await this.start(params);
    if ('rejected' in started) return started.rejected;
    const { follower, sid, turnId } = started;
    try {
      const waitMs = params.configuration?.returnImmediately === true ? 0 : BLOCKING_MAX_MS;
      return taskOf(sid, turnId, await follower.state(turnId, waitMs));
    } finally {
      follower.close();
    }
  }

  async *sendMessageStream(params: SendParams): AsyncGenerator<StreamResponse, void, undefined> {
    const started = await this.start(params);
    if ('rejected' in started) {
      yield { payload: { $case: 'task', value: started.rejected } };
      return;
    }
    try {
      yield* streamTurn(started.follower, started.sid, started.turnId);
    } finally {
      started.follower.close();
    }
  }

  async getTask(params: { id: string }): Promise<Task> {
    const { follower, sid } = await this.followTask(params.id);
    try {
      return taskOf(sid, params.id, await follower.state(params.id, 0));
    } finally {
      follower.close();
    }
  }

  async *resubscribe(params: { id: string }): AsyncGenerator<StreamResponse, void, undefined> {
    const { follower, sid } = await this.followTask(params.id);
    try {
      yield* streamTurn(follower, sid, params.id);
    } finally {
      follower.close();
    }
  }

  async cancelTask(params: { id: string }): Promise<Task> {
    const { follower, sid } = await this.followTask(params.id);
    try {
      await callMethod('session.interrupt', { session_id: sid, turn_id: params.id, keep_queue: true }, follower.ctx);
      return taskOf(sid, params.id, await follower.state(params.id, CANCEL_WAIT_MS));
    } finally {
      follower.close();
    }
  }

  async listTasks(params: { contextId: string; pageSize?: number | undefined }): Promise<{ tasks: Task[]; nextPageToken: string; pageSize: number; totalSize: number }> {
    const sids = params.contextId !== '' ? [params.contextId] : await this.callersSessions();
    const tasks: Task[] = [];
    for (const sid of sids) tasks.push(...(await this.sessionTasks(sid)));
    const pageSize = params.pageSize && params.pageSize > 0 ? params.pageSize : tasks.length;
    return { tasks: tasks.slice(-pageSize), nextPageToken: '', pageSize, totalSize: tasks.length };
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async getTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  async deleteTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError();
  }

  /**
   * The message's turn: a new prompt of its context (a new session when it names none), or, with
   * a `taskId`, the answer to the question that task waits on. A budget refused is a task
   * REJECTED (no turn was made).
   */
  private async start(params: SendParams): Promise<{ follower: TurnFollower; sid: string; turnId: string } | { rejected: Task }> {
    const message = params.message;
    if (message === undefined) throw invalidParams('SendMessage needs a message');
    const sid = message.contextId !== '' ? message.contextId : await this.newSession();
    // A new prompt needs nothing of what came before; an answer needs the question, which a resume always re-sends.
    const follower = await this.follow(sid, false);
    try {
      if (message.taskId !== '') return { follower, sid, turnId: await this.answer(follower, message) };
      const submitted = (await callMethod('prompt.submit', { session_id: sid, ...promptOf(message), on_busy: 'queue', ...this.trace }, follower.ctx)) as { turn_id: string };
      return { follower, sid, turnId: submitted.turn_id };
    } catch (err) {
      follower.close();
      if (err instanceof RpcError && (err.code === ErrorCodes.budgetExceeded || err.code === ErrorCodes.forbidden)) {
        return { rejected: { id: randomUUID(), contextId: sid, status: status(TaskState.TASK_STATE_REJECTED, agentMessage(sid, '', err.message)), artifacts: [], history: [], metadata: undefined } };
      }
      throw asA2aError(err);
    }
  }

  /** The question the task waits on, answered by the message: its text, yes/no (or a data part `{approved}`) for an approval. */
  private async answer(follower: TurnFollower, message: Message): Promise<string> {
    const question = follower.waitingQuestion();
    if (question === undefined) throw invalidParams(`task ${message.taskId} waits on no question: send a new message without taskId for a new task`);
    const data = message.parts.map((p) => (p.content?.$case === 'data' ? p.content.value : undefined)).find((v) => v !== undefined);
    const text = textOf(message.parts);
    const payload = question.method === 'approval.request' ? (isRecord(data) ? data : { approved: approves(text) }) : text;
    const outcome = await answerServerRequest(follower.ctx, question.id, answerFrom(question, 'resolved', payload));
    if (outcome.status !== 'ok') throw invalidParams(`the question of task ${message.taskId} is no longer open`);
    follower.answered(question.id);
    return message.taskId;
  }

  private async newSession(): Promise<string> {
    try {
      return ((await callMethod('session.create', { agent: this.agent }, this.ctx)) as { session_id: string }).session_id;
    } catch (err) {
      throw asA2aError(err);
    }
  }

  /** The session resumed as the caller; someone else's, or an unknown one, is not found. */
  private async follow(sid: string, replay: boolean): Promise<TurnFollower> {
    try {
      return await TurnFollower.open(this.ctx, sid, replay);
    } catch (err) {
      if (err instanceof RpcError && (err.code === ErrorCodes.sessionNotFound || err.code === ErrorCodes.forbidden)) throw new TaskNotFoundError(`no context ${sid}`);
      throw asA2aError(err);
    }
  }

  /** The task's session, resumed: a turn the caller may not read is not found, as one that does not exist. */
  private async followTask(taskId: string): Promise<{ follower: TurnFollower; sid: string }> {
    const turn = await (await this.ctx.reader())?.turn(taskId);
    if (turn === undefined) throw new TaskNotFoundError(`no task ${taskId}`);
    try {
      return { follower: await TurnFollower.open(this.ctx, turn.sid, true), sid: turn.sid };
    } catch (err) {
      if (err instanceof RpcError) throw new TaskNotFoundError(`no task ${taskId}`);
      throw err;
    }
  }

  private async callersSessions(): Promise<string[]> {
    const { sessions } = (await callMethod('session.list', {}, this.ctx)) as { sessions: { session_id: string }[] };
    return sessions.slice(-LISTED_SESSIONS_MAX).map((s) => s.session_id);
  }

  /** A session's tasks from the store: each turn's state, a finished one's reply from its history. */
  private async sessionTasks(sid: string): Promise<Task[]> {
    let history: HistoryLine[];
    try {
      history = ((await callMethod('session.history', { session_id: sid }, this.ctx)) as { messages: HistoryLine[] }).messages;
    } catch (err) {
      if (err instanceof RpcError) throw new TaskNotFoundError(`no context ${sid}`);
      throw err;
    }
    const turns = (await (await this.ctx.reader())?.turns(sid)) ?? [];
    return turns.map((turn) => taskOf(sid, turn.turn_id, storedState(turn, replyOf(history, turn.turn_id))));
  }
}

/**
 * A turn as a stream: the Task as it is (its reply so far), then each piece of the reply as an
 * artifact append, then its last status (ended, or waiting on a question). The reply so far is
 * read in the same tick as the stream of its pieces begins: nothing is sent twice or missed.
 */
async function* streamTurn(follower: TurnFollower, sid: string, turnId: string): AsyncGenerator<StreamResponse, void, undefined> {
  const queue: StreamResponse[] = [];
  let wake: (() => void) | null = null;
  let sent = '';
  follower.streamText((streamed, text) => {
    if (streamed !== turnId) return;
    queue.push(artifactUpdate(sid, turnId, text, true));
    sent += text;
    wake?.();
  });
  sent = follower.replySoFar(turnId);
  const first = await follower.state(turnId, 0);
  if (settled(first)) {
    yield { payload: { $case: 'task', value: taskOf(sid, turnId, { ...first, reply: first.reply || sent }) } };
    return;
  }
  yield { payload: { $case: 'task', value: taskOf(sid, turnId, { ...first, reply: sent }) } };
  const ended: { state: TurnState | null } = { state: null };
  void follower.state(turnId, STREAM_MAX_MS).then((state) => {
    ended.state = state;
    wake?.();
  });
  for (;;) {
    while (queue.length > 0) yield queue.shift()!;
    if (ended.state !== null) {
      const end = ended.state;
      // The stored reply is the reply: what the stream did not carry (a piece it could not place) goes last, whole.
      if (end.reply !== '' && end.reply !== sent) yield end.reply.startsWith(sent) ? artifactUpdate(sid, turnId, end.reply.slice(sent.length), true) : artifactUpdate(sid, turnId, end.reply, false);
      yield { payload: { $case: 'statusUpdate', value: { taskId: turnId, contextId: sid, status: statusOf(sid, turnId, end), metadata: undefined } } };
      return;
    }
    await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
  }
}

/** A piece of the reply (`append`), or the whole reply in place of what was sent. */
function artifactUpdate(sid: string, turnId: string, text: string, append: boolean): StreamResponse {
  return { payload: { $case: 'artifactUpdate', value: { taskId: turnId, contextId: sid, artifact: replyArtifact(text), append, lastChunk: false, metadata: undefined } } };
}


function taskOf(sid: string, turnId: string, state: TurnState): Task {
  return { id: turnId, contextId: sid, status: statusOf(sid, turnId, state), artifacts: state.reply === '' ? [] : [replyArtifact(state.reply)], history: [], metadata: undefined };
}

function statusOf(sid: string, turnId: string, state: TurnState): TaskStatus {
  const said =
    state.status === 'input_required'
      ? agentMessage(sid, turnId, String(state.question.params['question'] ?? state.question.params['action'] ?? state.question.method), { request_id: state.question.id, method: state.question.method })
      : state.status === 'failed'
        ? agentMessage(sid, turnId, `${state.reason}: ${state.message}`, { reason: state.reason })
        : undefined;
  return status(STATES[state.status], said);
}

function status(state: TaskState, message: Message | undefined): TaskStatus {
  return { state, message, timestamp: new Date().toISOString() };
}

function replyArtifact(text: string) {
  return { artifactId: REPLY_ARTIFACT_ID, name: 'reply', description: '', parts: [textPart(text)], metadata: undefined, extensions: [] };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' };
}

function agentMessage(sid: string, turnId: string, text: string, metadata?: Record<string, string>): Message {
  return { messageId: randomUUID(), contextId: sid, taskId: turnId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata, extensions: [], referenceTaskIds: [] };
}

function textOf(parts: readonly Part[]): string {
  return parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
}

/**
 * A message's parts as a prompt (PROTOCOL.md §2.4): text alone as `text`; files by bytes as
 * blocks (an image as an image, any other as a file), by URL as links (never fetched), data as
 * JSON text.
 */
function promptOf(message: Message): { text: string } | { content: Record<string, unknown>[] } {
  if (message.parts.every((p) => p.content?.$case === 'text')) return { text: textOf(message.parts) };
  return {
    content: message.parts.map((part) => {
      const content = part.content;
      switch (content?.$case) {
        case 'text':
          return { type: 'text', text: content.value };
        case 'data':
          return { type: 'text', text: JSON.stringify(content.value) };
        case 'url':
          return { type: 'resource_link', name: part.filename || 'link', uri: content.value, ...(part.mediaType ? { mimeType: part.mediaType } : {}) };
        case 'raw': {
          const data = Buffer.from(content.value).toString('base64');
          if (part.mediaType.startsWith('image/')) return { type: 'image', mimeType: part.mediaType, data, ...(part.filename ? { name: part.filename } : {}) };
          return { type: 'resource_link', name: part.filename || 'file', mimeType: part.mediaType || 'application/octet-stream', data };
        }
        default:
          throw invalidParams('a part holds nothing');
      }
    }),
  };
}

function invalidParams(message: string): JsonRpcTransportError {
  return new JsonRpcTransportError({ jsonrpc: '2.0', id: null, error: { code: A2A_ERROR_CODE.INVALID_PARAMS, message } });
}

/** turnhost's refusals as A2A's: bad input as invalid params (naming the block), the rest as they are. */
function asA2aError(err: unknown): unknown {
  if (err instanceof RpcError && (err.code === ErrorCodes.invalidParams || err.code === ErrorCodes.invalidRequest)) return invalidParams(err.message);
  if (err instanceof RpcError && err.code === ErrorCodes.sessionNotFound) return new TaskNotFoundError(err.message);
  return err;
}
