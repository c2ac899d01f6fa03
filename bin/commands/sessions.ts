// `turnhost sessions` and `turnhost history ID`: read from the database, daemon up or down.
import { Reader, SESSION_STATUSES, type HistoryEntry, type SessionSummary } from '../../persistence/reader.js';
import type { SessionStatus } from '../../persistence/store.js';
import { homePaths } from '../home.js';
import { printTable } from '../table.js';

export const EXIT_UNKNOWN_SESSION = 4;

export function sessionsCommand(home: string, options: { json?: boolean; status?: string }): number {
  if (options.status !== undefined && !(SESSION_STATUSES as readonly string[]).includes(options.status)) {
    process.stderr.write(`turnhost sessions: --status must be one of ${SESSION_STATUSES.join(', ')}\n`);
    return 2;
  }
  const reader = Reader.open(homePaths(home).database);
  const sessions: SessionSummary[] = reader ? reader.sessions(options.status as SessionStatus | undefined) : [];
  reader?.close();
  if (options.json) {
    process.stdout.write(`${JSON.stringify(sessions)}\n`);
    return 0;
  }
  printTable(
    ['SESSION', 'STATUS', 'REASON', 'MESSAGES', 'VERSION', 'UPDATED'],
    sessions.map((s) => [s.session_id, s.status, s.end_reason ?? s.retained_reason ?? '', s.message_count, s.history_version, s.updated_at]),
  );
  return 0;
}

export function historyCommand(home: string, sid: string, options: { json?: boolean }): number {
  const reader = Reader.open(homePaths(home).database);
  const history: HistoryEntry[] | undefined = reader?.history(sid);
  reader?.close();
  if (history === undefined) {
    process.stderr.write(`turnhost history: unknown session: ${sid}\n`);
    return EXIT_UNKNOWN_SESSION;
  }
  if (options.json) {
    process.stdout.write(`${JSON.stringify(history)}\n`);
    return 0;
  }
  process.stdout.write(formatHistory(history));
  return 0;
}

/** Longest line the plain history prints for a tool call or result (AGENT.md §3). */
const TOOL_LINE_MAX = 200;

/** Plain text: a call as `→ name(arguments)`, a result as `← name: result`, each on one line. */
export function formatHistory(history: readonly HistoryEntry[]): string {
  const toolNames = new Map<string, string>();
  const lines: string[] = [];
  for (const m of history) {
    const prefix = `[${m.seq}] ${m.role}: `;
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
