// The host's actors in this process, on a real SQLite file in a temp folder, with frames
// collected in memory: for the seed's shutdown rules, ported against the TypeScript modules.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { monotonicClock, type Clock } from '../../actors/clock.js';
import { startHost, type HostHandle } from '../../actors/host/host.js';
import { startSystem, stopSystem } from '../../actors/runtime.js';
import type { HostServices } from '../../actors/host/services.js';
import { fullQueueEvents } from '../../actors/host/queue-events.js';
import type { Agent } from '../../agents/agent.js';
import { AgentCatalogue } from '../../agents/catalogue.js';
import type { SessionSummary } from '../../persistence/reader.js';
import { SqliteReader } from '../../persistence/sqlite/sqlite-reader.js';
import { SqliteStore } from '../../persistence/sqlite/sqlite-store.js';
import { FrameWriter } from '../../protocol/frame-writer.js';
import { seenFrames, type Frame } from './processes.js';
import { Waiters } from './waiters.js';

/** How long frame() waits for a frame the host has not written yet. */
const FRAME_WAIT_MS = 10_000;

export interface InProcessHost {
  host: HostHandle;
  store: SqliteStore;
  services: HostServices;
  frames: Frame[];
  /** Resolves with the first frame (type and predicate) written from now on, or already written. */
  frame(type: string, where?: (f: Frame) => boolean): Promise<Frame>;
  sessions(): Promise<SessionSummary[]>;
  close(): Promise<void>;
}

export async function startInProcessHost(agent: Agent, options: { clock?: Clock; workers?: number } = {}): Promise<InProcessHost> {
  const dir = mkdtempSync(join(tmpdir(), 'turnhost-inproc-'));
  const file = join(dir, 'turnhost.db');
  const store = SqliteStore.open(file);
  const clock = options.clock ?? monotonicClock;
  const frames: Frame[] = [];
  const waiters = new Waiters<Frame>();
  const writer = new FrameWriter(
    {
      write(parts) {
        for (const line of Buffer.concat(parts).toString('utf8').split('\n')) {
          if (line === '') continue;
          const frame = JSON.parse(line) as Frame;
          frames.push(frame);
          waiters.offer(frame, 'one');
        }
      },
    },
    () => clock.hostNs(),
  );
  const log = pino({ level: process.env['TURNHOST_LOG_LEVEL'] ?? 'silent' });
  const services: HostServices = {
    store,
    writer,
    queueEvents: fullQueueEvents(writer),
    agents: AgentCatalogue.of(agent, log),
    clock,
    log,
    bootId: 'inprocess0000000000000000000000a',
    requestTimeoutMs: 600_000,
    tracing: null, webhookEvents: new Set(),
  };
  store.commitNowSync((w) => w.startBoot(services.bootId, process.pid));
  const system = startSystem();
  const host = startHost(system, services, { workers: options.workers ?? 8, heartbeatSecs: 0 });
  return {
    host,
    store,
    services,
    frames,
    frame(type, where = () => true) {
      const match = (f: Frame) => f.type === type && where(f);
      const found = frames.find(match);
      if (found) return Promise.resolve(found);
      return waiters.wait(match, FRAME_WAIT_MS, () => `no ${type} frame within ${FRAME_WAIT_MS} ms; saw ${seenFrames(frames)}`);
    },
    async sessions() {
      const reader = SqliteReader.open(file)!;
      try {
        return await reader.sessions();
      } finally {
        await reader.close();
      }
    },
    async close() {
      writer.flush();
      stopSystem(system);
      store.closeNow();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
