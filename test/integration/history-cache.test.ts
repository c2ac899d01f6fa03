// The history cache over the real host: what an agent is handed as the history before its prompt
// equals what the database holds, after appends, a compression, and a kill -9 and restart.
import { expect } from 'chai';
import { storeRows } from '../helpers/test-store.js';
import { Harness, type Frame, type HostProcess } from '../helpers/processes.js';

const HISTORY_AGENT = ['--agent', 'test/fixtures/history-agent.mjs'];

/** The history agent's reply for a turn whose prompt was stored at `promptSeq`, made from the database. */
async function expectedReply(home: string, sid: string, promptSeq: number): Promise<string> {
  const before = await storeRows<{ role: string; content: string }>(home, 'SELECT role, content FROM messages WHERE sid = ? AND seq < ? ORDER BY seq', [sid, promptSeq]);
  const last = before.at(-1);
  return `seen ${before.length}; last: ${last ? `${last.role}: ${last.content}` : 'none'}`;
}

async function turnReply(host: HostProcess, sid: string, requestId: string, text: string): Promise<{ end: Frame; reply: string }> {
  host.send({ type: 'turn.start', sid, request_id: requestId, text });
  const end = await host.ended(requestId);
  const complete = host.all('rpc', (f) => f['sid'] === sid && JSON.stringify(f['message']).includes('"message.complete"')).at(-1)!;
  return { end, reply: String(((complete['message'] as { params: { payload: { text: string } } }).params.payload.text)) };
}

describe('the history cache over the real host', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('hands the agent the stored history after appends, a compression, and a kill -9 and restart', async () => {
    const home = h.tempDir();
    let host = await h.startHost(home, HISTORY_AGENT);
    for (let i = 1; i <= 4; i++) {
      const { end, reply } = await turnReply(host, 's1', `r${i}`, `prompt ${i}`);
      expect(reply, `turn ${i}`).to.equal(await expectedReply(home, 's1', Number(end['message_count']) - 2));
    }
    host.send({ type: 'control', sid: 's1', request_id: 'c1', route_name: 'session.compress' });
    await host.next('control.ack', { where: (f) => f['request_id'] === 'c1' });
    const compressed = await turnReply(host, 's1', 'r5', 'after the compression');
    expect(compressed.reply).to.equal(await expectedReply(home, 's1', Number(compressed.end['message_count']) - 2));
    expect(compressed.reply).to.match(/^seen 5; /);
    host.kill('SIGKILL');
    await host.waitExit();
    host = await h.startHost(home, HISTORY_AGENT);
    const restarted = await turnReply(host, 's1', 'r6', 'after the restart');
    expect(restarted.reply).to.equal(await expectedReply(home, 's1', Number(restarted.end['message_count']) - 2));
    expect(restarted.reply).to.match(/^seen 7; last: assistant: seen 5; /);
  });
});
