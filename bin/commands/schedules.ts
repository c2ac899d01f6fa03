// `turnhost schedule add | list | rm` (PROTOCOL.md §8.1), through the running daemon, which checks
// each field and wakes its scheduler; and `turnhost webhook secret` (§8.2), the only place the
// webhooks' signing secret is ever printed.
import { withDaemon } from '../daemon-client.js';
import { ensureHome } from '../home.js';
import { printTable } from '../table.js';
import { readOrMakeWebhookSecret, rotateWebhookSecret } from '../../persistence/webhook-secret.js';
import type { ShownSchedule } from '../../actors/daemon/methods/schedules.js';

export interface ScheduleAddOptions {
  cron?: string;
  every?: number;
  at?: string;
  tz?: string;
  catchUp?: string;
  onBusy?: string;
}

export async function scheduleAddCommand(home: string, sid: string, text: string, options: ScheduleAddOptions): Promise<number> {
  const params = {
    session_id: sid,
    text,
    ...(options.cron === undefined ? {} : { cron: options.cron }),
    ...(options.every === undefined ? {} : { every_secs: options.every }),
    ...(options.at === undefined ? {} : { at: options.at }),
    ...(options.tz === undefined ? {} : { tz: options.tz }),
    ...(options.catchUp === undefined ? {} : { catch_up: options.catchUp }),
    ...(options.onBusy === undefined ? {} : { on_busy: options.onBusy }),
  };
  return withDaemon(home, 'schedule add', async (client) => {
    const made = await client.call<{ schedule_id: string; next_at: string | null }>('schedule.create', params);
    process.stdout.write(`${made.schedule_id} (next: ${made.next_at ?? 'none'})\n`);
    return 0;
  });
}

export async function scheduleListCommand(home: string, options: { json?: boolean }): Promise<number> {
  return withDaemon(home, 'schedule list', async (client) => {
    const { schedules } = await client.call<{ schedules: ShownSchedule[] }>('schedule.list', {});
    if (options.json) {
      process.stdout.write(`${JSON.stringify(schedules)}\n`);
      return 0;
    }
    printTable(
      ['ID', 'SESSION', 'WHEN', 'NEXT', 'LAST', 'FIRES', 'TEXT'],
      schedules.map((s) => [s.schedule_id, s.session_id, planOf(s), s.next_at ?? '', s.last_at ?? '', s.fires, s.text]),
    );
    return 0;
  });
}

export async function scheduleRemoveCommand(home: string, scheduleId: string): Promise<number> {
  return withDaemon(home, 'schedule rm', async (client) => {
    await client.call('schedule.delete', { schedule_id: scheduleId });
    process.stdout.write(`deleted: ${scheduleId}\n`);
    return 0;
  });
}

export function webhookSecretCommand(home: string, rotate: boolean): number {
  ensureHome(home);
  const secret = rotate ? rotateWebhookSecret(home) : readOrMakeWebhookSecret(home);
  process.stdout.write(`${secret}\n`);
  return 0;
}

function planOf(s: ShownSchedule): string {
  if (s.cron !== undefined) return `cron ${s.cron}${s.tz === 'UTC' ? '' : ` ${s.tz}`}`;
  if (s.every_secs !== undefined) return `every ${s.every_secs} s`;
  return `at ${s.at ?? ''}`;
}
