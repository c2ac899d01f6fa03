// What a guest says its turn spent (PROTOCOL.md §5.7, AGENT.md §6), as each agent reports it: the
// prompt response's `usage` (ACP, unstable: Codex), Gemini CLI's `_meta.quota` on the same
// response, else the last `usage_update` (the tokens in the guest's context: what a guest that
// reports nothing else spent at least, as prompt tokens). Claude Code's adapter reports none.
import type { TurnUsage } from '../agent.js';
import { isRecord, type UnknownRecord } from '../../protocol/fields.js';

export interface GuestUsage {
  usage: TurnUsage;
  model?: string;
}

const count = (n: unknown): number | undefined => (typeof n === 'number' && Number.isFinite(n) && n >= 0 ? Math.floor(n) : undefined);

/** The usage a prompt response carries, or undefined. */
export function responseUsage(response: unknown): GuestUsage | undefined {
  if (!isRecord(response)) return undefined;
  return acpUsage(response['usage']) ?? quotaUsage(isRecord(response['_meta']) ? response['_meta']['quota'] : undefined);
}

/** A `usage_update`: the tokens now in the guest's context. */
export function contextUsage(used: unknown): GuestUsage | undefined {
  const tokens = count(used);
  return tokens === undefined ? undefined : { usage: { prompt_tokens: tokens, completion_tokens: 0, calls: 1 } };
}

function acpUsage(usage: unknown): GuestUsage | undefined {
  if (!isRecord(usage)) return undefined;
  const input = count(usage['inputTokens']);
  const output = count(usage['outputTokens']);
  if (input === undefined || output === undefined) return undefined;
  return { usage: withDetails({ prompt_tokens: input, completion_tokens: output, calls: 1 }, usage['cachedReadTokens'], usage['thoughtTokens']) };
}

/** Gemini CLI: `{token_count: {input_tokens, output_tokens}, model_usage: [{model, token_count}]}`. */
function quotaUsage(quota: unknown): GuestUsage | undefined {
  if (!isRecord(quota) || !isRecord(quota['token_count'])) return undefined;
  const input = count(quota['token_count']['input_tokens']);
  const output = count(quota['token_count']['output_tokens']);
  if (input === undefined || output === undefined) return undefined;
  const models = Array.isArray(quota['model_usage']) ? quota['model_usage'].filter(isRecord) : [];
  const model = models.map((m: UnknownRecord) => m['model']).find((m): m is string => typeof m === 'string');
  return { usage: { prompt_tokens: input, completion_tokens: output, calls: Math.max(1, models.length) }, ...(model === undefined ? {} : { model }) };
}

function withDetails(usage: TurnUsage, cached: unknown, reasoning: unknown): TurnUsage {
  const c = count(cached);
  const r = count(reasoning);
  return { ...usage, ...(c === undefined ? {} : { cached_tokens: c }), ...(r === undefined ? {} : { reasoning_tokens: r }) };
}
