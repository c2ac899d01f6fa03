// A schedule's plan (PROTOCOL.md §8.1): its fields checked once, where a client gives them (a bad
// one is -32602 naming it), and its planned times. Cron expressions are croner's (5 fields, or 6
// with seconds first), in an IANA time zone.
import { Cron } from 'croner';
import { FieldError, type Fields } from '../../protocol/fields.js';
import { CATCH_UP, SCHEDULE_ON_BUSY, type CatchUp, type ScheduleKind, type ScheduleOnBusy, type ScheduleRow } from '../../persistence/schedules.js';

export interface SchedulePlan {
  kind: ScheduleKind;
  spec: string;
  tz: string;
  catchUp: CatchUp;
  onBusy: ScheduleOnBusy;
}

/** The plan in a `schedule.create`'s params: exactly one of cron, every_secs, at. */
export function planFrom(p: Fields): SchedulePlan {
  const given = (['cron', 'every_secs', 'at'] as const).filter((key) => p.has(key));
  if (given.length !== 1) throw new FieldError(`give exactly one of cron, every_secs, at${given.length > 1 ? ` (not ${given.join(' and ')})` : ''}`);
  const tz = p.optionalString('tz') ?? 'UTC';
  if (!knownZone(tz)) throw new FieldError(`tz must be an IANA time zone (such as Europe/Berlin), not ${JSON.stringify(tz.slice(0, 64))}`);
  const catchUp = p.optionalOneOf('catch_up', CATCH_UP) ?? 'one';
  const onBusy = p.optionalOneOf('on_busy', SCHEDULE_ON_BUSY) ?? 'queue';
  const base = { tz, catchUp, onBusy };
  switch (given[0]!) {
    case 'cron': {
      const spec = p.requiredString('cron').trim();
      if (spec.split(/\s+/).length < 5 || spec.split(/\s+/).length > 6) throw new FieldError('cron must have 5 fields, or 6 with seconds first');
      try {
        cronOf(spec, tz).nextRun();
      } catch (err) {
        throw new FieldError(`cron: ${(err as Error).message}`);
      }
      return { kind: 'cron', spec, ...base };
    }
    case 'every_secs': {
      const secs = p.optionalNumber('every_secs', 1)!;
      if (!Number.isInteger(secs)) throw new FieldError('every_secs must be a whole number of seconds, at least 1');
      return { kind: 'every', spec: String(secs), ...base };
    }
    case 'at': {
      const at = Date.parse(p.requiredString('at'));
      if (!Number.isFinite(at)) throw new FieldError('at must be an ISO 8601 time (such as 2026-12-03T09:00:00Z)');
      return { kind: 'at', spec: new Date(at).toISOString(), ...base };
    }
  }
}

/** The first planned time strictly after `afterMs`; null when there is none (an `at` past). */
export function nextAfter(plan: Pick<ScheduleRow, 'kind' | 'spec' | 'tz'>, afterMs: number, createdAt = afterMs): number | null {
  switch (plan.kind) {
    case 'cron':
      return cronOf(plan.spec, plan.tz).nextRun(new Date(afterMs))?.getTime() ?? null;
    case 'every': {
      // Fires fall on createdAt + k × every: a late look does not shift the ones after it.
      const everyMs = Number(plan.spec) * 1000;
      const k = Math.floor((afterMs - createdAt) / everyMs) + 1;
      return createdAt + Math.max(1, k) * everyMs;
    }
    case 'at': {
      const at = Date.parse(plan.spec);
      return at > afterMs ? at : null;
    }
  }
}

/** The first planned time of a new schedule: an `at` in the past fires at once. */
export function firstPlanned(plan: SchedulePlan, nowMs: number): number | null {
  if (plan.kind === 'at') return Date.parse(plan.spec);
  return nextAfter(plan, nowMs);
}

function cronOf(spec: string, tz: string): Cron {
  return new Cron(spec, { timezone: tz, paused: true, mode: '5-or-6-parts' });
}

function knownZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
