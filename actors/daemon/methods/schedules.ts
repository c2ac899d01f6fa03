// Prompts that run on their own (PROTOCOL.md §8.1): make, list and delete a session's schedules.
// The webhooks of §8.2 are the daemon's options and have no methods; a method of theirs goes here.
import { randomBytes } from 'node:crypto';
import type { ScheduleRow } from '../../../persistence/schedules.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import type { ClientContext } from '../client-context.js';
import { promptContent } from './content.js';
import { storedBlocks, type ContentBlock } from '../../../protocol/content.js';
import { firstPlanned, planFrom } from '../schedule-plan.js';
import type { MethodTable } from './method-table.js';
import { openSide } from './stored-sessions.js';

/** A schedule as `schedule.list` shows it (PROTOCOL.md §8.1): its plan under its own name. */
export interface ShownSchedule {
  schedule_id: string;
  session_id: string;
  text: string;
  content?: ContentBlock[];
  cron?: string;
  every_secs?: number;
  at?: string;
  tz: string;
  catch_up: string;
  on_busy: string;
  next_at: string | null;
  last_at: string | null;
  fires: number;
  skips: number;
  last_skip: string | null;
}

function shownSchedule(row: ScheduleRow): ShownSchedule {
  const plan = row.kind === 'cron' ? { cron: row.spec } : row.kind === 'every' ? { every_secs: Number(row.spec) } : { at: row.spec };
  const at = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return { schedule_id: row.schedule_id, session_id: row.sid, text: row.text, ...(row.content === null ? {} : { content: storedBlocks(JSON.parse(row.content)) }), ...plan, tz: row.tz, catch_up: row.catch_up, on_busy: row.on_busy, next_at: at(row.next_at), last_at: at(row.last_at), fires: row.fires, skips: row.skips, last_skip: row.last_skip };
}

/** A schedule someone may see or change: theirs to know of (as its session is), else as if it did not exist. */
async function knownSchedule(ctx: ClientContext, scheduleId: string, need: 'read' | 'write'): Promise<ScheduleRow> {
  const row = await (await openSide(ctx)).schedules.get(scheduleId);
  const notThere = new RpcError(ErrorCodes.sessionNotFound, `schedule not found: ${scheduleId}`);
  if (row === undefined) throw notThere;
  if (ctx.identity.admin) return row;
  const role = await ctx.access.roleOf(ctx.identity.user, row.sid);
  if (role === null) throw notThere;
  if (need === 'write' && role === 'viewer') throw new RpcError(ErrorCodes.forbidden, `forbidden: ${ctx.identity.user} may only view session ${row.sid}`);
  return row;
}

async function asyncFilter<T>(items: readonly T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const kept = await Promise.all(items.map(keep));
  return items.filter((_, i) => kept[i]);
}

/** A session's schedules. */
export const SCHEDULE_METHODS: MethodTable = {

  /** A schedule is stored before the answer; the session is made when it does not exist (PROTOCOL.md §8.1). */
  async 'schedule.create'(p, ctx, _id, invoke) {
    const sid = p.identifier('session_id');
    if (!p.has('content')) p.requiredString('text');
    const plan = planFrom(p);
    const now = Date.now();
    if ((await (await ctx.reader())?.session(sid)) === undefined) await invoke('session.create', { session_id: sid });
    // Its files are stored and named by the session now: each fire names them again, storing nothing.
    const { text, content } = await promptContent(ctx, sid, p);
    const row: ScheduleRow = {
      schedule_id: `sch-${randomBytes(6).toString('hex')}`,
      sid,
      text,
      content: content === undefined ? null : JSON.stringify(content),
      kind: plan.kind,
      spec: plan.spec,
      tz: plan.tz,
      catch_up: plan.catchUp,
      on_busy: plan.onBusy,
      next_at: firstPlanned(plan, now),
      last_at: null,
      fires: 0,
      skips: 0,
      last_skip: null,
      created_by: ctx.identity.user,
      created_at: now,
    };
    await (await openSide(ctx)).schedules.create(row);
    ctx.scheduled();
    return { schedule_id: row.schedule_id, next_at: row.next_at === null ? null : new Date(row.next_at).toISOString() };
  },


  async 'schedule.list'(p, ctx) {
    const sid = p.optionalIdentifier('session_id');
    const rows = await (await openSide(ctx)).schedules.list(sid);
    const visible = ctx.identity.admin ? rows : await asyncFilter(rows, async (row) => (await ctx.access.roleOf(ctx.identity.user, row.sid)) !== null);
    return { schedules: visible.map(shownSchedule) };
  },


  async 'schedule.delete'(p, ctx) {
    const row = await knownSchedule(ctx, p.identifier('schedule_id'), 'write');
    await (await openSide(ctx)).schedules.delete(row.schedule_id);
    return { deleted: true };
  },
};
