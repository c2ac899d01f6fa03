// The ledger (PROTOCOL.md §5.7): what each turn spent, stored with the turn, and what a person may
// spend in a UTC day. A turn's row holds its own usage; `usage_daily` sums the ended turns by day,
// person, session and model, written in the same commit as the turn's end (or its loss), so a
// year of a busy team reads as a few thousand rows, not a million. A turn counts on the day it
// started. The SQL is the same for SQLite and PostgreSQL (`$n` parameters, bound by number).
import type { BudgetRefusal } from '../protocol/outbound.js';
import type { SessionUsage, TurnLedgerRow, UsageGroup, UsageRow, UsageTotals } from '../protocol/usage.js';
import { OWNER } from './people.js';

export const DAY_MS = 86_400_000;

export interface UsageQuery {
  by: UsageGroup;
  /** First and last UTC day, inclusive, as `YYYY-MM-DD`; null: unbounded. */
  since: string | null;
  until: string | null;
  /** A member's view: only the sessions this person owns. Null: everyone's (an admin). */
  ownedBy: string | null;
}

/** A person's limits per UTC day; null: no limit of that kind. */
export interface Budget {
  tokens_per_day: number | null;
  turns_per_day: number | null;
}

/** The name the default budget is stored under: never a user's (validUserName refuses it). */
export const DEFAULT_BUDGET = '*';

export interface BudgetRow extends Budget {
  /** A user's name, or DEFAULT_BUDGET. */
  user_name: string;
}

/** What a budget check found over: the limit, what was used, and when the day resets. */
export interface BudgetExceeded {
  which: 'tokens' | 'turns';
  limit: number;
  used: number;
  resets_at: number;
}

/** The daemon's and the CLI's side of the ledger (persistence/side-store.ts). */
export interface Ledger {
  usage(query: UsageQuery): Promise<UsageRow[]>;
  sessionUsage(sid: string): Promise<SessionUsage>;
  budgets(): Promise<BudgetRow[]>;
  /** Null removes the person's budget (the default then applies to a member). */
  setBudget(userName: string, budget: Budget | null, now?: number): Promise<void>;
  overBudget(person: string, now?: number): Promise<BudgetExceeded | null>;
}

/** The UTC day a time falls in, as the ledger counts days. */
export function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

export function dayDate(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` as a ledger day; null when it is not a real date. */
export function parseDay(text: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) || dayDate(dayOf(ms)) !== text ? null : dayOf(ms);
}

const SUMS = ['turns', 'prompt_tokens', 'completion_tokens', 'cached_tokens', 'reasoning_tokens', 'calls', 'duration_ms'] as const;

/**
 * Adds the turns `where` selects to the daily sums; `endedAt`: the column or parameter their end
 * time is. Grouped first: one statement may add several turns to one row (PostgreSQL's upsert
 * refuses to touch a row twice).
 */
function rollUpSql(where: string, endedAt: string): string {
  return `INSERT INTO usage_daily (day, by_user, sid, model, ${SUMS.join(', ')})
  SELECT started_at / ${DAY_MS}, COALESCE(by_user, '${OWNER}'), sid, COALESCE(model, ''), COUNT(*),
    SUM(COALESCE(prompt_tokens, 0)), SUM(COALESCE(completion_tokens, 0)), SUM(COALESCE(cached_tokens, 0)),
    SUM(COALESCE(reasoning_tokens, 0)), SUM(COALESCE(model_calls, 0)),
    SUM(CASE WHEN ${endedAt} > started_at THEN ${endedAt} - started_at ELSE 0 END)
  FROM turns WHERE ${where}
  GROUP BY started_at / ${DAY_MS}, COALESCE(by_user, '${OWNER}'), sid, COALESCE(model, '')
  ON CONFLICT (day, by_user, sid, model) DO UPDATE SET ${SUMS.map((c) => `${c} = usage_daily.${c} + excluded.${c}`).join(', ')}`;
}

/** The writer's statements of the ledger, with the turn's. */
export const LEDGER_SQL = {
  /** A running turn's usage so far (saved with its tail), so that its loss keeps it. */
  noteUsage: `UPDATE turns SET model = $1, prompt_tokens = $2, completion_tokens = $3, cached_tokens = $4, reasoning_tokens = $5, model_calls = $6
    WHERE turn_id = $7 AND status = 'running'`,
  /** An ended turn joins the sums, in the commit of its end. */
  rollUpTurn: rollUpSql('turn_id = $1', 'ended_at'),
} as const;

/** The turns that ended before the ledger's sums existed (the migration that made them). */
export const ROLL_UP_ENDED_SQL = rollUpSql("status <> 'running'", 'ended_at');
/** Before the running turns are marked lost (`$1`: now): they join the sums as they are. */
export const ROLL_UP_LOST_SQL = rollUpSql("status = 'running'", 'CAST($1 AS BIGINT)');
/** The same for one session's (`$2`) running turns, when another node takes it over. */
export const ROLL_UP_SESSION_LOST_SQL = rollUpSql("sid = $2 AND status = 'running'", 'CAST($1 AS BIGINT)');

/**
 * The group's column; a session's agent (AGENT.md §8) is its session row's, fixed for its life ('':
 * a session stored before there were several agents, or one no longer stored).
 */
const KEY_OF: Record<UsageGroup, string> = {
  person: 'by_user',
  session: 'sid',
  model: 'model',
  agent: "COALESCE((SELECT s.agent FROM sessions s WHERE s.sid = usage_daily.sid), '')",
  day: 'day',
};

/**
 * Totals grouped by `by`, largest token count first (by day: in date order); `$1`, `$2`: the first
 * and last day (null: unbounded); `$3`: the member whose own sessions only are read (null: all).
 */
export function usageSql(by: UsageGroup): string {
  const key = KEY_OF[by];
  return `SELECT ${key} AS key, ${SUMS.map((c) => `SUM(${c}) AS ${c}`).join(', ')} FROM usage_daily
  WHERE (CAST($1 AS BIGINT) IS NULL OR day >= $1) AND (CAST($2 AS BIGINT) IS NULL OR day <= $2)
    AND (CAST($3 AS TEXT) IS NULL OR sid IN (SELECT sid FROM session_access WHERE user_name = $3 AND role = 'owner'))
  GROUP BY ${key} ORDER BY ${by === 'day' ? 'key' : 'SUM(prompt_tokens) + SUM(completion_tokens) DESC, key'}`;
}

/**
 * A session's turns with what each spent, in order, those a rewind superseded too (they were
 * spent); the session's total is their sum. Found through their messages (each turn's prompt is
 * one): a turn's own row has no index by session, which every turn would pay to write.
 */
export const SESSION_TURNS_SQL = `SELECT turn_id, COALESCE(by_user, '${OWNER}') AS "by", status, model, started_at,
  CASE WHEN ended_at IS NULL THEN NULL ELSE ended_at - started_at END AS duration_ms,
  COALESCE(prompt_tokens, 0) AS prompt_tokens, COALESCE(completion_tokens, 0) AS completion_tokens,
  COALESCE(cached_tokens, 0) AS cached_tokens, COALESCE(reasoning_tokens, 0) AS reasoning_tokens, COALESCE(model_calls, 0) AS calls
  FROM turns WHERE turn_id IN (
    SELECT turn_id FROM messages WHERE sid = $1 OR sid IN (SELECT sid FROM sessions WHERE branch_of = $1)
  ) ORDER BY started_at, turn_id`;

/** The budget that applies to `$1`: their own, else the default for a member (an admin has none by default). */
export const BUDGET_OF_SQL = `SELECT tokens_per_day, turns_per_day FROM budgets WHERE user_name = $1
  UNION ALL
  SELECT tokens_per_day, turns_per_day FROM budgets WHERE user_name = '${DEFAULT_BUDGET}'
    AND NOT EXISTS (SELECT 1 FROM budgets WHERE user_name = $1)
    AND EXISTS (SELECT 1 FROM users WHERE name = $1 AND NOT admin)`;

/** What `$1` spent on day `$2` (ended turns), and how many of their turns run now (anywhere in a cluster). */
export const SPENT_SQL = `SELECT
  (SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM usage_daily WHERE day = $2 AND by_user = $1) AS tokens,
  (SELECT COALESCE(SUM(turns), 0) FROM usage_daily WHERE day = $2 AND by_user = $1) AS ended,
  (SELECT COUNT(*) FROM turns WHERE status = 'running' AND by_user = $1) AS running`;

/** Over a budget or not: a turn starts when both counts are under their limits. */
export function overBudget(budget: Budget, spent: { tokens: number; turns: number }, now: number): BudgetExceeded | null {
  const resets_at = (dayOf(now) + 1) * DAY_MS;
  if (budget.tokens_per_day !== null && spent.tokens >= budget.tokens_per_day) return { which: 'tokens', limit: budget.tokens_per_day, used: spent.tokens, resets_at };
  if (budget.turns_per_day !== null && spent.turns >= budget.turns_per_day) return { which: 'turns', limit: budget.turns_per_day, used: spent.turns, resets_at };
  return null;
}

/** 4029's `data`. */
export function budgetRefusal(over: BudgetExceeded): BudgetRefusal {
  return { budget: over.which === 'tokens' ? 'tokens_per_day' : 'turns_per_day', limit: over.limit, used: over.used, resets_at: new Date(over.resets_at).toISOString() };
}

/** The 4029 message (PROTOCOL.md §5.7). */
export function budgetMessage(over: BudgetExceeded): string {
  return `budget exceeded: ${over.which} per day (${over.used} of ${over.limit}), resets at ${new Date(over.resets_at).toISOString()}`;
}

const TURN_COUNTS = ['prompt_tokens', 'completion_tokens', 'cached_tokens', 'reasoning_tokens', 'calls'] as const;

/** Rows as a store reads them, with `keys` as numbers: PostgreSQL's bigints arrive as strings (a null stays null). */
function withNumbers<T extends object>(row: T, keys: readonly string[]): T {
  const out: Record<string, unknown> = { ...(row as Record<string, unknown>) };
  for (const key of keys) out[key] = out[key] === null ? null : Number(out[key] ?? 0);
  return out as T;
}

function sumTurns(turns: readonly TurnLedgerRow[]): UsageTotals {
  const total: UsageTotals = { turns: turns.length, prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, calls: 0, duration_ms: 0 };
  for (const turn of turns) {
    for (const c of TURN_COUNTS) total[c] += turn[c];
    total.duration_ms += turn.duration_ms ?? 0;
  }
  return total;
}

/** A query with `$n` parameters, bound by number, answering its rows (none for a write): each store's own. */
export type NumberedQuery = <R>(sql: string, params: readonly unknown[]) => Promise<R[]>;

/** The budget `person` is over now, if any: the host asks at each turn's start, the daemon before a retry or an edit rewinds. */
export async function checkBudget(query: NumberedQuery, person: string, now: number): Promise<BudgetExceeded | null> {
  const [budget] = await query<Budget>(BUDGET_OF_SQL, [person]);
  if (budget === undefined) return null;
  const [spent] = await query<{ tokens: unknown; ended: unknown; running: unknown }>(SPENT_SQL, [person, dayOf(now)]);
  const limits = { tokens_per_day: nullableCount(budget.tokens_per_day), turns_per_day: nullableCount(budget.turns_per_day) };
  return overBudget(limits, { tokens: Number(spent?.tokens ?? 0), turns: Number(spent?.ended ?? 0) + Number(spent?.running ?? 0) }, now);
}

const nullableCount = (n: unknown): number | null => (n === null || n === undefined ? null : Number(n));

const SET_BUDGET_SQL = `INSERT INTO budgets (user_name, tokens_per_day, turns_per_day, updated_at) VALUES ($1, $2, $3, $4)
  ON CONFLICT (user_name) DO UPDATE SET tokens_per_day = excluded.tokens_per_day, turns_per_day = excluded.turns_per_day, updated_at = excluded.updated_at`;

/** The ledger on either store, through its query. */
export class SqlLedger implements Ledger {
  constructor(private readonly query: NumberedQuery) {}

  async usage(q: UsageQuery): Promise<UsageRow[]> {
    const since = q.since === null ? null : parseDay(q.since);
    const until = q.until === null ? null : parseDay(q.until);
    const rows = await this.query<UsageRow>(usageSql(q.by), [since, until, q.ownedBy]);
    return rows.map((row) => ({ ...withNumbers(row, SUMS), key: q.by === 'day' ? dayDate(Number(row.key)) : String(row.key) }));
  }

  async sessionUsage(sid: string): Promise<SessionUsage> {
    const turns = (await this.query<TurnLedgerRow>(SESSION_TURNS_SQL, [sid])).map((row) => withNumbers(row, [...TURN_COUNTS, 'started_at', 'duration_ms']));
    return { session_id: sid, total: sumTurns(turns), turns };
  }

  async budgets(): Promise<BudgetRow[]> {
    const rows = await this.query<BudgetRow>('SELECT user_name, tokens_per_day, turns_per_day FROM budgets ORDER BY user_name', []);
    return rows.map((row) => ({ user_name: row.user_name, tokens_per_day: nullableCount(row.tokens_per_day), turns_per_day: nullableCount(row.turns_per_day) }));
  }

  async setBudget(userName: string, budget: Budget | null, now = Date.now()): Promise<void> {
    if (budget === null) await this.query('DELETE FROM budgets WHERE user_name = $1', [userName]);
    else await this.query(SET_BUDGET_SQL, [userName, budget.tokens_per_day, budget.turns_per_day, now]);
  }

  overBudget(person: string, now = Date.now()): Promise<BudgetExceeded | null> {
    return checkBudget(this.query, person, now);
  }
}
