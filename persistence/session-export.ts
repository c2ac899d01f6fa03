// A session as a file (PROTOCOL.md §2.3): JSON lines, first `{"format": "turnhost-session/1",
// session}`, then every turn and message of its history in order, the superseded ones too (each
// with the number of the path it was left on, `branch`), each turn before its first message and
// with its usage. Not the guest's own memory. Read here from either store (readExport), checked
// whole before anything is written (parseExport): a bad line is refused naming its number, and a
// file of a newer format by its name. The import writes it as a new session (importRows).
// A session that carries files (PROTOCOL.md §2.4) is written `turnhost-session/2`: each file a line of
// its own (`{blob: {sha256, mimeType, size, name, data}}`) before the first message that names it,
// its messages with their `parts`; one without is written /1, which older builds read. Both are read.
import { createHash } from 'node:crypto';
import type { ToolCall } from '../protocol/chat.js';
import { blobHex, checkedParts, isBlobRef, type MessagePart } from '../protocol/content.js';
import { BLOB_NAME_SQL, CONTENT_CHUNKS_SQL, contentStatements, wholeContent } from './blobs.js';
import { isRecord, type UnknownRecord } from '../protocol/fields.js';
import { HISTORY_COLUMNS, LINE_HISTORY_SQL, mergeSuperseded, SUPERSEDED_SQL, type HistoryRow, type SupersededRow } from './history-rows.js';

export const EXPORT_FORMAT = 'turnhost-session/1';
/** The format of a session with files. */
export const EXPORT_FORMAT_FILES = 'turnhost-session/2';
const FORMAT_VERSION = 2;

/** The columns of a turn the file keeps. */
export const EXPORT_TURN_COLUMNS =
  'turn_id, status, by_user, started_at, ended_at, error, model, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, model_calls, superseded_at, superseded_by';

const SESSION_SQL = `SELECT sid, status, end_reason, created_at, updated_at, agent, overrides, forked_from_sid, forked_from_turn
  FROM sessions WHERE sid = $1 AND branch_of IS NULL`;

type Count = number | string | null;

export interface ExportTurnRow {
  turn_id: string;
  status: string;
  by_user: string | null;
  started_at: Count;
  ended_at: Count;
  error: string | null;
  model: string | null;
  prompt_tokens: Count;
  completion_tokens: Count;
  cached_tokens: Count;
  reasoning_tokens: Count;
  model_calls: Count;
  superseded_at: Count;
  superseded_by: string | null;
}

/** What a store answers for an export: rows of a statement, and turns by id. */
export interface ExportSource {
  rows<R>(sql: string, params: unknown[]): Promise<R[]>;
  turns(ids: readonly string[]): Promise<ExportTurnRow[]>;
}

export interface ExportedSession {
  session_id: string;
  status: string;
  end_reason: string | null;
  created_at: string;
  updated_at: string;
  agent: string | null;
  /** The session's settings (its model, personality, prompt), as stored. */
  overrides: string;
  forked_from: { session_id: string; turn_id: string | null } | null;
  exported_at: string;
}

export interface ExportedTurn {
  turn_id: string;
  status: string;
  by: string | null;
  started_at: string | null;
  ended_at: string | null;
  error: string | null;
  model: string | null;
  usage: { prompt_tokens: number; completion_tokens: number; cached_tokens: number | null; reasoning_tokens: number | null; calls: number } | null;
  superseded_at: string | null;
  superseded_by: string | null;
}

export interface ExportedMessage {
  seq: number;
  role: string;
  content: string;
  turn_id: string | null;
  at: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** What it carries beyond text (PROTOCOL.md §2.4); its files are `blob` lines before it. */
  parts?: MessagePart[];
  /** On a message of a superseded path: that path's number in the file, from 1. */
  branch?: number;
}

/** A file a message names: its bytes, base64. */
export interface ExportedBlob {
  sha256: string;
  mimeType: string;
  size: number;
  name: string | null;
  data: string;
}

export type ExportLine = { format: string; session: ExportedSession } | { turn: ExportedTurn } | { blob: ExportedBlob } | { message: ExportedMessage };

/** A file of the session, with its bytes: what a blob line holds. */
const SESSION_BLOB_SQL = `SELECT b.mime_type, b.size, b.name, c.bytes FROM session_blobs b JOIN home_contents c ON c.sha256 = b.sha256
  WHERE b.sid = $1 AND b.sha256 = $2`;

/** The blobs a message's parts name, as hex. */
function namedBlobs(message: ExportedMessage): string[] {
  return (message.parts ?? []).flatMap((part) => ('blob' in part && typeof part.blob === 'string' ? [blobHex(part.blob)] : []));
}

/** The session's lines, in order; undefined when it is not there. */
export async function readExport(source: ExportSource, sid: string, now = Date.now()): Promise<ExportLine[] | undefined> {
  const [row] = await source.rows<{
    sid: string;
    status: string;
    end_reason: string | null;
    created_at: Count;
    updated_at: Count;
    agent: string | null;
    overrides: string;
    forked_from_sid: string | null;
    forked_from_turn: string | null;
  }>(SESSION_SQL, [sid]);
  if (row === undefined) return undefined;
  const live = (await source.rows<HistoryRow>(LINE_HISTORY_SQL, [sid])).map((m) => exportedMessage(m));
  const branches = new Map<string, ExportedMessage[]>();
  for (const m of await source.rows<SupersededRow>(SUPERSEDED_SQL, [sid])) {
    const path = branches.get(m.branch) ?? [];
    if (path.length === 0) branches.set(m.branch, path);
    path.push(exportedMessage(m, branches.size));
  }
  const messages = mergeSuperseded(live, [...branches.values()], (m) => m.branch !== undefined);
  const ids = [...new Set(messages.map((m) => m.turn_id).filter((id): id is string => id !== null))];
  const turns = new Map((await source.turns(ids)).map((t) => [t.turn_id, exportedTurn(t)]));
  // Its format is /2 once a file line follows (below).
  const header = {
    format: EXPORT_FORMAT,
    session: {
      session_id: row.sid,
      status: row.status,
      end_reason: row.end_reason,
      created_at: iso(row.created_at)!,
      updated_at: iso(row.updated_at)!,
      agent: row.agent,
      overrides: row.overrides,
      forked_from: row.forked_from_sid === null ? null : { session_id: row.forked_from_sid, turn_id: row.forked_from_turn },
      exported_at: new Date(now).toISOString(),
    },
  };
  const lines: ExportLine[] = [header];
  const written = new Set<string>();
  for (const message of messages) {
    const turn = message.turn_id === null ? undefined : turns.get(message.turn_id);
    if (turn !== undefined && !written.has(turn.turn_id)) {
      written.add(turn.turn_id);
      lines.push({ turn });
    }
    for (const hex of namedBlobs(message)) {
      if (written.has(hex)) continue;
      written.add(hex);
      const [file] = await source.rows<{ mime_type: string; size: Count; name: string | null; bytes: Buffer | Uint8Array }>(SESSION_BLOB_SQL, [sid, hex]);
      // A file the session no longer holds (freed with another session that named it): the message keeps its text form.
      if (file === undefined) continue;
      const chunks = await source.rows<{ bytes: Buffer | Uint8Array }>(CONTENT_CHUNKS_SQL, [hex]);
      const bytes = wholeContent(file.bytes, chunks.map((chunk) => chunk.bytes));
      lines.push({ blob: { sha256: `sha256:${hex}`, mimeType: file.mime_type, size: Number(file.size), name: file.name, data: bytes.toString('base64') } });
      header.format = EXPORT_FORMAT_FILES;
    }
    lines.push({ message });
  }
  return lines;
}

function exportedMessage(row: HistoryRow, branch?: number): ExportedMessage {
  const message: ExportedMessage = { seq: Number(row.seq), role: row.role, content: row.content, turn_id: row.turn_id, at: iso(row.created_at)! };
  if (row.tool_calls !== null) message.tool_calls = JSON.parse(row.tool_calls) as ToolCall[];
  if (row.tool_call_id !== null) message.tool_call_id = row.tool_call_id;
  if (row.parts !== null) message.parts = checkedParts(JSON.parse(row.parts));
  if (branch !== undefined) message.branch = branch;
  return message;
}

function exportedTurn(t: ExportTurnRow): ExportedTurn {
  const count = (value: Count) => (value === null ? null : Number(value));
  return {
    turn_id: t.turn_id,
    status: t.status,
    by: t.by_user,
    started_at: iso(t.started_at),
    ended_at: iso(t.ended_at),
    error: t.error,
    model: t.model,
    usage:
      t.model_calls === null
        ? null
        : {
            prompt_tokens: Number(t.prompt_tokens ?? 0),
            completion_tokens: Number(t.completion_tokens ?? 0),
            cached_tokens: count(t.cached_tokens),
            reasoning_tokens: count(t.reasoning_tokens),
            calls: Number(t.model_calls),
          },
    superseded_at: iso(t.superseded_at),
    superseded_by: t.superseded_by,
  };
}

function iso(ms: Count): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

/** A file that cannot be imported: the line (from 1) and what is wrong with it. */
export class ImportError extends Error {
  constructor(
    readonly line: number,
    problem: string,
  ) {
    super(line === 0 ? problem : `line ${line}: ${problem}`);
  }
}

/** A file read and checked whole: what an import writes. */
export interface ImportPlan {
  source: ExportedSession;
  turns: ExportedTurn[];
  /** The session's line, seq 0, 1, …. */
  live: ExportedMessage[];
  /** Each superseded path, in the file's order (branch 1, 2, …). */
  branches: ExportedMessage[][];
  messageCount: number;
  /** The files its messages name, checked against their hashes. */
  blobs: ImportedBlob[];
}

/** A file of an import, decoded and checked. */
export interface ImportedBlob {
  sha256: string;
  mimeType: string;
  size: number;
  name: string | null;
  bytes: Buffer;
}

/** The file's lines checked whole; throws ImportError at the first that is not right. */
export function parseExport(text: string): ImportPlan {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) throw new ImportError(0, 'the file is empty');
  const source = headerOf(lines[0]!);
  const plan: ImportPlan = { source, turns: [], live: [], branches: [], messageCount: 0, blobs: [] };
  const turnIds = new Set<string>();
  const blobs = new Set<string>();
  for (let i = 1; i < lines.length; i++) {
    const number = i + 1;
    const record = recordOf(lines[i]!, number);
    if ('turn' in record) {
      const turn = turnOf(record['turn'], number);
      if (turnIds.has(turn.turn_id)) throw new ImportError(number, `turn ${turn.turn_id} is in the file twice`);
      turnIds.add(turn.turn_id);
      plan.turns.push(turn);
    } else if ('blob' in record) {
      const blob = blobOf(record['blob'], number);
      if (!blobs.has(blob.sha256)) plan.blobs.push(blob);
      blobs.add(blob.sha256);
    } else if ('message' in record) {
      const message = messageOf(record['message'], number);
      if (message.turn_id !== null && !turnIds.has(message.turn_id)) throw new ImportError(number, `message ${message.seq} names turn ${message.turn_id}, which no line before it gives`);
      const missing = namedBlobs(message).find((hex) => !blobs.has(hex));
      if (missing !== undefined) throw new ImportError(number, `message ${message.seq} names the file sha256:${missing}, which no line before it gives`);
      placeMessage(plan, message, number);
    } else {
      throw new ImportError(number, 'expected {"turn": …}, {"blob": …} or {"message": …}');
    }
  }
  plan.messageCount = plan.live.length + plan.branches.reduce((sum, path) => sum + path.length, 0);
  return plan;
}

function headerOf(line: string): ExportedSession {
  const record = recordOf(line, 1);
  const format = record['format'];
  if (typeof format !== 'string') throw new ImportError(1, `not a turnhost session file: the first line has no "format" (expected "${EXPORT_FORMAT}")`);
  const version = /^turnhost-session\/(\d+)$/.exec(format);
  if (version === null) throw new ImportError(1, `not a turnhost session file: format "${format}" (expected "${EXPORT_FORMAT}")`);
  if (Number(version[1]) > FORMAT_VERSION) throw new ImportError(1, `the file is ${format}, newer than this turnhost reads (${EXPORT_FORMAT_FILES}): import it with a newer turnhost`);
  if (format !== EXPORT_FORMAT && format !== EXPORT_FORMAT_FILES) throw new ImportError(1, `format "${format}" is not one this turnhost reads (${EXPORT_FORMAT}, ${EXPORT_FORMAT_FILES})`);
  const s = record['session'];
  if (!isRecord(s)) throw new ImportError(1, '"session" must be an object');
  return {
    session_id: field(s, 'session_id', 'string', 1),
    status: field(s, 'status', 'string', 1),
    end_reason: nullable(s, 'end_reason', 'string', 1),
    created_at: time(s, 'created_at', 1),
    updated_at: time(s, 'updated_at', 1),
    agent: nullable(s, 'agent', 'string', 1),
    overrides: field(s, 'overrides', 'string', 1),
    forked_from: isRecord(s['forked_from']) ? { session_id: String(s['forked_from']['session_id']), turn_id: (s['forked_from']['turn_id'] as string | null) ?? null } : null,
    exported_at: time(s, 'exported_at', 1),
  };
}

function recordOf(line: string, number: number): UnknownRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (err) {
    throw new ImportError(number, `not JSON (${(err as Error).message})`);
  }
  if (!isRecord(value)) throw new ImportError(number, 'not a JSON object');
  return value;
}

function turnOf(value: unknown, number: number): ExportedTurn {
  if (!isRecord(value)) throw new ImportError(number, '"turn" must be an object');
  const usage = value['usage'];
  if (usage !== null && usage !== undefined && !isRecord(usage)) throw new ImportError(number, 'usage must be an object or null');
  return {
    turn_id: identifier(value, 'turn_id', number),
    status: oneOf(value, 'status', ['running', 'completed', 'interrupted', 'failed', 'lost'], number),
    by: nullable(value, 'by', 'string', number),
    started_at: nullableTime(value, 'started_at', number),
    ended_at: nullableTime(value, 'ended_at', number),
    error: nullable(value, 'error', 'string', number),
    model: nullable(value, 'model', 'string', number),
    usage: isRecord(usage)
      ? {
          prompt_tokens: count(usage, 'prompt_tokens', number),
          completion_tokens: count(usage, 'completion_tokens', number),
          cached_tokens: usage['cached_tokens'] === null || usage['cached_tokens'] === undefined ? null : count(usage, 'cached_tokens', number),
          reasoning_tokens: usage['reasoning_tokens'] === null || usage['reasoning_tokens'] === undefined ? null : count(usage, 'reasoning_tokens', number),
          calls: count(usage, 'calls', number),
        }
      : null,
    superseded_at: nullableTime(value, 'superseded_at', number),
    superseded_by: nullable(value, 'superseded_by', 'string', number),
  };
}

function messageOf(value: unknown, number: number): ExportedMessage {
  if (!isRecord(value)) throw new ImportError(number, '"message" must be an object');
  const message: ExportedMessage = {
    seq: count(value, 'seq', number),
    role: field(value, 'role', 'string', number),
    content: field(value, 'content', 'string', number),
    turn_id: value['turn_id'] === null ? null : identifier(value, 'turn_id', number),
    at: time(value, 'at', number),
  };
  if (value['tool_calls'] !== undefined) {
    if (!Array.isArray(value['tool_calls'])) throw new ImportError(number, 'tool_calls must be an array');
    message.tool_calls = value['tool_calls'] as ToolCall[];
  }
  if (value['tool_call_id'] !== undefined) message.tool_call_id = field(value, 'tool_call_id', 'string', number);
  if (value['parts'] !== undefined) {
    if (!Array.isArray(value['parts'])) throw new ImportError(number, 'parts must be an array');
    message.parts = checkedParts(value['parts']);
  }
  if (value['branch'] !== undefined) {
    message.branch = count(value, 'branch', number);
    if (message.branch < 1) throw new ImportError(number, 'branch must be 1 or more');
  }
  return message;
}

/** A blob line: its bytes decode to what its hash and size say. */
function blobOf(value: unknown, number: number): ImportedBlob {
  if (!isRecord(value)) throw new ImportError(number, '"blob" must be an object');
  const ref = field(value, 'sha256', 'string', number);
  if (!isBlobRef(ref)) throw new ImportError(number, 'sha256 must be "sha256:" and 64 lowercase hex digits');
  const bytes = Buffer.from(field(value, 'data', 'string', number), 'base64');
  if (createHash('sha256').update(bytes).digest('hex') !== blobHex(ref)) throw new ImportError(number, `the file's bytes are not ${ref}`);
  return { sha256: blobHex(ref), mimeType: field(value, 'mimeType', 'string', number), size: bytes.length, name: nullable(value, 'name', 'string', number), bytes };
}

/** The live line is 0, 1, 2, …; each superseded path rises, and a path's number is the next or one seen. */
function placeMessage(plan: ImportPlan, message: ExportedMessage, number: number): void {
  if (message.branch === undefined) {
    if (message.seq !== plan.live.length) throw new ImportError(number, `message ${message.seq} is out of order: the session's line is at ${plan.live.length}`);
    plan.live.push(message);
    return;
  }
  if (message.branch > plan.branches.length + 1) throw new ImportError(number, `branch ${message.branch} comes before branch ${plan.branches.length + 1}`);
  if (message.branch === plan.branches.length + 1) plan.branches.push([]);
  const path = plan.branches[message.branch - 1]!;
  const last = path.at(-1);
  if (last !== undefined && message.seq <= last.seq) throw new ImportError(number, `message ${message.seq} of branch ${message.branch} is out of order`);
  path.push(message);
}

function field(record: UnknownRecord, name: string, type: 'string', number: number): string {
  const value = record[name];
  if (typeof value !== type) throw new ImportError(number, `${name} must be a ${type}`);
  return value as string;
}

function nullable(record: UnknownRecord, name: string, type: 'string', number: number): string | null {
  return record[name] === null || record[name] === undefined ? null : field(record, name, type, number);
}

function identifier(record: UnknownRecord, name: string, number: number): string {
  const value = field(record, name, 'string', number);
  if (value === '' || /[\p{Cc}]/u.test(value)) throw new ImportError(number, `${name} must be a printable id`);
  return value;
}

function oneOf(record: UnknownRecord, name: string, values: readonly string[], number: number): string {
  const value = field(record, name, 'string', number);
  if (!values.includes(value)) throw new ImportError(number, `${name} must be one of ${values.join(', ')}`);
  return value;
}

function count(record: UnknownRecord, name: string, number: number): number {
  const value = record[name];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new ImportError(number, `${name} must be a whole number, 0 or more`);
  return value;
}

function time(record: UnknownRecord, name: string, number: number): string {
  const value = field(record, name, 'string', number);
  if (Number.isNaN(Date.parse(value))) throw new ImportError(number, `${name} must be a time (ISO 8601)`);
  return value;
}

function nullableTime(record: UnknownRecord, name: string, number: number): string | null {
  return record[name] === null || record[name] === undefined ? null : time(record, name, number);
}

/** The rows an import writes, by table, in the order they go (columns as the schema names them). */
export interface ImportRows {
  sessions: unknown[][];
  turns: unknown[][];
  messages: unknown[][];
}

export const IMPORT_COLUMNS = {
  sessions: ['sid', 'session_key', 'status', 'end_reason', 'history_version', 'overrides', 'created_at', 'updated_at', 'parent_sid', 'parent_upto', 'branch_of', 'agent'],
  turns: ['turn_id', 'sid', 'status', 'by_user', 'started_at', 'ended_at', 'error', 'model', 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'reasoning_tokens', 'model_calls', 'superseded_at', 'superseded_by', 'branch_sid'],
  messages: HISTORY_COLUMNS.split(', ').concat('sid'),
} as const;

/**
 * The plan as rows of session `sid`: its line as its own rows (a fork's shared part included: the
 * import stands alone), each superseded path as a branch of it, its turns (one still running in
 * the file is stored lost). `renameTurns`: turn ids already taken in this store are given new ones.
 */
export function importRows(plan: ImportPlan, sid: string, sessionKey: string, now: number, renameTurns: boolean): ImportRows {
  const turnId = (id: string | null) => (id === null || !renameTurns ? id : `imported-${createHash('sha256').update(`${sid}\0${id}`).digest('hex').slice(0, 24)}`);
  const ms = (text: string | null) => (text === null ? null : Date.parse(text));
  const branchIds = plan.branches.map((_, i) => `${sid}~${i + 1}`);
  const branchOfTurn = new Map<string, string>();
  plan.branches.forEach((path, i) => path.forEach((m) => m.turn_id !== null && branchOfTurn.set(m.turn_id, branchIds[i]!)));
  const sessions: unknown[][] = [[sid, sessionKey, 'active', null, 0, plan.source.overrides, now, now, null, null, null, plan.source.agent]];
  // Each branch after the one before: the history lists them by when they were made.
  plan.branches.forEach((path, i) => sessions.push([branchIds[i], sessionKey, 'finalized', 'superseded', 0, plan.source.overrides, now - plan.branches.length + i, now, sid, path[0]!.seq, sid, plan.source.agent]));
  const turns = plan.turns.map((t) => [
    turnId(t.turn_id),
    sid,
    t.status === 'running' ? 'lost' : t.status,
    t.by,
    ms(t.started_at) ?? now,
    ms(t.ended_at),
    t.error,
    t.model,
    t.usage?.prompt_tokens ?? null,
    t.usage?.completion_tokens ?? null,
    t.usage?.cached_tokens ?? null,
    t.usage?.reasoning_tokens ?? null,
    t.usage?.calls ?? null,
    ms(t.superseded_at),
    t.superseded_by,
    branchOfTurn.get(t.turn_id) ?? null,
  ]);
  const messageRow = (m: ExportedMessage, owner: string) => [
    m.seq,
    m.role,
    m.content,
    turnId(m.turn_id),
    m.tool_calls === undefined ? null : JSON.stringify(m.tool_calls),
    m.tool_call_id ?? null,
    m.parts === undefined ? null : JSON.stringify(m.parts),
    ms(m.at),
    owner,
  ];
  const messages = [...plan.live.map((m) => messageRow(m, sid)), ...plan.branches.flatMap((path, i) => path.map((m) => messageRow(m, branchIds[i]!)))];
  return { sessions, turns, messages };
}

/** An import's new session: its id and key, and who owns it (null: the home's owner). */
export interface ImportRequest {
  sid: string;
  sessionKey: string;
  owner: string | null;
}

export interface ImportMade {
  session_id: string;
  messages: number;
  turns: number;
  /** `renamed`: this store already held the file's turn ids (the session was exported from it), so its turns have new ones. */
  turn_ids: 'kept' | 'renamed';
}

/** The new session's id is taken, or was a deleted session's. */
export class ImportRefused extends Error {}

/** The checks both stores make in the import's transaction, before any row. */
export const IMPORT_CHECK_SQL = {
  taken: 'SELECT 1 AS taken FROM sessions WHERE sid = $1 UNION ALL SELECT 1 FROM deleted_sessions WHERE sid = $1',
  owner: "INSERT INTO session_access (sid, user_name, role) VALUES ($1, $2, 'owner')",
} as const;

/** An import's files, as the statements and their parameters both stores run after its rows (persistence/blobs.ts). */
export function importedBlobStatements(plan: ImportPlan, sid: string, now: number): { sql: string; params: unknown[] }[] {
  return plan.blobs.flatMap((blob) => [
    ...contentStatements(blob.sha256, blob.bytes),
    { sql: BLOB_NAME_SQL, params: [sid, blob.sha256, blob.mimeType, blob.size, blob.name, now] },
  ]);
}

export function importRefusal(sid: string): ImportRefused {
  return new ImportRefused(`the session id ${sid} is taken (or was a deleted session's)`);
}

export function importMade(plan: ImportPlan, sid: string, renamed: boolean): ImportMade {
  return { session_id: sid, messages: plan.messageCount, turns: plan.turns.length, turn_ids: renamed ? 'renamed' : 'kept' };
}
