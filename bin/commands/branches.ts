// `turnhost fork`, `rewind` and `retry` (PROTOCOL.md §2.2), through the running daemon: a session's
// history branches, and nothing is deleted. `turnhost history --all` shows every path.
import { resolve } from 'node:path';
import { onSession } from './session-life.js';

export async function forkCommand(home: string, sid: string, options: { at?: string; as?: string; cwd?: string; json?: boolean }): Promise<number> {
  const params = {
    session_id: sid,
    ...(options.at === undefined ? {} : { at_turn_id: options.at }),
    ...(options.as === undefined ? {} : { new_session_id: options.as }),
    ...(options.cwd === undefined ? {} : { cwd: resolve(options.cwd) }),
  };
  return onSession(home, 'fork', async (client) => {
    const made = await client.call<{ session_id: string; forked_from: { session_id: string; turn_id: string } }>('session.fork', params);
    process.stdout.write(options.json ? `${JSON.stringify(made)}\n` : `${made.session_id} (forked from ${made.forked_from.session_id} at ${made.forked_from.turn_id})\n`);
    return 0;
  });
}

export async function rewindCommand(home: string, sid: string, options: { to: string }): Promise<number> {
  // `--to start`: before the first turn.
  const to = options.to === 'start' ? null : options.to;
  return onSession(home, 'rewind', async (client) => {
    const rewound = await client.call<{ superseded: string[] }>('session.rewind', { session_id: sid, to_turn_id: to });
    process.stdout.write(`${sid}: ${rewound.superseded.length} turn(s) superseded${rewound.superseded.length === 0 ? '' : `: ${rewound.superseded.join(', ')}`}\n`);
    return 0;
  });
}

export async function retryCommand(home: string, sid: string): Promise<number> {
  return onSession(home, 'retry', async (client) => {
    const submitted = await client.call<{ turn_id: string; status: string }>('session.retry', { session_id: sid });
    process.stdout.write(`${sid}: ${submitted.turn_id} (${submitted.status})\n`);
    return 0;
  });
}
