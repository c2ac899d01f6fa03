// What the ledger tells a client (PROTOCOL.md §5.7): a session's spend, turn by turn, and the
// totals by person, session, model or day. The store's side is persistence/ledger.ts.

/** A turn's token usage, summed over its model calls (AGENT.md §3). */
export interface TurnUsage {
  prompt_tokens: number;
  completion_tokens: number;
  calls: number;
  /** Of the prompt tokens, those the model's server had cached (PROTOCOL.md §5.7), when it says. */
  cached_tokens?: number;
  /** Of the completion tokens, those spent reasoning, when the server says. */
  reasoning_tokens?: number;
}

export interface UsageTotals {
  turns: number;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  calls: number;
  duration_ms: number;
}

export const USAGE_GROUPS = ['person', 'session', 'model', 'agent', 'day'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** One group's totals: `key` is the person, the session id, the model ('' when unknown) or the day. */
export type UsageRow = UsageTotals & { key: string };

/** One turn of a session's ledger. */
export interface TurnLedgerRow {
  turn_id: string;
  by: string;
  status: string;
  model: string | null;
  started_at: number;
  duration_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  calls: number;
}

export interface SessionUsage {
  session_id: string;
  total: UsageTotals;
  turns: TurnLedgerRow[];
}

/** `usage.report`'s answer (GET /v1/usage): the grouping, the days asked for, and a row per group. */
export interface UsageReport {
  by: UsageGroup;
  since: string | null;
  until: string | null;
  rows: UsageRow[];
}
