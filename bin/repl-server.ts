// The debug REPL of the running daemon, on <home>/repl.sock (0600): one node:repl per
// connection with inspection commands that print aligned tables. A throw, a rejection or a bad
// query stays inside the REPL; `.exit` ends only that connection; process.exit is refused.
import type { FinishedTurn } from '../actors/messages.js';
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import repl, { type REPLServer } from 'node:repl';
import { ask, type Ref, type SystemRef } from '../actors/runtime.js';
import type { CallReply, GatewayMsg, HostStatus, SupervisorMsg } from '../actors/supervisor-messages.js';
import type { Reader } from '../persistence/reader.js';
import { commandDefiner, defineDatabaseCommands, flattenActors, printRows, type ReplOutput } from './repl-commands.js';

export interface ReplDeps {
  path: string;
  home: string;
  supervisor: Ref<SupervisorMsg>;
  gateway: Ref<GatewayMsg>;
  system: SystemRef;
  reader: () => Reader | null;
  logPath: string;
}

const ASK_TIMEOUT_MS = 10_000;

export async function startRepl(deps: ReplDeps): Promise<{ close(): Promise<void> }> {
  rmSync(deps.path, { force: true });
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    // The client's first line says whether it is a terminal (raw keys, Tab completion) or a script.
    let head = '';
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('utf8');
      const newline = head.indexOf('\n');
      if (newline === -1) return;
      socket.off('data', onData);
      const terminal = /"terminal"\s*:\s*true/.test(head.slice(0, newline));
      const rest = head.slice(newline + 1);
      const session = openSession(socket, terminal, deps);
      if (rest) socket.unshift(Buffer.from(rest));
      session.on('exit', () => socket.end());
    };
    socket.on('data', onData);
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

function openSession(socket: Socket, terminal: boolean, deps: ReplDeps): REPLServer {
  const r = repl.start({ prompt: 'turnhost> ', input: socket, output: socket, terminal, useGlobal: false, ignoreUndefined: true, preview: false });
  const out: ReplOutput = { write: (text) => socket.write(text) };
  const host = async (what: string): Promise<unknown> => {
    const reply = await ask(deps.supervisor, (replyTo: Ref<CallReply>): SupervisorMsg => ({ kind: 'call', call: { op: 'debug', what }, replyTo }), ASK_TIMEOUT_MS);
    if (!reply.ok) throw new Error(reply.error.message);
    return reply.value;
  };
  const status = () => ask(deps.supervisor, (replyTo: Ref<HostStatus>): SupervisorMsg => ({ kind: 'status', replyTo }), ASK_TIMEOUT_MS);
  Object.assign(r.context, {
    supervisor: deps.supervisor,
    gateway: deps.gateway,
    host,
    status,
    process: guardedProcess(),
  });
  const command = commandDefiner(r, out);
  defineDatabaseCommands(command, out, deps.reader, deps.logPath);
  command('sessions', 'sessions: status, running, message count, age', async () => {
    const running = new Set((await status()).running_sids);
    const sessions = deps.reader()?.sessions() ?? [];
    printRows(out, ['SESSION', 'STATUS', 'RUNNING', 'MESSAGES', 'AGE'], sessions.map((s) => [s.session_id, s.status, running.has(s.session_id) ? 'yes' : '', s.message_count, age(Date.parse(s.updated_at))]));
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
    ]);
  });
  return r;
}

function age(atMs: number): string {
  const seconds = Math.max(0, Math.round((Date.now() - atMs) / 1000));
  return seconds < 120 ? `${seconds} s` : seconds < 7200 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;
}

/** `process` in the REPL without the ways to end the daemon. */
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
