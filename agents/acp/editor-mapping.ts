// What `turnhost acp` says in ACP for what turnhost says (PROTOCOL.md §7.2): a session's events as
// `session/update`s, its history as the updates a `session/load` replays, and the agent's
// questions as the editor's permission or elicitation requests. Pure functions:
// bin/commands/acp.ts sends them. The other direction (turnhost as a guest's client, AGENT.md §6) is
// guest-mapping.ts beside it, in the same vocabulary.
import type {
  ContentBlock,
  CreateElicitationRequest,
  CreateElicitationResponse,
  PermissionOption,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionConfigOption,
  SessionUpdate,
  ToolCallContent,
  ToolKind,
} from '@agentclientprotocol/sdk';
import type { MessagePart } from '../../protocol/content.js';
import type { AgentsList, ApprovalAnswer, ApprovalRequest, ClarifyRequest, HistoryMessage, SessionEvent } from '../../client/types.js';

/** The ids of the session config options `turnhost acp` offers (AGENT.md §8). */
export const AGENT_OPTION = 'agent';
export const MODEL_OPTION = 'model';

/** What a new session will be made with, as the editor chose it before its first prompt. */
export interface SessionChoice {
  agent: string;
  /** Null: the agent's own model. */
  model: string | null;
}

/**
 * The catalogue as ACP session config options (AGENT.md §8), so an editor's own pickers show it:
 * the agent (unless `turnhost acp --agent` fixed it), and the chosen agent's models when it is an
 * `openai` one.
 */
export function sessionConfigOptions(catalogue: AgentsList, choice: SessionChoice, agentFixed: boolean): SessionConfigOption[] {
  const options: SessionConfigOption[] = [];
  if (!agentFixed) {
    options.push({
      id: AGENT_OPTION,
      name: 'Agent',
      description: 'Which of this turnhost\'s agents the session runs with; fixed once its first prompt ran',
      type: 'select',
      currentValue: choice.agent,
      options: catalogue.agents.map((agent) => ({ value: agent.name, name: agent.label, ...(agent.description === '' ? {} : { description: agent.description }) })),
    });
  }
  const models = catalogue.agents.find((agent) => agent.name === choice.agent)?.models;
  if (models !== undefined) {
    options.push({ id: MODEL_OPTION, name: 'Model', category: 'model', type: 'select', currentValue: choice.model ?? models[0]!, options: models.map((model) => ({ value: model, name: model })) });
  }
  return options;
}

/** The model's context window when the agent does not say (AGENT.md's `context_tokens` default). */
const DEFAULT_CONTEXT_TOKENS = 128_000;

const text = (value: string): ContentBlock => ({ type: 'text', text: value });

/** A prompt's blocks as turnhost's text: its text, and each resource by its text or its link. */
/**
 * An editor's prompt as turnhost's (PROTOCOL.md §2.4): text alone when it holds no bytes, else its
 * blocks. A link to a file (an editor's mention of one) stays its URI as text, as before: turnhost
 * never opens a file URI, and the agent reads the file where it can.
 */
export function editorPrompt(blocks: readonly ContentBlock[]): { text: string; content?: Record<string, unknown>[] } {
  const carriesBytes = blocks.some((block) => block.type === 'image' || block.type === 'audio' || (block.type === 'resource' && 'blob' in block.resource));
  if (!carriesBytes) return { text: promptText(blocks) };
  const content = blocks.map((block): Record<string, unknown> => {
    switch (block.type) {
      case 'image':
      case 'audio':
        return { type: block.type, mimeType: block.mimeType, data: block.data };
      case 'resource':
        return 'blob' in block.resource ? { type: 'resource', resource: block.resource } : { type: 'text', text: block.resource.text };
      default:
        return { type: 'text', text: promptText([block]) };
    }
  });
  return { text: '', content };
}

export function promptText(blocks: readonly ContentBlock[]): string {
  return blocks
    .map((block) => {
      switch (block.type) {
        case 'text':
          return block.text;
        case 'resource_link':
          return block.uri;
        case 'resource':
          return 'text' in block.resource ? block.resource.text : block.resource.uri;
        default:
          return '';
      }
    })
    .filter((part) => part !== '')
    .join('\n');
}

/** One event of a running turn as an update; null for what an editor has no place for. */
export function updateOf(event: SessionEvent): SessionUpdate | null {
  switch (event.type) {
    case 'message.delta':
      return event.payload.text === '' ? null : { sessionUpdate: 'agent_message_chunk', content: text(event.payload.text) };
    case 'reasoning.delta':
      return event.payload.text === '' ? null : { sessionUpdate: 'agent_thought_chunk', content: text(event.payload.text) };
    case 'tool.start':
      return {
        sessionUpdate: 'tool_call',
        toolCallId: event.payload.id,
        title: event.payload.title ?? event.payload.name,
        status: 'in_progress',
        kind: kindOf(event.payload.name),
        ...(event.payload.arguments === undefined ? {} : { rawInput: event.payload.arguments }),
      };
    case 'tool.complete': {
      const { summary, content } = event.payload as { summary?: string; content?: MessagePart[] };
      const parts = toolCallContent(content ?? []);
      // A diff or a terminal says more than its summary (`[diff path]`): the editor gets them whole.
      const shown: ToolCallContent[] = parts.length > 0 ? parts : summary ? [{ type: 'content', content: text(summary) }] : [];
      return {
        sessionUpdate: 'tool_call_update',
        toolCallId: event.payload.id,
        status: event.payload.ok ? 'completed' : 'failed',
        ...(shown.length === 0 ? {} : { content: shown }),
      };
    }
    case 'tool.update':
      return { sessionUpdate: 'tool_call_update', toolCallId: event.payload.id, status: 'in_progress', content: toolCallContent(event.payload.content) };
    case 'turn.end': {
      const usage = (event.payload as { usage?: { prompt_tokens: number; completion_tokens: number } }).usage;
      return usage === undefined ? null : { sessionUpdate: 'usage_update', used: usage.prompt_tokens + usage.completion_tokens, size: DEFAULT_CONTEXT_TOKENS };
    }
    default:
      return null;
  }
}

/** The history as the updates that replay it on `session/load`: the user's prompts, replies, tool calls and their results. */
export function historyUpdates(messages: readonly HistoryMessage[]): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'user':
        updates.push({ sessionUpdate: 'user_message_chunk', content: text(message.content) });
        break;
      case 'assistant':
        if (message.content !== '') updates.push({ sessionUpdate: 'agent_message_chunk', content: text(message.content) });
        for (const call of message.tool_calls ?? []) {
          updates.push({ sessionUpdate: 'tool_call', toolCallId: call.id, title: call.function.name, status: 'in_progress', kind: kindOf(call.function.name), rawInput: call.function.arguments });
        }
        break;
      case 'tool':
        if (message.tool_call_id !== undefined) {
          const parts = toolCallContent(message.parts ?? []);
          updates.push({ sessionUpdate: 'tool_call_update', toolCallId: message.tool_call_id, status: 'completed', content: parts.length > 0 ? parts : [{ type: 'content', content: text(message.content) }] });
        }
        break;
    }
  }
  return updates;
}

/**
 * A tool result's parts as ACP tool call content: a diff as ACP's diff; a terminal as its command,
 * output and exit code in text (its id names a terminal of turnhost's, not the editor's); a link as a link.
 */
function toolCallContent(parts: readonly MessagePart[]): ToolCallContent[] {
  const content: ToolCallContent[] = [];
  for (const part of parts) {
    if (part.type === 'diff' && part.truncated !== true) content.push({ type: 'diff', path: part.path, oldText: part.oldText, newText: part.newText });
    else if (part.type === 'diff') content.push({ type: 'content', content: text(`[diff ${part.path}: too large to show]`) });
    else if (part.type === 'terminal') content.push({ type: 'content', content: text(terminalText(part)) });
    else if (part.type === 'resource_link' && part.uri !== undefined) content.push({ type: 'content', content: { type: 'resource_link', name: part.name, uri: part.uri } });
  }
  return content;
}

function terminalText(part: Extract<MessagePart, { type: 'terminal' }>): string {
  const command = part.command === undefined ? '' : `$ ${part.command}\n`;
  const exit = part.exitCode === undefined ? '' : `\n(exit code ${part.exitCode})`;
  return `${command}${part.output ?? ''}${exit}`;
}

const ALLOW = 'allow';
const REJECT = 'reject';

/** A guest agent's tools are named for their ACP kind (AGENT.md §6): an editor sees that kind again. */
function kindOf(tool: string | undefined): ToolKind {
  const kind = tool?.startsWith('acp_') ? tool.slice('acp_'.length) : '';
  return (TOOL_KINDS as readonly string[]).includes(kind) ? (kind as ToolKind) : 'other';
}

const TOOL_KINDS = ['read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other'] as const satisfies readonly ToolKind[];

/** The editor is offered a guest agent's own options when it has them (Claude Code's "Always Allow"), else allow and reject. */
export function approvalPermission(sessionId: string, request: ApprovalRequest): RequestPermissionRequest {
  const options: PermissionOption[] = request.options?.length
    ? request.options.map((option) => ({ optionId: option.option_id, name: option.name, kind: option.kind as PermissionOption['kind'] }))
    : [
        { optionId: ALLOW, name: 'Allow', kind: 'allow_once' },
        { optionId: REJECT, name: 'Reject', kind: 'reject_once' },
      ];
  return {
    sessionId,
    toolCall: {
      toolCallId: request.id,
      title: request.question,
      status: 'pending',
      ...(request.tool ? { name: request.tool, kind: kindOf(request.tool) } : {}),
      ...(request.arguments === undefined ? {} : { rawInput: request.arguments }),
    },
    options,
  };
}

/** The editor's choice: a guest's option by its id, else true approves and false refuses; null: the editor cancelled. */
export function approvalAnswer(request: ApprovalRequest, response: RequestPermissionResponse): ApprovalAnswer {
  if (response.outcome.outcome !== 'selected') return null;
  const chosen = response.outcome.optionId;
  if (request.options?.some((option) => option.option_id === chosen)) return { option_id: chosen };
  return chosen === ALLOW;
}

/** The questions of a clarify, one or a batch, each with its id and choices. */
function questionsOf(request: ClarifyRequest): { id: string; question: string; choices?: string[] }[] {
  if (request.questions !== undefined) return request.questions;
  return [{ id: 'answer', question: request.question ?? '', ...(request.choices ? { choices: request.choices } : {}) }];
}

export function clarifyElicitation(sessionId: string, request: ClarifyRequest): CreateElicitationRequest {
  const questions = questionsOf(request);
  return {
    sessionId,
    mode: 'form',
    message: questions.map((q) => q.question).join('\n'),
    requestedSchema: {
      type: 'object',
      properties: Object.fromEntries(questions.map((q) => [q.id, q.choices?.length ? { type: 'string', title: q.question, enum: q.choices } : { type: 'string', title: q.question }])),
      required: questions.map((q) => q.id),
    },
  } as CreateElicitationRequest;
}

/** The form's answer as turnhost's: one answer, or a batch's by question id; null when declined. */
export function clarifyFromElicitation(request: ClarifyRequest, response: CreateElicitationResponse): string | Record<string, string> | null {
  if (response.action !== 'accept') return null;
  const content = (response as { content?: Record<string, unknown> | null }).content ?? {};
  const answers = Object.fromEntries(questionsOf(request).map((q) => [q.id, String(content[q.id] ?? '')]));
  return request.questions !== undefined ? answers : answers['answer']!;
}

/** A single question with choices, for an editor without forms: one permission option per choice. */
export function clarifyPermission(sessionId: string, request: ClarifyRequest): RequestPermissionRequest | null {
  if (request.questions !== undefined || !request.choices?.length) return null;
  const options: PermissionOption[] = request.choices.map((choice, i) => ({ optionId: String(i), name: choice, kind: 'allow_once' }));
  return { sessionId, toolCall: { toolCallId: request.id, title: request.question ?? '', status: 'pending' }, options };
}

export function clarifyFromPermission(request: ClarifyRequest, response: RequestPermissionResponse): string | null {
  return response.outcome.outcome === 'selected' ? (request.choices?.[Number(response.outcome.optionId)] ?? null) : null;
}
