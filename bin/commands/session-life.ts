// `turnhost delete`, `archive`, `unarchive`, `pin` and `unpin` (PROTOCOL.md §2.3), through the
// running daemon: the host that may hold the session live drops it, and its clients hear of it.
import { createInterface } from 'node:readline/promises';
import type { RpcClient } from '../../client/rpc-connection.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import { withDaemon } from '../daemon-client.js';
import { EXIT_UNKNOWN_SESSION } from './sessions.js';

export const EXIT_USAGE = 2;

/** withDaemon, where an unknown session exits 4 as `history` does; any other refusal exits 1 with its message. */
export function onSession(home: string, name: string, body: (client: RpcClient) => Promise<number>): Promise<number> {
  return withDaemon(home, name, async (client) => {
    try {
      return await body(client);
    } catch (err) {
      if (!(err instanceof RpcError) || err.code !== ErrorCodes.sessionNotFound) throw err;
      process.stderr.write(`turnhost ${name}: ${err.message}\n`);
      return EXIT_UNKNOWN_SESSION;
    }
  });
}

/**
 * Deletes for good, so it asks first: at a terminal, a yes; from a script, `--yes`. A turn that
 * runs refuses it (4009) unless `--interrupt`.
 */
export async function deleteCommand(home: string, sid: string, options: { yes?: boolean; interrupt?: boolean }): Promise<number> {
  if (options.yes !== true) {
    if (process.stdin.isTTY !== true) {
      process.stderr.write(`turnhost delete: deleting ${sid} cannot be undone; give --yes to do it without a terminal\n`);
      return EXIT_USAGE;
    }
    if (!(await confirmed(`Delete session ${sid}, its history and its agent's files? This cannot be undone. [y/N] `))) {
      process.stderr.write('turnhost delete: nothing deleted\n');
      return 1;
    }
  }
  return onSession(home, 'delete', async (client) => {
    try {
      await client.call('session.delete', { session_id: sid, ...(options.interrupt ? { interrupt: true } : {}) });
    } catch (err) {
      if (!(err instanceof RpcError) || err.code !== ErrorCodes.sessionBusy) throw err;
      process.stderr.write(`turnhost delete: ${err.message} (--interrupt ends the turn first)\n`);
      return 1;
    }
    process.stdout.write(`${sid}: deleted\n`);
    return 0;
  });
}

async function confirmed(question: string): Promise<boolean> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await terminal.question(question)).trim());
  } finally {
    terminal.close();
  }
}

const MARKED = { archive: 'archived', unarchive: 'unarchived', pin: 'pinned', unpin: 'unpinned' } as const;

/** `archive`, `unarchive`, `pin`, `unpin`: one method each, one line of result. */
export function markCommand(home: string, sid: string, mark: 'archive' | 'unarchive' | 'pin' | 'unpin'): Promise<number> {
  return onSession(home, mark, async (client) => {
    await client.call(`session.${mark}`, { session_id: sid });
    process.stdout.write(`${sid}: ${MARKED[mark]}\n`);
    return 0;
  });
}
