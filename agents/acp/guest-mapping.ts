// What turnhost says for what a guest agent says in ACP (AGENT.md §6): its `session/update`s as
// turn events, its stop reasons as a turn's end, its permission requests as approvals and its
// elicitations as clarify questions. Pure functions; the other direction (turnhost as an editor's
// agent, PROTOCOL.md §7.2) is editor-mapping.ts beside it, in the same vocabulary.
import type {
  ContentBlock,
  CreateElicitationRequest,
  CreateElicitationResponse,
  PermissionOption,
  PlanEntry as AcpPlanEntry,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionUpdate,
  StopReason,
  ToolCallContent,
} from '@agentclientprotocol/sdk';
import type { AgentEvent } from '../agent.js';
import type { PlanEntry } from '../../protocol/rpc.js';
import { shownText } from '../../protocol/tool-arguments.js';
import { keptDiff, TERMINAL_OUTPUT_MAX, type ContentBlock as StoredBlock, type MessagePart, type TerminalPart } from '../../protocol/content.js';
import { isRecord } from '../../protocol/fields.js';

/** A guest's tool as the approval policy and the history name it: its ACP kind. */
export function toolName(kind: string | null | undefined): string {
  return `acp_${kind || 'other'}`;
}

/** A content block as text; what is not text is a short placeholder. */
export function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'resource_link':
      return `[${block.uri}]`;
    case 'resource':
      return 'text' in block.resource ? block.resource.text : `[${block.resource.uri}]`;
    default:
      return `[${block.type}]`;
  }
}

/** What a tool call's content points at that turnhost holds: its own terminals, the guest's images as kept. */
export interface PartSources {
  /** What turnhost's own terminal of that id shows (its command, its output's newest TERMINAL_OUTPUT_MAX, exit code); null for one it does not run. */
  terminal(terminalId: string): Omit<TerminalPart, 'type' | 'terminalId'> | null;
  /** An image or audio block the guest sent, as stored (a blob); null when it was not kept. */
  kept(block: ContentBlock): StoredBlock | null;
}

/**
 * A tool call's content as turnhost keeps it (PROTOCOL.md §2.4): diffs whole (their texts up to a
 * bound), terminals with their output (a terminal turnhost runs for the guest: as captured; a
 * guest's own: what it said in `_meta.terminal_output`, as Claude Code's adapter does), images
 * and audio as blobs, links; text stays in the summary.
 */
export function toolParts(content: readonly ToolCallContent[] | null | undefined, sources: PartSources): MessagePart[] {
  const parts: MessagePart[] = [];
  for (const item of content ?? []) {
    if (item.type === 'diff') parts.push(keptDiff(item.path, item.oldText ?? null, item.newText));
    else if (item.type === 'terminal') parts.push({ type: 'terminal', terminalId: item.terminalId, ...sources.terminal(item.terminalId), ...terminalMeta(item._meta) });
    else if (item.type === 'content' && (item.content.type === 'image' || item.content.type === 'audio')) {
      const kept = sources.kept(item.content);
      if (kept !== null) parts.push(kept);
    } else if (item.type === 'content' && item.content.type === 'resource_link') parts.push({ type: 'resource_link', name: item.content.name, uri: item.content.uri, ...(item.content.mimeType ? { mimeType: item.content.mimeType } : {}) });
  }
  return parts;
}

function terminalMeta(meta: unknown): { output?: string; exitCode?: number | null } {
  const said = isRecord(meta) && isRecord(meta['terminal_output']) ? meta['terminal_output'] : null;
  if (said === null) return {};
  return {
    ...(typeof said['data'] === 'string' ? { output: said['data'].slice(-TERMINAL_OUTPUT_MAX) } : {}),
    ...(Number.isSafeInteger(said['exit_code']) ? { exitCode: said['exit_code'] as number } : {}),
  };
}

/** A tool call's result in a line or a few: its content, else its rawOutput. */
export function toolResultText(content: readonly ToolCallContent[] | null | undefined, rawOutput: unknown): string {
  const parts = (content ?? []).map((item) => {
    switch (item.type) {
      case 'content':
        return blockText(item.content);
      case 'diff':
        return `[diff ${item.path}]`;
      case 'terminal':
        return `[terminal ${item.terminalId}]`;
      default:
        return '';
    }
  });
  const text = parts.filter((part) => part !== '').join('\n');
  if (text !== '' || rawOutput === undefined || rawOutput === null) return text;
  return typeof rawOutput === 'string' ? rawOutput : JSON.stringify(rawOutput);
}

/** A tool's input as the JSON text tool.start and the history carry. */
export function argumentsText(rawInput: unknown): string {
  if (rawInput === undefined || rawInput === null) return '{}';
  return typeof rawInput === 'string' ? rawInput : JSON.stringify(rawInput);
}

export function planEntries(entries: readonly AcpPlanEntry[]): PlanEntry[] {
  return entries.map((entry) => ({ content: entry.content, status: entry.status, priority: entry.priority }));
}

export function planText(entries: readonly AcpPlanEntry[]): string {
  return entries.map((entry) => `[${entry.status}] ${entry.content}`).join('\n');
}

/**
 * The event an update is for the session's clients; null for updates that make none (a load's
 * replayed transcript, the guest's slash commands) or that the turn handles itself (tool calls).
 */
export function updateEvent(update: SessionUpdate): AgentEvent | null {
  switch (update.sessionUpdate) {
    case 'agent_message_chunk': {
      const text = blockText(update.content);
      return text === '' ? null : { type: 'message.delta', text };
    }
    case 'agent_thought_chunk': {
      const text = blockText(update.content);
      return text === '' ? null : { type: 'reasoning.delta', text };
    }
    case 'plan':
      return { type: 'status.update', kind: 'plan', text: planText(update.entries), entries: planEntries(update.entries) };
    case 'current_mode_update':
      return { type: 'status.update', kind: 'mode', text: update.currentModeId };
    default:
      return null;
  }
}

/** How a prompt's stop reason ends the turn (AGENT.md §6). */
export interface TurnStop {
  interrupted: boolean;
  finishReason?: 'length';
  /** A status.update of this kind says why the turn stopped early. */
  status?: 'refusal' | 'max_turn_requests';
}

export function turnStop(reason: StopReason): TurnStop {
  switch (reason) {
    case 'max_tokens':
      return { interrupted: false, finishReason: 'length' };
    case 'max_turn_requests':
    case 'refusal':
      return { interrupted: false, status: reason };
    case 'cancelled':
      return { interrupted: true };
    default:
      return { interrupted: false };
  }
}

export const STOP_WORDS: Record<'refusal' | 'max_turn_requests', string> = {
  refusal: 'the agent refused to go on with this request',
  max_turn_requests: 'the agent reached its limit of model requests for one turn',
};

/**
 * The approval question asked of turnhost's clients for a guest's permission request: its title,
 * safe for a terminal (a guest's `\r` must not rewrite the line a person reads) and cut as §2 cuts
 * arguments; the arguments whole, as the guest will use them.
 */
export function approvalParams(request: RequestPermissionRequest): Record<string, unknown> {
  const call = request.toolCall;
  return {
    question: shownText(call.title || `the agent asks to use ${toolName(call.kind)}`),
    tool: toolName(call.kind),
    arguments: call.rawInput ?? {},
    options: request.options.map((option) => ({ option_id: option.optionId, name: option.name, kind: option.kind })),
  };
}

const firstOf = (options: readonly PermissionOption[], kind: PermissionOption['kind']): PermissionOption | undefined =>
  options.find((option) => option.kind === kind);

/** Chooses the first option of a kind; `cancelled` when the guest offered none of that kind. */
export function chooseKind(options: readonly PermissionOption[], kind: 'allow_once' | 'reject_once'): RequestPermissionResponse {
  const option = firstOf(options, kind) ?? (kind === 'allow_once' ? firstOf(options, 'allow_always') : firstOf(options, 'reject_always'));
  return option === undefined ? { outcome: { outcome: 'cancelled' } } : { outcome: { outcome: 'selected', optionId: option.optionId } };
}

/**
 * A client's answer as the guest's outcome: `{approved}` picks the first allow or reject option,
 * `{option_id}` that option (when the guest offered it); anything else (no answer, a decline) rejects.
 */
export function permissionOutcome(options: readonly PermissionOption[], answer: unknown): RequestPermissionResponse {
  if (typeof answer === 'object' && answer !== null) {
    const chosen = (answer as Record<string, unknown>)['option_id'];
    if (typeof chosen === 'string' && options.some((option) => option.optionId === chosen)) {
      return { outcome: { outcome: 'selected', optionId: chosen } };
    }
    if ((answer as Record<string, unknown>)['approved'] === true) return chooseKind(options, 'allow_once');
  }
  return chooseKind(options, 'reject_once');
}

type FormProperties = Record<string, { title?: string; description?: string; enum?: unknown[]; oneOf?: { const?: unknown }[] }>;

function formOf(request: CreateElicitationRequest): { properties: FormProperties; message: string } {
  const form = request as { message?: string; requestedSchema?: { properties?: FormProperties } };
  return { properties: form.requestedSchema?.properties ?? {}, message: form.message ?? '' };
}

/** A guest's elicitation as clarify params: one question per field of its form, as a batch. */
export function clarifyParams(request: CreateElicitationRequest): Record<string, unknown> {
  const { properties, message } = formOf(request);
  const questions = Object.entries(properties).map(([id, field]) => {
    const choices = field.enum ?? field.oneOf?.map((option) => option.const);
    const question = [field.title ?? id, field.description].filter(Boolean).join(': ');
    return { id, question: question || message, ...(choices?.length ? { choices: choices.map(String) } : {}) };
  });
  if (questions.length === 0) return { question: message };
  return { questions };
}

/** The clarify answer as the form's content; no answer declines. */
export function elicitationAnswer(request: CreateElicitationRequest, answer: unknown): CreateElicitationResponse {
  if (typeof answer !== 'object' || answer === null) return { action: 'decline' } as CreateElicitationResponse;
  const { properties } = formOf(request);
  const answers = (answer as { answers?: Record<string, unknown> }).answers;
  const single = (answer as { answer?: unknown }).answer;
  const content: Record<string, string> = {};
  if (answers !== undefined) for (const id of Object.keys(properties)) content[id] = String(answers[id] ?? '');
  else if (single !== undefined) for (const id of Object.keys(properties)) content[id] = String(single);
  return { action: 'accept', content } as CreateElicitationResponse;
}
