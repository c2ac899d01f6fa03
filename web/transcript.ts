// What the transcript shows: the stored history, then, for each turn whose reply is not stored
// yet, what streamed of it. A turn is drawn from one source at a time, so a reload in the middle
// of a turn shows its reply once: streamed until the turn's end is stored, then from the history.
// The history's lines are made once per history; a streaming reply is one line per Markdown block
// (blocks.ts), so that a fragment changes one line, never the reply or the transcript. The turns a
// rewind, a retry or an edit superseded (PROTOCOL.md §2.2) are one folded line where they left.
import type { MessagePart } from '../protocol/message-parts.js';
import { ReplyBlocks } from './blocks.js';

export interface HistoryEntry {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  /** On a prompt: who sent it (PROTOCOL.md §5.6). */
  by?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  usage?: Usage;
  /** On a turn's last message: how long the turn ran, as its stored row says. */
  duration_ms?: number;
  /** When it was stored. */
  at?: string;
  /** A message of a superseded turn (the history read with `all`): when, and by whom. */
  superseded?: boolean;
  superseded_at?: string;
  superseded_by?: string | null;
  /** What it carries beyond text (PROTOCOL.md §2.4); `content` is then their text form. */
  parts?: MessagePart[];
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  calls: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

export interface LiveTool {
  id: string;
  name: string;
  args: string;
  outcome?: { ok: boolean; summary: string };
  /** Its diffs and terminals, as the last tool.update or tool.complete said. */
  parts?: MessagePart[];
}

/** A turn as its events told it. */
export interface LiveTurn {
  turnId: string;
  reply: ReplyBlocks;
  reasoning: string;
  tools: LiveTool[];
  notes: string[];
  usage?: Usage;
  /** When the page saw it start (Date.now()), and how long it took once it ended. */
  startedAt: number;
  durationMs?: number;
  ended: boolean;
}

export type LineKind = 'prompt' | 'reply' | 'reasoning' | 'tool' | 'usage' | 'note' | 'superseded';

/** A tool call as a disclosure: its name and state on the button, its arguments and result inside. */
export interface ToolView {
  id: string;
  name: string;
  state: 'running' | 'ok' | 'failed' | 'called' | 'done';
  /** `→ name(args)`, then `← name …: result` once it is in. */
  detail: string;
  /** Its diffs and terminals: shown under it, open or not. */
  parts?: MessagePart[];
}

export interface Line {
  key: string;
  kind: LineKind;
  /** What the line shows; for a tool, its detail. A line is drawn again only when this changes. */
  text: string;
  tool?: ToolView;
  /** On a prompt: who sent it. */
  by?: string;
  /** The turn it belongs to (a prompt's, to edit it; a turn's reply, to fork there or retry it). */
  turnId?: string;
  /** On a prompt: when it was sent. */
  at?: string;
  /** On a turn's reply: it ends the turn (Fork); `last`: it ends the session's line (Retry). */
  ends?: 'turn' | 'last';
  /** A superseded stretch, folded: its own lines. */
  folded?: Line[];
  /** The first reply of its turn: it is named (the assistant's). */
  lead?: boolean;
  /** On a prompt: its files (PROTOCOL.md §2.4). */
  parts?: MessagePart[];
}

export function newLiveTurn(turnId: string): LiveTurn {
  return { turnId, reply: new ReplyBlocks(), reasoning: '', tools: [], notes: [], startedAt: Date.now(), ended: false };
}

/** The stored history's lines, and the turns whose reply it holds (their streamed copy is not shown). */
export interface HistoryLines {
  lines: Line[];
  replied: Set<string>;
}

function toolLine(key: string, tool: ToolView): Line {
  return { key, kind: 'tool', text: `${tool.state}\n${tool.detail}`, tool };
}

export function historyLines(history: readonly HistoryEntry[]): HistoryLines {
  const lines: Line[] = [];
  const replied = new Set<string>();
  for (let i = 0; i < history.length; ) {
    if (history[i]!.superseded === true) {
      // A superseded stretch: one folded line, named by when and by whom (its turns are in the history: no streamed copy of them is shown).
      let end = i;
      while (end < history.length && history[end]!.superseded === true && history[end]!.superseded_at === history[i]!.superseded_at) end++;
      const stretch = history.slice(i, end);
      const first = stretch[0]!;
      const who = first.superseded_by ? ` by ${first.superseded_by}` : '';
      const when = first.superseded_at ? ` ${new Date(first.superseded_at).toLocaleString()}` : '';
      lines.push({ key: `s${first.seq}-${first.superseded_at ?? ''}`, kind: 'superseded', text: `${stretch.length} superseded message${stretch.length === 1 ? '' : 's'}${when}${who}`, folded: lineRun(stretch, replied) });
      i = end;
      continue;
    }
    let end = i;
    while (end < history.length && history[end]!.superseded !== true) end++;
    lines.push(...lineRun(history.slice(i, end), replied));
    i = end;
  }
  const last = [...lines].reverse().find((line) => line.ends === 'turn');
  if (last !== undefined) last.ends = 'last';
  return { lines, replied };
}

/** The lines of a run of messages of one path; the turns whose reply it holds go in `replied`. */
function lineRun(history: readonly HistoryEntry[], replied: Set<string>): Line[] {
  const lines: Line[] = [];
  const calls = new Map<string, number>();
  for (const entry of history) {
    const key = `h${entry.seq}${entry.superseded ? `-${entry.superseded_at ?? ''}` : ''}`;
    const turn = entry.turn_id === null ? {} : { turnId: entry.turn_id };
    if (entry.role === 'user') lines.push({ key, kind: 'prompt', ...promptOf(entry), ...turn, ...(entry.by === undefined ? {} : { by: entry.by }), ...(entry.at === undefined ? {} : { at: entry.at }) });
    else if (entry.role === 'tool') {
      const at = calls.get(entry.tool_call_id ?? '');
      const call = at === undefined ? undefined : lines[at]!.tool!;
      if (call === undefined) lines.push({ key, kind: 'note', text: `← tool: ${entry.content}` });
      else lines[at!] = toolLine(lines[at!]!.key, { ...call, state: 'done', detail: `${call.detail}\n← ${call.name}: ${entry.content}`, ...(entry.parts === undefined ? {} : { parts: entry.parts }) });
    } else if (entry.role === 'assistant') {
      const final = (entry.tool_calls ?? []).length === 0 && entry.turn_id !== null;
      const lead = !lines.some((line) => line.kind === 'reply' && line.turnId !== undefined && line.turnId === entry.turn_id);
      if (entry.content !== '') lines.push({ key, kind: 'reply', text: entry.content, ...turn, ...(final ? { ends: 'turn' as const } : {}), ...(lead ? { lead } : {}) });
      for (const call of entry.tool_calls ?? []) {
        calls.set(call.id, lines.length);
        lines.push(toolLine(`t${call.id}${entry.superseded ? '-s' : ''}`, { id: call.id, name: call.function.name, state: 'called', detail: `→ ${call.function.name}(${call.function.arguments})` }));
      }
      if (final) replied.add(entry.turn_id!);
      const spent = turnText(entry.usage, final ? entry.duration_ms : undefined);
      if (spent !== null) lines.push({ key: `${key}-usage`, kind: 'usage', text: spent });
    } else lines.push({ key, kind: 'note', text: entry.content });
  }
  return lines;
}

/** A prompt as shown: its text blocks as the text, its files beside it; a prompt of text alone, its text. */
function promptOf(entry: HistoryEntry): { text: string; parts?: MessagePart[] } {
  if (entry.parts === undefined) return { text: entry.content };
  const text = entry.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  return { text, parts: entry.parts };
}

/** The lines of the turns still streaming (or ended and not yet in the history). */
export function liveLines(live: readonly LiveTurn[], replied: ReadonlySet<string>): Line[] {
  const lines: Line[] = [];
  for (const turn of live) {
    if (replied.has(turn.turnId)) continue;
    const key = `l${turn.turnId}`;
    if (turn.reasoning !== '') lines.push({ key: `${key}-reasoning`, kind: 'reasoning', text: turn.reasoning });
    for (const tool of turn.tools) {
      const call = `→ ${tool.name}(${tool.args})`;
      const outcome = tool.outcome;
      const state = outcome === undefined ? 'running' : outcome.ok ? 'ok' : 'failed';
      const parts = tool.parts === undefined ? {} : { parts: tool.parts };
      lines.push(toolLine(`t${tool.id}`, { id: tool.id, name: tool.name, state, detail: outcome === undefined ? call : `${call}\n← ${tool.name} ${state}: ${outcome.summary}`, ...parts }));
    }
    turn.reply.done.forEach((block, i) => lines.push({ key: `${key}-reply${i}`, kind: 'reply', text: block, ...(i === 0 ? { lead: true } : {}) }));
    if (turn.reply.tail !== '') lines.push({ key: `${key}-reply-open`, kind: 'reply', text: turn.reply.tail, ...(turn.reply.done.length === 0 ? { lead: true } : {}) });
    turn.notes.forEach((note, i) => lines.push({ key: `${key}-note${i}`, kind: 'note', text: note }));
    const spent = turnText(turn.usage, turn.durationMs);
    if (spent !== null) lines.push({ key: `${key}-usage`, kind: 'usage', text: spent });
  }
  return lines;
}

/** A turn's usage and time, on one line; null when it has neither. */
function turnText(usage: Usage | undefined, durationMs: number | undefined): string | null {
  const time = durationMs === undefined ? '' : `${(durationMs / 1000).toFixed(1)} s`;
  if (usage === undefined) return time === '' ? null : `[time] ${time}`;
  const details = [usage.cached_tokens ? `${usage.cached_tokens} cached` : '', usage.reasoning_tokens ? `${usage.reasoning_tokens} reasoning` : ''].filter((d) => d !== '');
  const tokens = `${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens${details.length > 0 ? ` (${details.join(', ')})` : ''}, ${usage.calls} model call${usage.calls === 1 ? '' : 's'}`;
  return `[usage] ${tokens}${time === '' ? '' : ` · ${time}`}`;
}
