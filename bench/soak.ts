// `npm run soak -- --minutes N [--agent openai] [--history-cache-mib M]` (default 10 minutes, the
// script agent, the host's default cache): the bounds under a long mixed load. 64 sessions of
// script-agent turns through the daemon (plain text, `/ask` answered by the client, `/sleep`
// with interrupts, long streams), one client that drops its socket and resumes every 10 s, one
// that never reads, and a kill -9 of the host every 60 s. At the end, with the daemon stopped:
// acknowledged turns lost (0), turn rows left `running` (0), RSS per minute, the WAL's largest
// size, turns/s. With `--agent openai` the turns go to the model agent against a fake model server in
// this process (plain and 2,000-word prompts; a small context so that compressions keep each
// history near 100 KB): the agent reads its session's history on every call, so the host's history
// cache is in use, and the sessions' histories together outgrow a small `--history-cache-mib`; the
// run reports them next to the cache's bound. Writes bench/results/soak.json.
import { spawn } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { connect as connectSocket, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { connect, type TurnhostClient } from '../client/index.js';
import { DEFAULT_HISTORY_CACHE_MIB } from '../persistence/store.js';
import { FakeOpenAI, type ChatBody } from '../test/helpers/fake-openai.js';
import { seededRandom } from '../test/helpers/random.js';
import { CLI, median, printTable, round, rssMiB, verdict, withTempDir, writeResult } from './common.js';

const SESSIONS = 64;
const RESUME_EVERY_MS = 10_000;
const KILL_EVERY_MS = 60_000;
/** Kills fall half-way through each minute. */
const FIRST_KILL_MS = 30_000;
/** No kill this close to the end: the host that recovers the last kill's turns must have started. */
const QUIET_END_MS = 20_000;
const SAMPLE_EVERY_MS = 1000;

interface Acknowledged {
  sid: string;
  turnId: string;
}

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

function numberArg(name: string, fallback: number): number {
  const text = argument(name);
  const value = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
}

/** The model agent's soak: a fake server, and a context small enough that histories are compressed and stay bounded. */
async function modelAgentHome(home: string): Promise<FakeOpenAI> {
  const fake = await FakeOpenAI.start();
  fake.keepRequests = false;
  const reply = Array.from({ length: 200 }, (_, i) => `word${i} `);
  // The agent decides to compress from the prompt size the server reports: ~4 characters a token.
  const promptTokens = (body: ChatBody) => Math.ceil(body.messages.reduce((sum, m) => sum + (m.content?.length ?? 0), 0) / 4);
  // A compression's summary is asked for without streaming.
  fake.fallback = (body) => (body.stream === true ? { text: reply, usage: { prompt_tokens: promptTokens(body), completion_tokens: reply.length } } : { summary: reply.join('') });
  writeFileSync(join(home, 'agent.json'), JSON.stringify({ model: 'soak-model', base_url: fake.baseUrl, context_tokens: 32_000 }));
  return fake;
}

function medianKnown(values: (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : median(known);
}

function peaks(readings: { daemonMb: number | null; hostMb: number | null }[]): { daemonPeakMb: number | null; hostPeakMb: number | null } {
  const max = (values: (number | null)[]) => values.reduce<number | null>((m, v) => (v === null ? m : Math.max(m ?? v, v)), null);
  return { daemonPeakMb: max(readings.map((r) => r.daemonMb)), hostPeakMb: max(readings.map((r) => r.hostMb)) };
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** One session's endless mix of turns; each turn.end seen is an acknowledged turn. */
async function driveSession(client: TurnhostClient, sid: string, random: () => number, until: number, acknowledged: Acknowledged[], modelAgent: boolean): Promise<void> {
  await client.createSession({ session_id: sid });
  while (performance.now() < until) {
    // The model agent knows no directives: its mix is plain prompts and long ones.
    const pick = modelAgent ? (random() < 0.7 ? 0 : 0.9) : random();
    const text =
      pick < 0.4
        ? `plain turn ${Math.floor(random() * 1e6)}`
        : pick < 0.6
          ? 'a question\n/ask --timeout 30 colour?'
          : pick < 0.8
            ? 'a long wait\n/sleep 3'
            : Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');
    try {
      const interruptAfter = text.includes('/sleep') ? 200 + random() * 1500 : null;
      const timer = interruptAfter === null ? null : setTimeout(() => void client.interrupt(sid).catch(() => {}), interruptAfter);
      for await (const event of client.turn(sid, text)) {
        // A turn.end with the history's coordinates ran and was committed (an interrupt that
        // found the turn still waiting for a worker ends it with none, and stores nothing).
        if (event.type === 'turn.end' && event.payload.message_count !== undefined) acknowledged.push({ sid, turnId: event.payload.turn_id });
      }
      if (timer) clearTimeout(timer);
    } catch {
      // a crash (turn.error arrives as an event; a refused submit as a throw): the next turn goes on
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A client that submits and never reads; once the daemon cuts it off, another takes its place. */
function neverReading(socketPath: string, until: number): () => void {
  let socket: Socket | null = null;
  let n = 0;
  const open = (): void => {
    if (performance.now() > until) return;
    socket = connectSocket(socketPath);
    socket.on('connect', () => {
      socket!.pause();
      const text = Array.from({ length: 50_000 }, (_, i) => `w${i}`).join(' ');
      socket!.write(`${JSON.stringify({ jsonrpc: '2.0', id: ++n, method: 'prompt.submit', params: { session_id: 'never-reads', text, on_busy: 'reject' } })}\n`);
    });
    socket.on('error', () => {});
    socket.on('close', () => setTimeout(open, 1000));
  };
  open();
  const timer = setInterval(() => {
    // Nudge it to notice a close the daemon made: a paused socket sees no end until it reads.
    socket?.resume();
    socket?.pause();
  }, 5000);
  return () => {
    clearInterval(timer);
    socket?.destroy();
  };
}

export async function soak(): Promise<void> {
  const minutes = numberArg('--minutes', 10);
  const cacheMib = numberArg('--history-cache-mib', DEFAULT_HISTORY_CACHE_MIB);
  const agent = argument('--agent') ?? 'script';
  if (agent !== 'script' && agent !== 'openai') throw new Error('--agent must be script or openai');
  await withTempDir(async (home) => {
    const fake = agent === 'openai' ? await modelAgentHome(home) : null;
    const daemon = spawn(process.execPath, [CLI, 'daemon', '--home', home, '--workers', '16', '--agent', agent, '--history-cache-mib', String(cacheMib)], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, TURNHOST_LOG_LEVEL: 'warn' } });
    const socketPath = join(home, 'turnhost.sock');
    let client: TurnhostClient | null = null;
    for (let i = 0; i < 100 && client === null; i++) {
      client = await connect({ socket: socketPath }).catch(() => null);
      if (client === null) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (client === null) throw new Error('the daemon did not start');
    const main = client;
    main.onClarify(() => 'teal');
    const started = performance.now();
    const until = started + minutes * 60_000;
    const acknowledged: Acknowledged[] = [];
    const samples: { minute: number; daemonMb: number | null; hostMb: number | null; daemonPeakMb: number | null; hostPeakMb: number | null }[] = [];
    let walMax = 0;
    let kills = 0;
    let crashLoopsCleared = 0;

    const follower = await connect({ socket: socketPath });
    const followed = Array.from({ length: 8 }, (_, i) => `s${i}`);
    const followerEvents = followed.map((sid) => follower.events(sid));
    const drains = followerEvents.map(async (events) => {
      for await (const _event of events) void _event;
    });
    const resumeTimer = setInterval(() => follower['rpc'].close(), RESUME_EVERY_MS);
    const stopNeverReading = neverReading(socketPath, until);
    const killHost = async (): Promise<void> => {
      if (performance.now() > until - QUIET_END_MS) return;
      const status = await main.hostStatus().catch(() => null);
      // A kill every minute is more than the restart policy's 3 in 300 s: the soak clears the
      // crash loop the way an operator would (host.restart), and counts how often it had to.
      if (status?.host.state === 'failed') {
        crashLoopsCleared++;
        await main.restartHost().catch(() => {});
        return;
      }
      if (status?.host.pid) {
        process.kill(status.host.pid, 'SIGKILL');
        kills++;
        await new Promise((resolve) => setTimeout(resolve, 2000));
        if ((await main.hostStatus().catch(() => null))?.host.state === 'failed') {
          crashLoopsCleared++;
          await main.restartHost().catch(() => {});
        }
      }
    };
    let killTimer: NodeJS.Timeout | undefined;
    const firstKill = setTimeout(() => {
      void killHost();
      killTimer = setInterval(() => void killHost(), KILL_EVERY_MS);
    }, FIRST_KILL_MS);
    /**
     * A minute's RSS is the median of its per-second readings: one reading lands anywhere in V8's
     * collection cycle (the daemon's moved by ±15% between consecutive minutes); the peak is kept too.
     */
    let readings: { daemonMb: number | null; hostMb: number | null }[] = [];
    const sample = (minute: number): void => {
      samples.push({ minute, daemonMb: medianKnown(readings.map((r) => r.daemonMb)), hostMb: medianKnown(readings.map((r) => r.hostMb)), ...peaks(readings) });
      readings = [];
      process.stdout.write(`minute ${minute}: ${acknowledged.length} turns acknowledged, ${kills} host kills\n`);
    };
    const sampleTimer = setInterval(() => {
      walMax = Math.max(walMax, sizeOf(join(home, 'turnhost.db-wal')));
      void main.hostStatus().then(
        (status) => readings.push({ daemonMb: rssMiB(daemon.pid ?? null), hostMb: rssMiB(status.host.pid) }),
        () => {},
      );
      const minute = Math.floor((performance.now() - started) / 60_000);
      if (minute > (samples.at(-1)?.minute ?? 0)) sample(minute);
    }, SAMPLE_EVERY_MS);

    const random = seededRandom(7);
    await Promise.all(Array.from({ length: SESSIONS }, (_, i) => driveSession(main, `s${i}`, () => random(), until, acknowledged, fake !== null)));
    const seconds = (performance.now() - started) / 1000;
    if (seconds % 60 > 5) sample(Math.ceil(seconds / 60));
    clearInterval(resumeTimer);
    clearTimeout(firstKill);
    clearInterval(killTimer);
    clearInterval(sampleTimer);
    stopNeverReading();
    follower.close();
    await Promise.allSettled(drains);
    await main.shutdownDaemon(10);
    main.close();
    await new Promise((resolve) => daemon.once('exit', resolve));
    await fake?.close();

    const db = new Database(join(home, 'turnhost.db'), { readonly: true });
    const stored = new Set((db.prepare("SELECT turn_id FROM turns WHERE status = 'completed' OR status = 'interrupted'").all() as { turn_id: string }[]).map((r) => r.turn_id));
    const withMessages = new Set((db.prepare('SELECT DISTINCT turn_id FROM messages WHERE turn_id IS NOT NULL').all() as { turn_id: string }[]).map((r) => r.turn_id));
    const running = (db.prepare("SELECT count(*) AS n FROM turns WHERE status = 'running'").get() as { n: number }).n;
    // What the sessions' histories hold now (a compression replaces what it summarized): what the cache would need to keep them all.
    const historyMb = (db.prepare('SELECT COALESCE(SUM(length(content)), 0) AS n FROM messages').get() as { n: number }).n / 1024 / 1024;
    db.close();
    // A compression (the model agent's) replaces the messages it summarized: then a turn's row is what must stay.
    const lost = acknowledged.filter((t) => !stored.has(t.turnId) || (agent === 'script' && !withMessages.has(t.turnId))).length;

    const second = samples.find((s) => s.minute === 2);
    const last = samples.at(-1);
    const within = (a: number | null | undefined, b: number | null | undefined) => (a && b ? Math.abs(b - a) / a <= 0.1 : null);
    const mb = (v: number | null) => (v === null ? '' : round(v));
    printTable('RSS per minute (MB: median of the minute, peak)', ['minute', 'daemon', 'daemon peak', 'host', 'host peak'], samples.map((s) => [s.minute, mb(s.daemonMb), mb(s.daemonPeakMb), mb(s.hostMb), mb(s.hostPeakMb)]));
    const checks = {
      acknowledgedTurnsLost: { value: lost, target: '0', met: lost === 0 },
      runningRowsLeft: { value: running, target: '0', met: running === 0 },
      daemonRssLastVsSecondMinute: { value: `${round(second?.daemonMb ?? 0)} → ${round(last?.daemonMb ?? 0)}`, target: 'within 10%', met: within(second?.daemonMb, last?.daemonMb) },
      hostRssLastVsSecondMinute: { value: `${round(second?.hostMb ?? 0)} → ${round(last?.hostMb ?? 0)}`, target: 'within 10%', met: within(second?.hostMb, last?.hostMb) },
      historiesVsCache: { value: `${round(historyMb, 1)} MB of histories, cache ${cacheMib} MiB`, target: agent === 'openai' ? 'more than the cache holds' : '(the script agent reads no history)', met: agent === 'openai' ? historyMb > cacheMib : true },
      walLargestMb: { value: round(walMax / 1024 / 1024, 1), target: 'bounded (16 MiB checkpoints)', met: walMax < 64 * 1024 * 1024 },
      turnsPerSecond: { value: round(acknowledged.length / seconds, 1), target: '', met: true },
    };
    printTable(
      `soak (${agent} agent): ${minutes} min, ${acknowledged.length} acknowledged turns, ${kills} host kills`,
      ['check', 'value', 'target', 'verdict'],
      Object.entries(checks).map(([k, c]) => [k, c.value, c.target, c.met === null ? 'n/a (too short)' : verdict(c.met)]),
    );
    process.stdout.write(`crash loops cleared with host.restart: ${crashLoopsCleared}\n`);
    const file = writeResult('soak', { minutes, agent, cacheMib, historyMb, acknowledged: acknowledged.length, kills, crashLoopsCleared, samples, checks });
    process.stdout.write(`\nwrote ${file}\n`);
  });
}

await soak();
