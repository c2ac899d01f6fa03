import { expect } from 'chai';
import { fullQueueEvents, itemView, queueDeltas } from '../../actors/host/queue-events.js';
import { QueueMirrors } from '../../actors/daemon/queue-mirrors.js';
import type { SessionState } from '../../actors/host/session-state.js';
import type { QueuedPrompt } from '../../persistence/store-writer.js';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameWriter, fdSink } from '../../protocol/frame-writer.js';
import type { QueueDeltaFrame } from '../../protocol/outbound.js';

let next = 0;
function prompt(text = `prompt ${next}`): QueuedPrompt {
  next++;
  return { queueId: `q-${next}`, text, clientMessageId: next % 2 ? `m-${next}` : null, requestId: `r-${next}`, turnId: `t-${next}`, queuedAt: 1_700_000_000_000 + next, position: next, by: null };
}

type Payload = { revision: number; items: unknown[] };

/** The host's frames, each line decoded. */
function capture(): { writer: FrameWriter; frames: Record<string, unknown>[] } {
  const frames: Record<string, unknown>[] = [];
  const writer = new FrameWriter({ write: (parts) => frames.push(...lines(parts).map((l) => JSON.parse(l) as Record<string, unknown>)) }, () => 1n);
  return { writer, frames };
}

function lines(parts: Buffer[]): string[] {
  return Buffer.concat(parts).toString('utf8').split('\n').filter((l) => l !== '');
}

/** What the clients get as the payload of each session.queue event: from the host's own events, or made by the daemon from deltas. */
function announcer(mode: 'full' | 'deltas'): { announce: (s: SessionState) => void; payloads: Payload[] } {
  const { writer, frames } = capture();
  const announcer = mode === 'full' ? fullQueueEvents(writer) : queueDeltas(writer);
  const mirrors = new QueueMirrors();
  const payloads: Payload[] = [];
  return {
    payloads,
    announce: (s) => {
      announcer.announce(s);
      writer.flush();
      const frame = frames.pop()!;
      expect(frames).to.have.length(0);
      if (mode === 'deltas') {
        expect(frame['type']).to.equal('queue.delta');
        const delta = frame as unknown as QueueDeltaFrame;
        payloads.push({ revision: delta.revision, items: JSON.parse(`[${mirrors.apply(delta).toString('utf8')}]`) as unknown[] });
        return;
      }
      const params = (frame as { type: string; message: { params: { type: string; payload: Payload } } }).message.params;
      expect([frame['type'], params.type]).to.deep.equal(['rpc', 'session.queue']);
      payloads.push(params.payload);
    },
  };
}

describe('session.queue events', () => {
  for (const mode of ['full', 'deltas'] as const) it(`carry the whole queue after every kind of change: added, started, edited, deleted, put back at the head, cleared (${mode})`, () => {
    const s = { sid: 'ü "quoted"', queueRevision: 0, queue: [] as QueuedPrompt[] } as unknown as SessionState;
    const { announce, payloads } = announcer(mode);
    const changes: ((q: QueuedPrompt[]) => void)[] = [
      (q) => q.push(prompt()),
      (q) => q.push(prompt('naïve "text"\nwith a newline')),
      (q) => q.push(prompt()),
      (q) => q.shift(),
      (q) => q.push(prompt()),
      (q) => (q[1] = { ...q[1]!, text: 'edited' }),
      (q) => q.splice(1, 1),
      (q) => q.unshift(prompt()),
      (q) => q.shift(),
      (q) => q.shift(),
      (q) => q.shift(),
      (q) => q.push(prompt()),
      (q) => q.splice(0),
      (q) => q.push(prompt()),
    ];
    for (const change of changes) {
      change(s.queue);
      s.queueRevision++;
      announce(s);
      expect(payloads.at(-1)).to.deep.equal({ revision: s.queueRevision, items: JSON.parse(JSON.stringify(s.queue.map(itemView))) });
    }
    expect(payloads).to.have.length(changes.length);
  });

  it('an event written earlier in the same event-loop turn keeps its items when the queue changes again before the flush', () => {
    const s = { sid: 's', queueRevision: 0, queue: [] as QueuedPrompt[] } as unknown as SessionState;
    const { writer, frames } = capture();
    const events = fullQueueEvents(writer);
    const snapshots: string[][] = [];
    for (let i = 0; i < 200; i++) {
      if (i % 3 === 2) s.queue.shift();
      else s.queue.push(prompt('x'.repeat(i)));
      s.queueRevision++;
      events.announce(s);
      snapshots.push(s.queue.map((q) => q.queueId));
    }
    writer.flush();
    expect(frames.map((f) => (f as { message: { params: { payload: { items: { queue_id: string }[] } } } }).message.params.payload.items.map((i) => i.queue_id))).to.deep.equal(snapshots);
  });

  it('a batch of thousands of events (more parts than one writev takes) reaches a file whole and in order', () => {
    const dir = mkdtempSync(join(tmpdir(), 'turnhost-writev-'));
    try {
      const fd = openSync(join(dir, 'frames'), 'w');
      const writer = new FrameWriter(fdSink(fd), () => 1n);
      const events = fullQueueEvents(writer);
      const sessions = Array.from({ length: 3000 }, (_, i) => ({ sid: `s${i}`, queueRevision: 1, queue: [prompt('p')] }) as unknown as SessionState);
      for (const s of sessions) events.announce(s); // ~700 KB: flushes of ~2,000 parts, past the 1,024 one writev takes
      writer.flush();
      closeSync(fd);
      const lines = readFileSync(join(dir, 'frames'), 'utf8').split('\n').filter((l) => l !== '');
      expect(lines.map((l) => (JSON.parse(l) as { sid: string }).sid)).to.deep.equal(sessions.map((s) => s.sid));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
