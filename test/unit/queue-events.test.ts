import { expect } from 'chai';
import { announceQueue, itemView } from '../../actors/host/queue-events.js';
import type { SessionState } from '../../actors/host/session-state.js';
import type { QueuedPrompt } from '../../persistence/store-writer.js';
import { FrameWriter } from '../../protocol/frame-writer.js';

let next = 0;
function prompt(text = `prompt ${next}`): QueuedPrompt {
  next++;
  return { queueId: `q-${next}`, text, clientMessageId: next % 2 ? `m-${next}` : null, requestId: `r-${next}`, turnId: `t-${next}`, queuedAt: 1_700_000_000_000 + next, position: next };
}

/** Each session.queue event's payload, as a client decodes it. */
function announcer(): { announce: (s: SessionState) => void; payloads: { revision: number; items: unknown[] }[] } {
  const payloads: { revision: number; items: unknown[] }[] = [];
  const writer = new FrameWriter(
    {
      write(parts) {
        for (const line of Buffer.concat(parts).toString('utf8').split('\n').filter((l) => l !== '')) {
          const frame = JSON.parse(line) as { type: string; sid: string; message: { params: { type: string; session_id: string; payload: { revision: number; items: unknown[] } } } };
          expect(frame.type).to.equal('rpc');
          expect(frame.message.params.type).to.equal('session.queue');
          payloads.push(frame.message.params.payload);
        }
      },
    },
    () => 1n,
  );
  return {
    payloads,
    announce: (s) => {
      announceQueue(s, writer);
      writer.flush();
    },
  };
}

describe('session.queue events', () => {
  it('carry the whole queue after every kind of change: added, started, edited, deleted, put back at the head, cleared', () => {
    const s = { sid: 'ü "quoted"', queueRevision: 0, queue: [] as QueuedPrompt[] } as unknown as SessionState;
    const { announce, payloads } = announcer();
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
    const written: string[] = [];
    const writer = new FrameWriter({ write: (parts) => written.push(Buffer.concat(parts).toString('utf8')) }, () => 1n);
    const snapshots: string[][] = [];
    for (let i = 0; i < 200; i++) {
      if (i % 3 === 2) s.queue.shift();
      else s.queue.push(prompt('x'.repeat(i)));
      s.queueRevision++;
      announceQueue(s, writer);
      snapshots.push(s.queue.map((q) => q.queueId));
    }
    writer.flush();
    const lines = written.join('').split('\n').filter((l) => l !== '');
    expect(lines.map((l) => (JSON.parse(l) as { message: { params: { payload: { items: { queue_id: string }[] } } } }).message.params.payload.items.map((i) => i.queue_id))).to.deep.equal(snapshots);
  });
});
