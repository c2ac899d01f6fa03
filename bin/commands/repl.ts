// `turnhost repl`: attaches to the daemon's REPL over <home>/repl.sock. A terminal gets raw
// keys (Tab completion, history); a script's lines are sent one at a time, each after the
// previous one's prompt came back, so every answer is printed before the REPL is left.
// `--offline` runs the database commands in this process, with the daemon down.
import { connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import repl from 'node:repl';
import { storeLocation, type StoreLocation } from '../../persistence/store-location.js';
import { readerOnDemand } from '../../persistence/open-store.js';
import { EXIT_NOT_RUNNING } from '../daemon-client.js';
import { homePaths } from '../../protocol/home-paths.js';
import { commandDefiner, defineDatabaseCommands, defineOfflineSessions } from '../repl-commands.js';

const PROMPTS = ['turnhost> ', '... '];
const LINE_TIMEOUT_MS = 30_000;

export async function replCommand(home: string, options: { offline?: boolean; store?: string }): Promise<number> {
  const paths = homePaths(home);
  if (options.offline) {
    let location: StoreLocation;
    try {
      location = storeLocation(options.store, paths.database);
    } catch (err) {
      process.stderr.write(`turnhost repl: ${(err as Error).message}\n`);
      return 2;
    }
    return offlineRepl(location, paths.log);
  }
  let socket: Socket;
  try {
    socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(paths.replSocket);
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    });
  } catch {
    process.stderr.write(`turnhost repl: no daemon is running in ${home} (turnhost repl --offline reads the database)\n`);
    return EXIT_NOT_RUNNING;
  }
  return process.stdin.isTTY ? terminalSession(socket) : scriptedSession(socket);
}

function terminalSession(socket: Socket): Promise<number> {
  socket.write(`${JSON.stringify({ terminal: true })}\n`);
  process.stdin.setRawMode(true);
  process.stdin.pipe(socket);
  socket.pipe(process.stdout);
  return new Promise((resolve) =>
    socket.once('close', () => {
      process.stdin.setRawMode(false);
      process.stdin.unpipe(socket);
      process.stdin.pause();
      resolve(0);
    }),
  );
}

async function scriptedSession(socket: Socket): Promise<number> {
  let pending = '';
  let prompted: () => void = () => {};
  socket.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    process.stdout.write(text);
    pending += text;
    if (PROMPTS.some((p) => pending.endsWith(p))) {
      pending = '';
      prompted();
    }
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const prompt = () =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the REPL did not answer within ${LINE_TIMEOUT_MS / 1000} s`)), LINE_TIMEOUT_MS);
      prompted = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  let next = prompt();
  socket.write(`${JSON.stringify({ terminal: false })}\n`);
  await next;
  for await (const line of createInterface({ input: process.stdin, terminal: false })) {
    if (line.trim() === '.exit') break;
    next = prompt();
    socket.write(`${line}\n`);
    await next;
  }
  socket.write('.exit\n');
  await closed;
  process.stdout.write('\n');
  return 0;
}

function offlineRepl(location: StoreLocation, log: string): Promise<number> {
  const reader = readerOnDemand(location);
  const getReader = reader.get;
  const r = repl.start({ prompt: 'turnhost (offline)> ', terminal: process.stdin.isTTY ?? false, useGlobal: false, ignoreUndefined: true });
  const out = { write: (text: string) => void process.stdout.write(text) };
  // Piped commands are all read before their reads answer: the exit waits for them.
  const running: Promise<void>[] = [];
  const command = commandDefiner(r, out, (work) => running.push(work));
  defineDatabaseCommands(command, out, getReader, log);
  defineOfflineSessions(command, out, getReader);
  return new Promise((resolve) =>
    r.on('exit', () => {
      void Promise.allSettled(running)
        .then(() => reader.close())
        .finally(() => resolve(0));
    }),
  );
}
