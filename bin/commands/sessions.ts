// `turnhost sessions` and `turnhost history ID`: read from the database, daemon up or down.
import { SESSION_STATUSES, type Reader } from '../../persistence/reader.js';
import { type HistoryEntry } from '../../protocol/history-entry.js';
import { storeLocation } from '../../persistence/store-location.js';
import { openReader } from '../../persistence/open-store.js';
import type { SessionStatus } from '../../persistence/store.js';
import { homePaths } from '../../protocol/home-paths.js';
import { printTable } from '../table.js';

export const EXIT_UNKNOWN_SESSION = 4;

export async function sessionsCommand(home: string, options: { json?: boolean; status?: string; archived?: boolean; store?: string }): Promise<number> {
  if (options.status !== undefined && !(SESSION_STATUSES as readonly string[]).includes(options.status)) {
    process.stderr.write(`turnhost sessions: --status must be one of ${SESSION_STATUSES.join(', ')}\n`);
    return 2;
  }
  const sessions = await readStore('sessions', home, options.store, (reader) => reader.sessions(options.status as SessionStatus | undefined, options.archived === true));
  if (sessions instanceof Error) return 1;
  if (options.json) {
    // PROTOCOL.md §3's keys, and no others: a list's first prompts are the page's, not this format's.
    const summaries = (sessions ?? []).map(({ first_prompt: _title, forked_from: _fork, archived: _archived, pinned: _pinned, ...summary }) => summary);
    process.stdout.write(`${JSON.stringify(summaries)}\n`);
    return 0;
  }
  printTable(
    ['SESSION', 'STATUS', 'REASON', 'MESSAGES', 'VERSION', 'UPDATED', 'MARKS'],
    (sessions ?? []).map((s) => [s.session_id, s.status, s.end_reason ?? s.retained_reason ?? '', s.message_count, s.history_version, s.updated_at, marksOf(s)]),
  );
  return 0;
}

/** Archived and pinned (PROTOCOL.md §2.3), as the table shows them. */
function marksOf(s: { archived: boolean; pinned: boolean }): string {
  return [s.archived ? 'archived' : '', s.pinned ? 'pinned' : ''].filter((mark) => mark !== '').join(',');
}

export async function historyCommand(home: string, sid: string, options: { json?: boolean; all?: boolean; store?: string }): Promise<number> {
  const history = await readStore('history', home, options.store, (reader) => reader.history(sid, { all: options.all === true }));
  if (history instanceof Error) return 1;
  if (history === undefined || history === null) {
    process.stderr.write(`turnhost history: unknown session: ${sid}\n`);
    return EXIT_UNKNOWN_SESSION;
  }
  if (options.json) {
    // PROTOCOL.md §3's keys: a turn's time and a message's are for the page (session.history), as a session's title is.
    process.stdout.write(`${JSON.stringify(history.map(({ duration_ms: _time, at: _at, ...message }) => message))}\n`);
    return 0;
  }
  process.stdout.write(formatHistory(history));
  return 0;
}

/**
 * One read of the store, or null when there is nothing to read yet. A store that cannot be read is
 * one line on stderr (the URL without its password) and an Error back.
 */
async function readStore<T>(command: string, home: string, store: string | undefined, read: (reader: Reader) => Promise<T>): Promise<T | null | Error> {
  let reader: Reader | null = null;
  try {
    reader = await openReader(storeLocation(store, homePaths(home).database));
    return reader === null ? null : await read(reader);
  } catch (err) {
    process.stderr.write(`turnhost ${command}: ${(err as Error).message}\n`);
    return err as Error;
  } finally {
    await reader?.close();
  }
}

/** Longest line the plain history prints for a tool call or result (AGENT.md §3). */
const TOOL_LINE_MAX = 200;

/** Plain text: a call as `→ name(arguments)`, a result as `← name: result`, each on one line. */
export function formatHistory(history: readonly HistoryEntry[]): string {
  const toolNames = new Map<string, string>();
  const lines: string[] = [];
  let branch: string | undefined;
  for (const m of history) {
    // A superseded path (history --all) is folded under a line saying when and by whom it was left.
    const left = m.superseded === true ? `${m.superseded_at ?? ''} ${m.superseded_by ?? ''}` : undefined;
    if (left !== undefined && left !== branch) lines.push(`  ~ superseded${m.superseded_at ? ` ${m.superseded_at}` : ''}${m.superseded_by ? ` by ${m.superseded_by}` : ''}:`);
    branch = left;
    const prefix = `${m.superseded === true ? '  ~ ' : ''}[${m.seq}] ${m.role}: `;
    if (m.role === 'tool') {
      const name = toolNames.get(m.tool_call_id ?? '') ?? 'tool';
      lines.push(prefix + oneLine(`← ${name}: ${m.content}`));
      continue;
    }
    if (m.content !== '' || m.tool_calls === undefined) lines.push(prefix + m.content + usageNote(m));
    for (const call of m.tool_calls ?? []) {
      toolNames.set(call.id, call.function.name);
      lines.push(prefix + oneLine(`→ ${call.function.name}(${call.function.arguments})`));
    }
  }
  return lines.map((line) => `${line}\n`).join('');
}

function oneLine(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, ' ');
  return flat.length > TOOL_LINE_MAX ? `${flat.slice(0, TOOL_LINE_MAX - 1)}…` : flat;
}

function usageNote(m: HistoryEntry): string {
  if (m.usage === undefined) return '';
  const u = m.usage;
  return `  [${m.model ?? 'model'}: ${u.prompt_tokens} prompt + ${u.completion_tokens} completion tokens, ${u.calls} call${u.calls === 1 ? '' : 's'}]`;
}
