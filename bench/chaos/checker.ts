// The chaos run's checker, after Jepsen's: the clients' records of what was acknowledged against
// the state the store ends in, read once every node is quiet. A violation is any of: an
// acknowledged submit that is not a prompt of its session's history exactly once (lost, or run
// twice); any prompt twice in a history; a client's prompts to one session out of its order; a
// turn left `running`; a prompt left in a queue.
import pg from 'pg';
import type { Acknowledged, Submit } from './chaos-client.js';

export interface Findings {
  acknowledged: number;
  unacknowledged: number;
  /** Unacknowledged submits that ran anyway (allowed: the answer, not the work, was lost). */
  unacknowledgedRan: number;
  lost: string[];
  doubled: string[];
  outOfOrder: string[];
  leftRunning: number;
  leftQueued: number;
  turns: Record<string, number>;
}

export function violations(f: Findings): number {
  return f.lost.length + f.doubled.length + f.outOfOrder.length + f.leftRunning + f.leftQueued;
}

export async function check(url: string, acknowledged: readonly Acknowledged[], unacknowledged: readonly Submit[]): Promise<Findings> {
  const client = new pg.Client({ connectionString: url, options: '-c search_path=turnhost' });
  await client.connect();
  try {
    const prompts = (
      await client.query<{ sid: string; content: string; seq: number; turn: string }>(
        `SELECT m.sid, m.content, m.seq, coalesce(m.turn_id || ' ' || t.status || ' started ' || t.started_at, '(no turn)') AS turn
         FROM messages m LEFT JOIN turns t USING (turn_id) WHERE m.role = 'user' ORDER BY m.sid, m.seq`,
      )
    ).rows;
    const turns = (await client.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM turns GROUP BY status')).rows;
    const [queued] = (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM queue')).rows;
    return judge(prompts, acknowledged, unacknowledged, Object.fromEntries(turns.map((t) => [t.status, t.n])), queued?.n ?? 0);
  } finally {
    await client.end();
  }
}

function judge(
  prompts: { sid: string; content: string; seq: number; turn: string }[],
  acknowledged: readonly Acknowledged[],
  unacknowledged: readonly Submit[],
  turns: Record<string, number>,
  leftQueued: number,
): Findings {
  // Where each prompt stands in its session's history (its positions, when it is there more than once).
  const places = new Map<string, number[]>();
  const index = new Map<string, number>();
  const turnOf = new Map<string, string>();
  for (const prompt of prompts) {
    turnOf.set(`${prompt.sid}\u0000${prompt.content}`, `seq ${prompt.seq}, turn ${prompt.turn}`);
    const at = index.get(prompt.sid) ?? 0;
    index.set(prompt.sid, at + 1);
    const key = `${prompt.sid}\u0000${prompt.content}`;
    places.set(key, [...(places.get(key) ?? []), at]);
  }
  const placesOf = (s: Submit): number[] => places.get(`${s.sid}\u0000${s.text}`) ?? [];
  const doubled = [...places].filter(([, at]) => at.length > 1).map(([key]) => key.replace('\u0000', ': ').split('\n')[0]!);
  const lost = acknowledged.filter((s) => placesOf(s).length === 0).map((s) => `${s.sid}: ${s.clientMessageId} (${s.status} by ${s.node})`);
  return {
    acknowledged: acknowledged.length,
    unacknowledged: unacknowledged.length,
    unacknowledgedRan: unacknowledged.filter((s) => placesOf(s).length > 0).length,
    lost,
    doubled,
    outOfOrder: outOfOrder(acknowledged, placesOf, (s) => turnOf.get(`${s.sid}\u0000${s.text}`) ?? '?'),
    leftRunning: turns['running'] ?? 0,
    leftQueued,
    turns,
  };
}

/** Each client's acknowledged prompts to one session stand in the history in the order it sent them. */
function outOfOrder(acknowledged: readonly Acknowledged[], placesOf: (s: Submit) => number[], turnOf: (s: Submit) => string): string[] {
  const last = new Map<string, { submit: Acknowledged; at: number }>();
  const found: string[] = [];
  for (const submit of [...acknowledged].sort((a, b) => a.n - b.n)) {
    const at = placesOf(submit)[0];
    if (at === undefined) continue;
    const key = `${submit.client}\u0000${submit.sid}`;
    const before = last.get(key);
    if (before !== undefined && before.at > at) {
      // What each was answered, by which node, after how many tries, and where its turn ran: what an out-of-order run needs to be understood.
      const told = (s: Acknowledged): string => `${s.n} (${s.status} by ${s.node} after ${s.tries} tries; ${turnOf(s)})`;
      found.push(`${submit.sid}: ${submit.client}'s prompt ${submit.n} before its prompt ${before.submit.n}: ${told(before.submit)}; ${told(submit)}`);
    }
    last.set(key, { submit, at });
  }
  return found;
}
