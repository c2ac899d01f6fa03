// One open server request (clarify, batch clarify, approval): a child of its session actor.
// Exactly once: the first resolution (answer, last lock, timeout, cancel) wins and every later
// answer is told "expired". The actor stays alive, closed, until its session sends `close`,
// so an answer the session forwarded before it learned of the resolution is still answered.
import type { RequestSpan } from './turn-tracing.js';
import { encode } from '../../persistence/codec.js';
import type { RequestStatus } from '../../persistence/store-writer.js';
import { isRecord } from '../../protocol/fields.js';
import { rpcEvent, rpcError, rpcResult, type CancelReason, type ServerRequestMethod } from '../../protocol/rpc.js';
import type { ServerRequestMsg, SessionMsg } from './messages.js';
import { spawnActor, stopActor, tell, type ActorContext, type Ref } from '../runtime.js';
import type { HostServices } from './services.js';

export const BAD_QUESTION_ID = 4002;

export interface ServerRequestSpec {
  id: string;
  sid: string;
  method: ServerRequestMethod;
  params: Record<string, unknown>;
  timeoutMs: number;
  asker: Ref<unknown>;
  session: Ref<SessionMsg>;
  /** Its span (PROTOCOL.md §5.8), ended with its outcome; null when tracing is off. */
  span: RequestSpan | null;
}

interface RequestState {
  spec: ServerRequestSpec;
  /** Question ids of a batch clarify; null for a single question. */
  questions: string[] | null;
  locked: Map<string, unknown>;
  open: boolean;
  cancelTimer: () => void;
}

interface Resolution {
  status: Exclude<RequestStatus, 'open'>;
  result: unknown;
  reason: string | null;
  cancel?: CancelReason;
  /** Who answered or declined it; none for a timeout or a cancel. */
  by?: string | null;
}

export function spawnServerRequest(spec: ServerRequestSpec, services: HostServices): Ref<ServerRequestMsg> {
  const log = services.log.child({ request: spec.id, sid: spec.sid });
  return spawnActor<RequestState, ServerRequestMsg>(
    spec.session,
    spec.id,
    (state, msg, ctx) => handle(state, msg, ctx, services),
    {
      log,
      onCrash: 'escalate',
      init: (ctx) => ({
        spec,
        questions: batchQuestionIds(spec.params),
        locked: new Map(),
        open: true,
        cancelTimer: services.clock.after(spec.timeoutMs, () => tell(ctx.self, { kind: 'timeout' })),
      }),
    },
  );
}

function batchQuestionIds(params: Record<string, unknown>): string[] | null {
  const questions = params['questions'];
  if (!Array.isArray(questions)) return null;
  return questions.map((q, i) => (isRecord(q) && typeof q['id'] === 'string' ? q['id'] : `q${i}`));
}

function handle(state: RequestState, msg: ServerRequestMsg, ctx: ActorContext<ServerRequestMsg>, services: HostServices): RequestState {
  const { writer } = services;
  const { spec } = state;
  const ack = (respondRequestId: string, result: unknown) =>
    writer.write({ type: 'respond.ack', sid: spec.sid, request_id: respondRequestId, response: rpcResult(respondRequestId, result) });
  switch (msg.kind) {
    case 'answer':
      if (!state.open) {
        ack(msg.respondRequestId, { status: 'expired' });
        return state;
      }
      resolve(state, answerResolution(state, msg), services);
      ack(msg.respondRequestId, { status: 'ok' });
      return state;
    case 'lock':
      lockAnswer(state, msg, services);
      return state;
    case 'timeout':
      if (state.open) resolve(state, timeoutResolution(state), services);
      return state;
    case 'cancel':
      if (state.open) {
        resolve(state, { status: 'cancelled', result: null, reason: msg.reason, cancel: msg.reason }, services, msg.recorded === true);
      }
      return state;
    case 'close':
      state.cancelTimer();
      stopActor(ctx.self);
      return state;
  }
}

function answerResolution(state: RequestState, msg: Extract<ServerRequestMsg, { kind: 'answer' }>): Resolution {
  if (msg.error !== undefined) return { status: 'cancelled', result: null, reason: 'declined', by: msg.by };
  const result: Record<string, unknown> = isRecord(msg.result) ? { ...msg.result } : {};
  if (state.questions !== null && state.locked.size > 0) {
    // Answers locked one by one stay under the final response's own answers.
    const finalAnswers = isRecord(result['answers']) ? result['answers'] : {};
    result['answers'] = { ...Object.fromEntries(state.locked), ...finalAnswers };
  }
  return { status: 'answered', result, reason: null, by: msg.by };
}

function timeoutResolution(state: RequestState): Resolution {
  const result = state.questions === null ? null : { answers: Object.fromEntries(state.locked), timed_out: true };
  return { status: 'expired', result, reason: 'timeout', cancel: 'timeout' };
}

function lockAnswer(state: RequestState, msg: Extract<ServerRequestMsg, { kind: 'lock' }>, services: HostServices): void {
  const { spec } = state;
  const reply = (response: ReturnType<typeof rpcResult>) =>
    services.writer.write({ type: 'respond.ack', sid: spec.sid, request_id: msg.respondRequestId, response });
  if (!state.open) return reply(rpcResult(msg.respondRequestId, { status: 'expired' }));
  if (state.questions === null) {
    return reply(rpcError(msg.respondRequestId, BAD_QUESTION_ID, `request ${spec.id} is not a batch question`));
  }
  if (!state.questions.includes(msg.questionId)) {
    return reply(rpcError(msg.respondRequestId, BAD_QUESTION_ID, `unknown question id: ${msg.questionId}`));
  }
  state.locked.set(msg.questionId, msg.answer);
  const remaining = state.questions.filter((q) => !state.locked.has(q));
  if (remaining.length === 0) {
    resolve(state, { status: 'answered', result: { answers: Object.fromEntries(state.locked) }, reason: null, by: msg.by }, services);
  }
  reply(rpcResult(msg.respondRequestId, { status: 'ok', remaining }));
}

function resolve(state: RequestState, resolution: Resolution, services: HostServices, recorded = false): void {
  const { spec } = state;
  state.open = false;
  state.cancelTimer();
  tell(spec.asker, resolution.result);
  tell(spec.session, { kind: 'request-closed', id: spec.id });
  spec.span?.end(resolution.reason ?? resolution.status, resolution.by ?? null);
  if (recorded) return;
  if (resolution.cancel !== undefined) {
    services.writer.write({
      type: 'rpc',
      sid: spec.sid,
      message: rpcEvent(spec.sid, 'request.cancel', { id: spec.id, method: spec.method, reason: resolution.cancel }),
    });
  }
  const answersText = resolution.result === null ? null : encode(resolution.result);
  services.store
    .commit((w) => w.closeRequest(spec.id, resolution.status, answersText, resolution.reason, resolution.by ?? null))
    .catch((err: unknown) => services.log.error({ err, request: spec.id }, 'could not store the request outcome'));
}
