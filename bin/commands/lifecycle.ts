// `turnhost start`, `stop` and `status`: the daemon's lifecycle from the command line.
import { printTable } from '../table.js';
import { connectDaemon, EXIT_NOT_RUNNING, launchDaemon } from '../daemon-client.js';
import { ensureHome } from '../home.js';

export async function startCommand(homeDir: string, hostArgs: string[]): Promise<number> {
  const home = ensureHome(homeDir);
  const running = await connectDaemon(home);
  if (running) {
    const status = await running.call<{ supervisor: { pid: number } }>('host.status').finally(() => running.close());
    process.stderr.write(`turnhost start: a daemon is already running in ${home} (pid ${status.supervisor.pid})\n`);
    return 1;
  }
  const launch = await launchDaemon(home, hostArgs);
  if (!launch.ok) {
    process.stderr.write(`turnhost start: ${launch.alreadyRunning ? `a daemon is already running in ${home}` : launch.message}\n`);
    return 1;
  }
  process.stdout.write(`${launch.pid}\n`);
  return 0;
}

export async function stopCommand(home: string, waitSec: number | undefined): Promise<number> {
  const client = await connectDaemon(home);
  if (client === null) {
    process.stderr.write(`turnhost stop: no daemon is running in ${home}\n`);
    return EXIT_NOT_RUNNING;
  }
  const wait = waitSec ?? 10;
  const report = await client.call<{ finalized: number; retained: number }>('daemon.shutdown', { wait }, (wait + 30) * 1000);
  process.stdout.write(`stopped: ${report.finalized} session(s) finalized, ${report.retained} retained\n`);
  await client.closed;
  return 0;
}

interface StatusResult {
  supervisor: { pid: number; home: string; started_at: string };
  host: { pid: number | null; boot_id: string | null; state: string; restarts: number; last_hb_ms: number | null; active_turns: number; last_error: string | null };
  sessions: { active: number; running: number; retained: number; finalized: number };
}

export async function statusCommand(home: string, json: boolean): Promise<number> {
  const client = await connectDaemon(home);
  if (client === null) {
    if (json) process.stdout.write(`${JSON.stringify({ running: false, home })}\n`);
    process.stderr.write(`turnhost status: no daemon is running in ${home}\n`);
    return EXIT_NOT_RUNNING;
  }
  const status = await client.call<StatusResult>('host.status').finally(() => client.close());
  if (json) {
    process.stdout.write(`${JSON.stringify(status)}\n`);
    return 0;
  }
  const { supervisor, host, sessions } = status;
  printTable(['WHAT', 'VALUE'], [
    ['home', supervisor.home],
    ['supervisor pid', supervisor.pid],
    ['host state', host.state],
    ['host pid', host.pid ?? ''],
    ['boot id', host.boot_id ?? ''],
    ['restarts', host.restarts],
    ['last heartbeat', host.last_hb_ms === null ? '' : `${host.last_hb_ms} ms ago`],
    ['active turns', host.active_turns],
    ['sessions', `${sessions.active} active, ${sessions.running} running, ${sessions.retained} retained, ${sessions.finalized} finalized`],
    ['last error', host.last_error ?? ''],
  ]);
  return 0;
}
