// What turns spent (PROTOCOL.md §5.7): a session's ledger, and the totals by person, session,
// model, agent or day; a member sees their own sessions only.
import { parseDay } from '../../../persistence/ledger.js';
import { FieldError, type Fields } from '../../../protocol/fields.js';
import { USAGE_GROUPS } from '../../../protocol/usage.js';
import { notFound } from '../session-access.js';
import type { MethodTable } from './method-table.js';
import { openSide } from './stored-sessions.js';

/** A `YYYY-MM-DD` (a UTC day), or null when absent. */
function optionalDay(p: Fields, name: string): string | null {
  const text = p.optionalString(name);
  if (text === undefined) return null;
  if (parseDay(text) === null) throw new FieldError(`${name} must be a date, YYYY-MM-DD`);
  return text;
}

/** The ledger. */
export const USAGE_METHODS: MethodTable = {

  /** What the session's turns spent, each and in all (PROTOCOL.md §5.7), the turns a rewind left included. */
  async 'session.usage'(p, ctx) {
    const sid = p.identifier('session_id');
    if ((await (await ctx.reader())?.session(sid)) === undefined) throw notFound(sid);
    return (await openSide(ctx)).ledger.sessionUsage(sid);
  },


  /** The ledger's totals (GET /v1/usage, `turnhost usage` reads the store itself): a member's own sessions only. */
  async 'usage.report'(p, ctx) {
    const by = p.optionalOneOf('by', USAGE_GROUPS) ?? 'person';
    const since = optionalDay(p, 'since');
    const until = optionalDay(p, 'until');
    const rows = await (await openSide(ctx)).ledger.usage({ by, since, until, ownedBy: ctx.identity.admin ? null : ctx.identity.user });
    return { by, since, until, rows };
  },
};
