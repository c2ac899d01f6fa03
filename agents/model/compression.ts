// Compression (AGENT.md §5): the model summarizes everything but the last `keep_recent`
// messages; the history becomes one `system` message with the summary, then the kept messages.
// The estimate that triggers it automatically is the last reported prompt size plus ~4
// characters a token for what was added since.
import type { ChatMessage } from '../../protocol/chat.js';
import { compressionCut } from './history.js';
import type { ModelApi } from './openai-api.js';

const CHARS_PER_TOKEN = 4;
/** A tool result or message in the summary request is cut here: the point is the gist. */
const TRANSCRIPT_ENTRY_MAX = 4000;
/** Sessions whose last prompt size is remembered; the oldest are forgotten past this. */
const REMEMBERED_SESSIONS = 10_000;

const SUMMARIZER =
  'You compress conversations. Summarize the conversation you are given so that an assistant can continue it: ' +
  'the user\'s goals, decisions made, facts learned (including tool results that matter), and open questions. ' +
  'Be concise and concrete. Answer with the summary only.';

export const SUMMARY_HEADING = 'Summary of the earlier conversation';

/** The compressed history, or null when there is nothing before the kept messages to summarize. */
export async function summarize(
  api: ModelApi,
  model: string,
  history: readonly ChatMessage[],
  keep: number,
  focusTopic: string | null,
  signal: AbortSignal,
): Promise<ChatMessage[] | null> {
  const cut = compressionCut(history, keep);
  if (cut === 0) return null;
  const focus = focusTopic ? `\n\nFocus the summary on: ${focusTopic}` : '';
  const transcript = history.slice(0, cut).map(transcriptLine).join('\n');
  const text = await api.complete(
    { model, tools: [], messages: [{ role: 'system', content: SUMMARIZER }, { role: 'user', content: `${transcript}${focus}` }] },
    signal,
  );
  if (text === null) throw new Error('interrupted');
  if (text.trim() === '') throw new Error('the model returned an empty summary');
  return [{ role: 'system', content: `${SUMMARY_HEADING} (${cut} messages):\n${text.trim()}` }, ...history.slice(cut)];
}

function transcriptLine(m: ChatMessage): string {
  const calls = m.tool_calls?.map((c) => ` → ${c.function.name}(${c.function.arguments.slice(0, TRANSCRIPT_ENTRY_MAX)})`).join('') ?? '';
  return `[${m.role}] ${m.content.slice(0, TRANSCRIPT_ENTRY_MAX)}${calls}`;
}

/** Per session: the prompt size the server last reported, and the characters that request held. */
export class PromptSizes {
  private readonly sizes = new Map<string, { promptTokens: number; chars: number }>();

  record(sid: string, promptTokens: number, chars: number): void {
    this.sizes.delete(sid);
    this.sizes.set(sid, { promptTokens, chars });
    if (this.sizes.size > REMEMBERED_SESSIONS) this.sizes.delete(this.sizes.keys().next().value!);
  }

  forget(sid: string): void {
    this.sizes.delete(sid);
  }

  /** The prompt's tokens, estimated from a request of `chars` characters. */
  estimate(sid: string, chars: number): number {
    const last = this.sizes.get(sid);
    if (last === undefined || last.promptTokens === 0 || chars < last.chars) return chars / CHARS_PER_TOKEN;
    return last.promptTokens + (chars - last.chars) / CHARS_PER_TOKEN;
  }
}
