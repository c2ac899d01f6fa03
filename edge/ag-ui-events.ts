// One turn's events, as AG-UI events (PROTOCOL.md §7.1): the reply as a text message, reasoning as
// a reasoning message, each tool call as its start, arguments, end and result, the turn's end as
// RUN_FINISHED and its error as RUN_ERROR with the reason as `code`. A question the agent asks ends
// the run with an interrupt outcome: the turn waits in turnhost for the next run's `resume`.
// AG-UI wants every message closed before another kind begins and before the run ends.
import { blobHex, type MessagePart } from '../protocol/content.js';
import { EventType, type BaseEvent, type Interrupt, type RunFinishedOutcome, type TokenUsage } from '@ag-ui/core';
import { isRecord, type UnknownRecord } from '../protocol/fields.js';
import type { Question } from './question-answer.js';


type Open = { kind: 'text' | 'reasoning'; messageId: string } | null;

export class AgUiTurn {
  private open: Open = null;
  private messages = 0;

  constructor(
    private readonly threadId: string,
    private readonly runId: string,
    /** Names this run's messages: the turn's id, so that a resumed run's messages do not repeat an earlier one's. */
    private readonly turnId: string,
    private readonly emit: (event: BaseEvent) => void,
  ) {}

  /** One of the turn's events; true once the run is over (the turn ended or failed). */
  event(type: string, payload: UnknownRecord): boolean {
    switch (type) {
      case 'message.delta':
        this.content('text', text(payload));
        return false;
      case 'reasoning.delta':
        this.content('reasoning', text(payload));
        return false;
      case 'message.complete':
        if (this.open?.kind !== 'text' && text(payload) !== '') this.content('text', text(payload));
        this.close();
        return false;
      case 'tool.start':
        this.toolStart(payload);
        return false;
      case 'tool.complete':
        this.emit({ type: EventType.TOOL_CALL_RESULT, messageId: `${String(payload['id'])}-result`, toolCallId: String(payload['id']), content: toolResult(payload), role: 'tool' } as BaseEvent);
        this.activities(payload);
        return false;
      case 'tool.update':
        this.activities(payload);
        return false;
      case 'turn.end':
        this.finish(payload['interrupted'] === true ? { type: 'cancelled' } : { type: 'success' }, usageOf(payload));
        return true;
      case 'turn.error':
        this.fail(String(payload['reason'] ?? 'failed'), String(payload['message'] ?? 'the turn failed'));
        return true;
      default:
        return false;
    }
  }

  /**
   * A tool's diffs, terminals and images (PROTOCOL.md §2.4) as AG-UI activities, each a snapshot
   * under an id of its own: an update of the same diff replaces what a client shows. An image or
   * audio names its bytes by the edge's address for them (the run's credential reads them).
   */
  private activities(payload: UnknownRecord): void {
    const parts = Array.isArray(payload['content']) ? (payload['content'] as MessagePart[]) : [];
    parts.forEach((part, index) => {
      if (part.type !== 'diff' && part.type !== 'terminal' && part.type !== 'image' && part.type !== 'audio') return;
      const { type: activityType, ...content } = part;
      const shown = 'blob' in content ? { ...content, url: `/v1/sessions/${encodeURIComponent(this.threadId)}/blobs/${blobHex(content.blob)}` } : content;
      this.emit({ type: EventType.ACTIVITY_SNAPSHOT, messageId: `${String(payload['id'])}-${activityType}-${index}`, activityType, content: shown } as BaseEvent);
    });
  }

  /** The agent asks: the run ends here, and the turn waits for the answers. */
  interrupt(questions: readonly Question[]): void {
    this.finish({ type: 'interrupt', interrupts: questions.map(toInterrupt) });
  }

  finish(outcome: RunFinishedOutcome, usage?: TokenUsage[]): void {
    this.close();
    this.emit({ type: EventType.RUN_FINISHED, threadId: this.threadId, runId: this.runId, outcome, ...(usage ? { usage } : {}) } as BaseEvent);
  }

  fail(code: string, message: string): void {
    this.close();
    this.emit({ type: EventType.RUN_ERROR, code, message } as BaseEvent);
  }

  private content(kind: 'text' | 'reasoning', delta: string): void {
    if (delta === '') return; // AG-UI refuses an empty delta
    if (this.open?.kind !== kind) {
      this.close();
      this.open = { kind, messageId: `${this.turnId}-${kind}-${++this.messages}` };
      const { messageId } = this.open;
      if (kind === 'text') this.emit({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' } as BaseEvent);
      else {
        this.emit({ type: EventType.REASONING_START, messageId } as BaseEvent);
        this.emit({ type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' } as BaseEvent);
      }
    }
    const type = kind === 'text' ? EventType.TEXT_MESSAGE_CONTENT : EventType.REASONING_MESSAGE_CONTENT;
    this.emit({ type, messageId: this.open!.messageId, delta } as BaseEvent);
  }

  private close(): void {
    if (this.open === null) return;
    const { kind, messageId } = this.open;
    this.open = null;
    if (kind === 'text') this.emit({ type: EventType.TEXT_MESSAGE_END, messageId } as BaseEvent);
    else {
      this.emit({ type: EventType.REASONING_MESSAGE_END, messageId } as BaseEvent);
      this.emit({ type: EventType.REASONING_END, messageId } as BaseEvent);
    }
  }

  private toolStart(payload: UnknownRecord): void {
    this.close();
    const toolCallId = String(payload['id']);
    this.emit({ type: EventType.TOOL_CALL_START, toolCallId, toolCallName: String(payload['name'] ?? 'tool') } as BaseEvent);
    const args = payload['arguments'];
    if (args !== undefined) this.emit({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: typeof args === 'string' ? args : JSON.stringify(args) } as BaseEvent);
    this.emit({ type: EventType.TOOL_CALL_END, toolCallId } as BaseEvent);
  }
}

function text(payload: UnknownRecord): string {
  return typeof payload['text'] === 'string' ? payload['text'] : '';
}

function toolResult(payload: UnknownRecord): string {
  if (typeof payload['summary'] === 'string' && payload['summary'] !== '') return payload['summary'];
  return payload['ok'] === false ? 'failed' : 'ok';
}

function usageOf(payload: UnknownRecord): TokenUsage[] | undefined {
  const usage = payload['usage'];
  if (!isRecord(usage)) return undefined;
  const inputTokens = Number(usage['prompt_tokens'] ?? 0);
  const outputTokens = Number(usage['completion_tokens'] ?? 0);
  return [{ inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }];
}

/** A clarify or an approval as an AG-UI interrupt, with the shape its answer (`resume[].payload`) takes. */
function toInterrupt(question: Question): Interrupt {
  const { params } = question;
  if (question.method === 'approval.request') {
    // A guest agent's own options (AGENT.md §6) may be chosen by id instead.
    const options = Array.isArray(params['options']) ? (params['options'] as UnknownRecord[]).map((o) => String(o['option_id'])) : [];
    return {
      id: question.id,
      reason: 'approval',
      message: String(params['question'] ?? ''),
      responseSchema:
        options.length > 0
          ? { type: 'object', properties: { approved: { type: 'boolean' }, option_id: { type: 'string', enum: options } }, oneOf: [{ required: ['approved'] }, { required: ['option_id'] }] }
          : { type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] },
    };
  }
  const batch = Array.isArray(params['questions']) ? (params['questions'] as UnknownRecord[]) : null;
  if (batch !== null) {
    return {
      id: question.id,
      reason: 'clarify',
      message: batch.map((q) => String(q['question'] ?? '')).join('\n'),
      responseSchema: { type: 'object', properties: Object.fromEntries(batch.map((q) => [String(q['id']), answerSchema(q)])), required: batch.map((q) => String(q['id'])) },
    };
  }
  return { id: question.id, reason: 'clarify', message: String(params['question'] ?? ''), responseSchema: answerSchema(params) };
}

function answerSchema(question: UnknownRecord): Record<string, unknown> {
  const choices = question['choices'];
  return Array.isArray(choices) && choices.length > 0 ? { type: 'string', enum: choices } : { type: 'string' };
}

