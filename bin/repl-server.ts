// The debug REPL of the running daemon, on <home>/repl.sock (0600): one node:repl per
// connection with inspection commands that print aligned tables. A throw, a rejection or a bad
// query stays inside the REPL; `.exit` ends only that connection; process.exit is refused (an
// accident guard only: the REPL is the home owner's tool, and `require('process').exit()` still works).
import type { FinishedTurn, SessionDescription } from '../actors/host/messages.js';
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import repl, { type REPLServer } from 'node:repl';
import { ClientOutput } from '../actors/daemon/client-output.js';
import type { UnreadLimits } from '../actors/daemon/unread-bound.js';
import { ask, type Ref, type SystemRef } from '../actors/runtime.js';
import type { CallReply, GatewayMsg, HostStatus, SupervisorMsg } from '../actors/daemon/supervisor-messages.js';
import type { Reader } from '../persistence/reader.js';
import type { SideStore } from '../persistence/side-store.js';
import { webhookId } from '../persistence/outbox.js';
import { shownWebhookUrl } from '../actors/daemon/webhook-delivery.js';
import { sandboxShown } from './commands/lifecycle.js';
import { commandDefiner, defineDatabaseCommands, flattenActors, printRows } from './repl-commands.js';

export interface ReplDeps {
  path: string;
  home: string;
  supervisor: Ref<SupervisorMsg>;
  gateway: Ref<GatewayMsg>;
  system: SystemRef;
  reader: () => Promise<Reader | null>;
  /** Schedules and the webhook outbox. */
  side: () => Promise<SideStore | null>;
  logPath: string;
  unreadLimits: UnreadLimits;
}

const ASK_TIMEOUT_MS = 10_000;
/** A person at a terminal is told what this is; a script's output stays its commands' output. */
const BANNER =
  "turnhost debug REPL: JavaScript inside the running daemon, with your rights as the home's owner.\n" +
  'process.exit is refused only to guard against accidents: this is no sandbox. .help lists the commands, .exit leaves.\n';

/** The header line of `turnhost repl` is short; past this, the client sent no header. */
const MAX_HEADER_BYTES = 256;

function parseHeader(line: string): { terminal: boolean } | null {
  try {
    const value = JSON.parse(line) as unknown;
    if (typeof value === 'object' && value !== null && 'terminal' in value) return { terminal: (value as { terminal: unknown }).terminal === true };
  } catch {
    // not a header: the first command
  }
  return null;
}

export async function startRepl(deps: ReplDeps): Promise<{ close(): Promise<void> }> {
  rmSync(deps.path, { force: true });
  const sockets = new Set<Socket>();
  // Half-open: a client that sends its commands and closes its side (printf … | socat) still gets
  // their output; the connection ends once the REPL has answered (see openSession's exit).
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    // `turnhost repl` sends a first line saying whether it is a terminal (raw keys, Tab
    // completion) or a script; any other client (socat, nc) is a script, and its first line is
    // already a command, kept for the REPL with whatever came after it.
    let head = Buffer.alloc(0);
    const begin = (ended: boolean): void => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      const newline = head.indexOf(0x0a);
      const header = newline === -1 ? null : parseHeader(head.subarray(0, newline).toString('utf8'));
      const rest = header === null ? head : head.subarray(newline + 1);
      const { session, idle, out } = openSession(socket, header?.terminal === true, deps);
      // Input ended: the commands still running finish and print before the connection closes.
      session.on('exit', () => void idle().then(() => out.end()));
      if (!ended) {
        if (rest.length > 0) socket.unshift(rest);
        return;
      }
      // Everything came, and the input ended, before a newline: run it as the last line.
      if (rest.length > 0) session.write(`${rest.toString('utf8')}\n`);
      session.close();
    };
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      if (head.indexOf(0x0a) !== -1 || head.length >= MAX_HEADER_BYTES) begin(false);
    };
    const onEnd = (): void => begin(true);
    socket.on('data', onData);
    socket.once('end', onEnd);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.path, () => resolve());
  });
  chmodSync(deps.path, 0o600);
  return {
    close: () => closeServer(server, sockets, deps.path),
  };
}

async function closeServer(server: Server, sockets: Set<Socket>, path: string): Promise<void> {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(path, { force: true });
}

function openSession(socket: Socket, terminal: boolean, deps: ReplDeps): { session: REPLServer; idle: () => Promise<void>; out: ClientOutput } {
  // A REPL client that stops reading is cut off like any client of the daemon.
  const out = new ClientOutput(socket, deps.unreadLimits, () => {});
  // Everything the REPL writes (prompts, results) goes through the same bound.
  const output = new PassThrough();
  output.on('data', (chunk: Buffer) => out.write(chunk.toString('utf8')));
  if (terminal) out.write(BANNER);
  const r = repl.start({ prompt: 'turnhost> ', input: socket, output, terminal, useGlobal: false, ignoreUndefined: true, preview: false });
  const host = async (what: string): Promise<unknown> => {
    const reply = await ask(deps.supervisor, (replyTo: Ref<CallReply>): SupervisorMsg => ({ kind: 'call', call: { op: 'debug', what }, replyTo }), ASK_TIMEOUT_MS);
    if (!reply.ok) throw new Error(reply.error.message);
    return reply.value;
  };
  const status = () => ask(deps.supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), ASK_TIMEOUT_MS);
  Object.assign(r.context, { supervisor: deps.supervisor, gateway: deps.gateway, host, status });
  // Defined, not assigned: the context copies the global's accessor for `process`, whose setter
  // would put the guard in the daemon's own global, where its exit (and the supervisor's kills)
  // would then throw.
  Object.defineProperty(r.context, 'process', { value: guardedProcess(), writable: true, configurable: true });
  const running = new Set<Promise<void>>();
  const command = commandDefiner(r, out, (work) => {
    running.add(work);
    void work.finally(() => running.delete(work));
  });
  defineDatabaseCommands(command, out, deps.reader, deps.logPath);
  command('sessions', 'sessions: status, running, message count, age; what the host holds of their queues', async () => {
    const running = new Set((await status()).running_sids);
    const live = new Map(((await host('sessions')) as SessionDescription[]).map((d) => [d.sid, d]));
    const sessions = (await (await deps.reader())?.sessions()) ?? [];
    printRows(
      out,
      ['SESSION', 'STATUS', 'RUNNING', 'MESSAGES', 'AGE', 'QUEUED', 'HELD'],
      sessions.map((s) => {
        const held = live.get(s.session_id);
        return [s.session_id, s.status, running.has(s.session_id) ? 'yes' : '', s.message_count, age(Date.parse(s.updated_at)), held?.queued ?? '', held?.queue_held ?? ''];
      }),
    );
  });
  command('turns', 'running and recent turns', async () => {
    const turns = (await host('turns')) as { running: { sid: string; turn_id: string }[]; waiting: { sid: string; turn_id: string }[]; recent: FinishedTurn[] };
    printRows(out, ['SESSION', 'TURN', 'STATE', 'DURATION', 'MODEL', 'TOKENS (PROMPT+COMPLETION/CALLS)'], [
      ...turns.running.map((t) => [t.sid, t.turn_id, 'running', '', '', '']),
      ...turns.waiting.map((t) => [t.sid, t.turn_id, 'waiting', '', '', '']),
      ...turns.recent.map((t) => [t.sid, t.turnId, t.outcome, `${t.endedAt - t.startedAt} ms`, t.model ?? '', t.usage ? `${t.usage.prompt_tokens}+${t.usage.completion_tokens}/${t.usage.calls}` : '']),
    ]);
  });
  command('requests', 'open server requests with their age', async () => {
    const requests = (await host('requests')) as { id: string; sid: string; method: string; age_ms: number }[];
    printRows(out, ['REQUEST', 'SESSION', 'METHOD', 'AGE'], requests.map((q) => [q.id, q.sid, q.method, `${Math.round(q.age_ms / 1000)} s`]));
  });
  command('schedules', 'schedules: plan, next and last fire, fires, who made it', async () => {
    const rows = (await (await deps.side())?.schedules.list()) ?? [];
    const when = (ms: number | null) => (ms === null ? '' : new Date(ms).toISOString());
    printRows(out, ['SCHEDULE', 'SESSION', 'PLAN', 'NEXT', 'LAST', 'FIRES', 'BY'], rows.map((r) => [r.schedule_id, r.sid, `${r.kind} ${r.spec}${r.kind === 'cron' ? ` ${r.tz}` : ''}`, when(r.next_at), when(r.last_at), r.fires, r.created_by]));
  });
  command('webhooks', "each URL's backlog, then each delivery waiting or failed: attempts, next try, last error", async () => {
    const outbox = (await deps.side())?.outbox;
    const backlogs = (await outbox?.backlogs()) ?? [];
    printRows(out, ['URL', 'PENDING', 'FAILED'], backlogs.map((b) => [shownWebhookUrl(b.url), b.pending, b.failed]));
    const rows = (await outbox?.list()) ?? [];
    printRows(out, ['EVENT', 'URL', 'SESSION', 'TYPE', 'STATUS', 'ATTEMPTS', 'NEXT TRY', 'LAST ERROR'], rows.map((r) => [webhookId(r), shownWebhookUrl(r.url), r.sid, r.type, r.status, r.attempts, r.status === 'pending' ? new Date(Math.max(r.next_at, r.created_at)).toISOString() : '', r.last_error ?? '']));
  });
  command('actors', "the host's actor tree with mailbox sizes", async () => {
    printRows(out, ['ACTOR', 'MAILBOX', 'BUSY'], flattenActors((await host('actors')) as Parameters<typeof flattenActors>[0]));
  });
  command('host', 'pids, boot id, restarts, heartbeat age, event-loop lag', async () => {
    const s = await status();
    printRows(out, ['WHAT', 'VALUE'], [
      ['supervisor pid', s.supervisor.pid],
      ['home', s.supervisor.home],
      ['host pid', s.host.pid],
      ['host state', s.host.state],
      ['boot id', s.host.boot_id],
      ['restarts', s.host.restarts],
      ['last heartbeat', s.host.last_hb_ms === null ? 'none yet' : `${s.host.last_hb_ms} ms ago`],
      ['host loop lag', s.host.loop_lag_ms === null ? '' : `${s.host.loop_lag_ms} ms`],
      ['host rss', s.host.rss_mb === null ? '' : `${s.host.rss_mb} MB`],
      ['active turns', s.host.active_turns],
      ['last error', s.host.last_error ?? ''],
      ['sandbox', sandboxShown(s.sandbox)],
    ]);
  });
  const idle = async (): Promise<void> => {
    while (running.size > 0) await Promise.allSettled([...running]);
  };
  return { session: r, idle, out };
}

function age(atMs: number): string {
  const seconds = Math.max(0, Math.round((Date.now() - atMs) / 1000));
  return seconds < 120 ? `${seconds} s` : seconds < 7200 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;
}

/** `process` in the REPL without the plain ways to end the daemon: a guard against slips, not a boundary. */
function guardedProcess(): NodeJS.Process {
  const refuse = () => {
    throw new Error('refused in the REPL: it would end the daemon (.exit leaves the REPL; `turnhost stop` stops the daemon)');
  };
  return new Proxy(process, {
    get(target, key, receiver) {
      if (key === 'exit' || key === 'abort' || key === 'kill' || key === 'reallyExit') return refuse;
      return Reflect.get(target, key, receiver);
    },
  });
}
