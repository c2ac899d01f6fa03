// The control routes' meanings (PROTOCOL.md §1.3): each change is committed before it is acked.
import { randomBytes } from 'node:crypto';
import { keepRecent } from '../../agents/agent.js';
import { AgentMissing } from '../../agents/catalogue.js';
import { storageProblem, type Work } from '../../persistence/store.js';
import type { ChatMessage } from '../../protocol/chat.js';
import type { ControlFrame, ReloadMcpFrame, SessionCreateFrame } from '../../protocol/frames.js';
import { rpcEvent, rpcResult } from '../../protocol/rpc.js';
import { branchId } from '../../persistence/session-line.js';
import type { ControlRequest, RewindPoint } from './routes.js';
import { historyMeta, rowSaved, sessionRow, setOverrides, type SessionState } from './session-state.js';
import type { SessionEnv } from './session-turn.js';
import { stopPoint } from '../../persistence/stop-points.js';

/** Inside a rewind's transaction, its rows moved: where a test kills the host to show the rewind is all or nothing. */
const STOP_MID_REWIND = stopPoint('rewind-rows-moved');

interface HistoryChange {
  history: ChatMessage[];
  /** Stored messages from this position on are replaced. */
  keepStored: number;
  rotateKey: boolean;
  /** The running turn's messages (from `fromSeq` on) keep their turn id when rewritten. */
  turnTail?: { fromSeq: number; turnId: string };
}

class ControlFailure extends Error {}

export async function runControl(s: SessionState, frame: ControlFrame, request: ControlRequest, env: SessionEnv): Promise<void> {
  const { writer } = env.services;
  if (request.route === 'reload.mcp') return reloadTools(s, frame, env);
  try {
    // A route the session's agent cannot serve (a guest keeps its own model and context) is refused before anything changes.
    const refusal = (await env.services.agents.agent(s.agentName)).refusesRoute?.(request.route) ?? null;
    if (refusal !== null) throw new ControlFailure(refusal);
    const result = await applyControl(s, request, env);
    writer.write({ type: 'control.ack', sid: s.sid, request_id: frame.request_id, route_name: frame.route_name, result, ...historyMeta(s) });
  } catch (err) {
    if (!(err instanceof ControlFailure) && !(err instanceof AgentMissing)) env.services.log.error({ err, sid: s.sid, route: frame.route_name }, 'control route failed');
    writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: (err as Error).message });
  }
}

export async function reloadTools(s: SessionState, frame: ControlFrame | ReloadMcpFrame, env: SessionEnv): Promise<void> {
  const { writer, agents } = env.services;
  try {
    const agent = await agents.agent(s.agentName);
    const result = (await agent.reloadTools?.()) ?? { status: 'ok' };
    writer.write({ type: 'reload_mcp.ack', sid: s.sid, request_id: frame.request_id, response: rpcResult(frame.request_id, result) });
  } catch (err) {
    writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: `reload failed: ${(err as Error).message}` });
  }
}

async function applyControl(s: SessionState, request: Exclude<ControlRequest, { route: 'reload.mcp' }>, env: SessionEnv): Promise<unknown> {
  switch (request.route) {
    case 'session.save':
      return { saved: await saveRunningTail(s, env) };
    case 'session.compress':
    case 'slash.compress': {
      const agent = await env.services.agents.agent(s.agentName);
      const history = await env.services.store.messages(s.sid, 0, s.messageCount);
      let summary: ChatMessage[];
      try {
        summary = agent.compress ? await agent.compress(history, request.focusTopic, { sid: s.sid, overrides: s.overrides }) : keepRecent(history, request.focusTopic);
      } catch (err) {
        throw new ControlFailure(`compression failed: ${(err as Error).message}`);
      }
      const replaced = history.length;
      await changeHistory(s, { history: summary, keepStored: 0, rotateKey: true }, env);
      return { output: `compressed ${replaced} messages into ${summary.length}`, replaced };
    }
    case 'session.reset':
      await changeHistory(s, { history: [], keepStored: 0, rotateKey: true }, env);
      return { output: 'session reset' };
    case 'session.history.reload': {
      const stored = await env.services.store.messages(s.sid);
      await changeHistory(s, { history: stored, keepStored: Infinity, rotateKey: false }, env);
      return { output: `reloaded ${s.messageCount} messages` };
    }
    case 'prompt.submit.truncate': {
      // Hermes dropped the stored tail; here it is superseded and kept (PROTOCOL.md §2.2): the agent sees the same.
      const removed = Math.max(0, s.messageCount - request.keep);
      await rewindTo(s, Math.min(request.keep, s.messageCount), null, env);
      return { output: `kept ${s.messageCount} messages`, removed };
    }
    case 'slash.model':
      await changeOverrides(s, { ...s.overrides, model: request.model }, env);
      return { output: `model set to ${request.model}` };
    case 'slash.personality':
      await changeOverrides(s, { ...s.overrides, personality: request.personality }, env);
      return { output: `personality set to ${request.personality}` };
    case 'slash.prompt':
      await changeOverrides(s, { ...s.overrides, systemPrompt: request.prompt }, env);
      return { output: 'system prompt set' };
    case 'slash.retry': {
      const history = await env.services.store.messages(s.sid, 0, s.messageCount);
      const lastUser = history.findLastIndex((m) => m.role === 'user');
      if (lastUser === -1) throw new ControlFailure('nothing to retry: the session has no user message');
      const text = history[lastUser]!.content;
      await rewindTo(s, lastUser, null, env);
      return { output: text };
    }
    case 'session.rewind':
      return rewind(s, request.point, request.by, env);
  }
}

/**
 * session.rewind (PROTOCOL.md §2.2): the line is cut after a turn or before one; what it leaves is
 * superseded, never deleted. Before a turn, the answer holds its prompt, with its blocks when it had
 * files (a retry submits it again next).
 */
async function rewind(s: SessionState, point: RewindPoint, by: string | null, env: SessionEnv): Promise<Record<string, unknown>> {
  const { store } = env.services;
  const turnId = 'to' in point ? point.to : point.before;
  let keep = 0;
  let prompt: ChatMessage | undefined;
  if (!('to' in point && point.to === null)) {
    const span = await store.turnSpan(s.sid, turnId);
    if (span === null) throw new ControlFailure(turnId === null ? 'nothing to retry: the session has no turn that ended' : `unknown turn: ${turnId} is not in the session's history`);
    keep = 'to' in point ? span.upto : span.start;
    if ('before' in point) prompt = (await store.messages(s.sid, span.start, span.start + 1))[0];
  }
  const said = prompt === undefined ? {} : { prompt: prompt.content, ...(prompt.parts === undefined ? {} : { content: prompt.parts }) };
  return { ...(await rewindTo(s, keep, by, env)), ...said };
}

/**
 * The session keeps its first `keep` messages; the rest move to a branch of it, their turns marked
 * superseded (by `by`), and its clients hear `session.rewound`. A guest's memory holds what was left:
 * its next turn starts a new ACP session (AGENT.md §6).
 */
async function rewindTo(s: SessionState, keep: number, by: string | null, env: SessionEnv): Promise<{ to_turn_id: string | null; superseded: string[] }> {
  const { store, writer, bootId } = env.services;
  const toTurnId = async () => (keep === 0 ? null : ((await store.turnSpan(s.sid, null))?.turn_id ?? null));
  if (keep >= s.messageCount) return { to_turn_id: await toTurnId(), superseded: [] };
  const superseded = await store.ownTurnsFrom(s.sid, keep);
  const next: SessionState = { ...s, messageCount: keep, historyVersion: s.historyVersion + 1 };
  await store.commit((w) => {
    w.rewind(s.sid, keep, branchId(s.sid, next.historyVersion), { by });
    STOP_MID_REWIND?.();
    w.saveSession(sessionRow(next, bootId));
    if (s.agentSessionId !== null) w.setAgentSession(s.sid, null);
  });
  s.messageCount = keep;
  s.historyVersion = next.historyVersion;
  s.agentSessionId = null;
  rowSaved(s);
  const rewound = { to_turn_id: await toTurnId(), superseded };
  writer.write({ type: 'rpc', sid: s.sid, message: rpcEvent(s.sid, 'session.rewound', rewound) });
  return rewound;
}

/**
 * A session created by a client exists from then on: listed, resumable, there after a restart. Its
 * row is written now (an existing session is left as it is); the ack leaves after the commit.
 */
export async function storeNewSession(s: SessionState, frame: SessionCreateFrame, env: SessionEnv): Promise<void> {
  const { writer, store, bootId } = env.services;
  const created = s.row === 'none';
  if (created) {
    if (frame.cwd) s.cwd = frame.cwd;
    if (frame.agent !== undefined && !env.services.agents.has(frame.agent)) {
      writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: new AgentMissing(frame.agent, null).message });
      return;
    }
    s.agentName = frame.agent ?? env.services.agents.defaultName;
    if (frame.model !== undefined) setOverrides(s, { ...s.overrides, model: frame.model });
    const row = sessionRow(s, bootId);
    try {
      await store.commit((w) => w.saveSession(row));
    } catch (err) {
      writer.write({ type: 'control.error', sid: s.sid, request_id: frame.request_id, message: `could not persist the session: ${storageProblem(err as Error)}` });
      return;
    }
    rowSaved(s);
  }
  writer.write({ type: 'control.ack', sid: s.sid, request_id: frame.request_id, route_name: 'session.create', result: { created }, ...historyMeta(s) });
}

/** session.save: commits what the running turn's agent has appended so far. */
async function saveRunningTail(s: SessionState, env: SessionEnv): Promise<number> {
  if (s.activity.phase !== 'running' || s.activity.turn.pending.length === 0) return 0;
  const turn = s.activity.turn;
  const messages = turn.pending.slice();
  const version = s.historyVersion + 1;
  await env.services.store.commit((w) => {
    w.appendMessages(s.sid, s.messageCount, messages, turn.turnId);
    w.touchSession(s.sid, version);
    if (turn.report.usage !== undefined) w.noteUsage(turn.turnId, turn.report);
  });
  turn.pending.splice(0, messages.length);
  s.messageCount += messages.length;
  s.historyVersion = version;
  return messages.length;
}

async function changeHistory(s: SessionState, change: HistoryChange, env: SessionEnv): Promise<void> {
  const sessionKey = change.rotateKey ? `sk-${randomBytes(6).toString('hex')}` : s.sessionKey;
  const keep = Math.min(change.keepStored, change.history.length);
  const rewritten = change.history.slice(keep);
  const next: SessionState = { ...s, sessionKey, messageCount: change.history.length, historyVersion: s.historyVersion + 1 };
  const row = sessionRow(next, env.services.bootId);
  const tail = change.turnTail;
  const untilTail = tail === undefined ? rewritten.length : Math.max(0, tail.fromSeq - keep);
  const work: Work = (w) => {
    // What is replaced is kept on a branch, as a rewind keeps it: a fork that shares it keeps its line.
    if (keep < s.messageCount) w.rewind(s.sid, keep, branchId(s.sid, next.historyVersion), null);
    w.appendMessages(s.sid, keep, rewritten.slice(0, untilTail), null);
    if (tail !== undefined) w.appendMessages(s.sid, keep + untilTail, rewritten.slice(untilTail), tail.turnId);
    w.saveSession(row);
  };
  await env.services.store.commit(work);
  s.sessionKey = sessionKey;
  s.messageCount = change.history.length;
  s.historyVersion = next.historyVersion;
  rowSaved(s);
}

async function changeOverrides(s: SessionState, overrides: SessionState['overrides'], env: SessionEnv): Promise<void> {
  const refusal = (await env.services.agents.agent(s.agentName)).checkOverrides?.(overrides) ?? null;
  if (refusal !== null) throw new ControlFailure(refusal);
  const previous = { overrides: s.overrides, text: s.overridesText };
  setOverrides(s, overrides);
  const row = sessionRow(s, env.services.bootId);
  try {
    await env.services.store.commit((w) => w.saveSession(row));
    rowSaved(s);
  } catch (err) {
    s.overrides = previous.overrides;
    s.overridesText = previous.text;
    throw err;
  }
}

/** The running turn's agent asked to commit what it appended so far: null, or why it could not. */
export async function saveDuringTurn(s: SessionState, turnId: string, env: SessionEnv): Promise<string | null> {
  if (s.activity.phase !== 'running' || s.activity.turn.turnId !== turnId || s.activity.turn.finished) return 'the turn has ended';
  try {
    await saveRunningTail(s, env);
  } catch (err) {
    env.services.log.error({ err, sid: s.sid, turnId }, 'could not save the running turn');
    return `could not save the turn: ${(err as Error).message}`;
  }
  return null;
}

/** A guest agent's session id, committed before the turn's agent goes on (AGENT.md §6); null, or why not. */
export async function keepAgentSession(s: SessionState, turnId: string, agentSessionId: string, env: SessionEnv): Promise<string | null> {
  if (s.activity.phase !== 'running' || s.activity.turn.turnId !== turnId || s.activity.turn.finished) return 'the turn has ended';
  try {
    await env.services.store.commit((w) => w.setAgentSession(s.sid, agentSessionId));
  } catch (err) {
    env.services.log.error({ err, sid: s.sid, turnId }, "could not store the guest agent's session id");
    return `could not store the agent's session id: ${storageProblem(err as Error)}`;
  }
  s.agentSessionId = agentSessionId;
  return null;
}

/**
 * The running turn's agent compressed the history before its prompt: that part becomes the
 * summary, the prompt and what the turn saved since keep their place after it. Answers null,
 * or why it could not (the turn is gone, the commit failed); the history is unchanged then.
 */
export async function compressDuringTurn(s: SessionState, turnId: string, summary: ChatMessage[], env: SessionEnv): Promise<string | null> {
  if (s.activity.phase !== 'running' || s.activity.turn.turnId !== turnId || s.activity.turn.finished) return 'the turn has ended';
  const turn = s.activity.turn;
  const tail = await env.services.store.messages(s.sid, turn.promptSeq, s.messageCount);
  try {
    await changeHistory(s, { history: [...summary, ...tail], keepStored: 0, rotateKey: true, turnTail: { fromSeq: summary.length, turnId } }, env);
  } catch (err) {
    env.services.log.error({ err, sid: s.sid, turnId }, 'could not store a compressed history');
    return `could not store the compressed history: ${(err as Error).message}`;
  }
  turn.promptSeq = summary.length;
  return null;
}
