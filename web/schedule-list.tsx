// A session's schedules (PROTOCOL.md §8.1).

export interface ScheduleItem {
  schedule_id: string;
  text: string;
  cron?: string;
  every_secs?: number;
  at?: string;
  tz: string;
  next_at: string | null;
  fires: number;
}

/** The session's schedules (PROTOCOL.md §8.1): what runs by itself, and when next. */
export function ScheduleList({ items }: { items: ScheduleItem[] }) {
  const plan = (s: ScheduleItem): string => (s.cron !== undefined ? `cron ${s.cron} (${s.tz})` : s.every_secs !== undefined ? `every ${s.every_secs} s` : `at ${s.at ?? ''}`);
  return (
    <section>
      <h3>Schedules</h3>
      <ul aria-label="Schedules">
        {items.map((s) => (
          <li key={s.schedule_id}>
            <span>{s.text}</span> <small>{plan(s)} · next {s.next_at === null ? 'none' : new Date(s.next_at).toLocaleString()} · {s.fires} fired</small>
          </li>
        ))}
      </ul>
    </section>
  );
}
