import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const PROMPTS = 5;
const WORDS = 200_000;
/**
 * The daemon's RSS may grow this much above idle while the million events pass through it: the
 * issue's bound. Measured +39 to +54 MB (bin/daemon-heap.ts: with V8's default heap growth it was
 * +90 to +145, mostly garbage collected late at ~200,000 events/s).
 */
const RSS_BOUND_MB = 64;

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

describe('a client that never reads (real processes)', function () {
  this.timeout(180_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('is cut off at the outbound bound while 1,000,000 fragments stream; the daemon stays bounded, others go on, and a resume loses nothing', async () => {
    const daemon = await startDaemon(h, ['--workers', '8']);
    const other = await TestClient.connect(daemon);
    const daemonPid = (await other.call<{ supervisor: { pid: number } }>('host.status')).supervisor.pid;
    const idleMb = rssMb(daemonPid);

    const prompts = Array.from({ length: PROMPTS }, (_, p) => Array.from({ length: WORDS }, (_, i) => `p${p}w${i}`).join(' '));
    const slow = connect(daemon.socket);
    await new Promise((resolve) => slow.once('connect', resolve));
    slow.pause(); // never reads: the kernel's buffer fills, then the daemon's
    const slowClosed = new Promise<void>((resolve) => slow.once('close', () => resolve()));
    slow.on('error', () => {});
    prompts.forEach((text, p) => slow.write(`${JSON.stringify({ jsonrpc: '2.0', id: p, method: 'prompt.submit', params: { session_id: `slow-${p}`, text } })}\n`));

    let peakMb = idleMb;
    const sampler = setInterval(() => (peakMb = Math.max(peakMb, rssMb(daemonPid))), 50);
    try {
      // Meanwhile another client's turns run as usual.
      await other.call('session.create', { session_id: 'other' });
      for (let i = 0; i < 20; i++) {
        await other.call('prompt.submit', { session_id: 'other', text: `turn ${i}` });
        await other.nextEvent('turn.end', 'other', (e) => e.payload['message_count'] === 2 * (i + 1));
      }
      await daemon.process.logged(/client is not reading its output: disconnecting it/, 60_000);
      // The terminal wakes up: it reads what had reached it, then finds the connection closed.
      slow.resume();
      await slowClosed;
      // Every streamed turn ends, whether or not anyone reads.
      const reader = await TestClient.connect(daemon);
      for (let p = 0; p < PROMPTS; p++) {
        const resumed = await reader.call<{ replay: string; first_seq?: number }>('session.resume', { session_id: `slow-${p}`, after_seq: 0 });
        expect(resumed.replay).to.equal('partial');
        await reader.nextEvent('turn.end', `slow-${p}`, () => true);
      }
    } finally {
      clearInterval(sampler);
    }
    expect(peakMb - idleMb, `daemon RSS went from ${idleMb.toFixed(0)} MB to ${peakMb.toFixed(0)} MB`).to.be.below(RSS_BOUND_MB);
    expect(other.reply('other').split('|')).to.have.length(20);

    // What the replay no longer held is in the history: every reply is whole.
    const reader = await TestClient.connect(daemon);
    for (let p = 0; p < PROMPTS; p++) {
      const history = await reader.call<{ messages: { role: string; content: string }[] }>('session.history', { session_id: `slow-${p}` });
      expect(history.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
      expect(history.messages[1]!.content).to.equal(prompts[p]);
    }
  });
});
