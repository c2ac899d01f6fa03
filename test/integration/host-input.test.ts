import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { Harness, type HostProcess } from '../helpers/processes.js';
import { seededRandom } from '../helpers/random.js';

const MiB = 1024 * 1024;

function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

async function roundTrip(host: HostProcess, sid: string): Promise<void> {
  host.send({ type: 'turn.start', sid, request_id: `probe-${sid}`, text: 'still alive?' });
  const end = await host.next('turn.end', { where: (f) => f['request_id'] === `probe-${sid}` });
  expect(end).to.include({ interrupted: false });
}

/** Writes a chunk and resolves when the pipe has taken it, so a big write cannot outrun the host. */
function write(host: HostProcess, chunk: Buffer | string): Promise<void> {
  return new Promise((resolve, reject) => host.child.stdin!.write(chunk, (err) => (err ? reject(err) : resolve())));
}

describe('host: bad input', () => {
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('answers bad lines with error frames and keeps going', async () => {
    const host = await h.startHost(h.tempDir());
    host.sendRaw('this is not json\n');
    host.sendRaw('[1,2,3]\n');
    host.send({ type: 'bogus', request_id: 'b' });
    host.send({ type: 'turn.start', sid: 's', request_id: 'r', text: 5 });
    host.send({ type: 'control', sid: 's', request_id: 'c' });
    const errors = [await host.next('error'), await host.next('error'), await host.next('error')];
    expect(errors[0]!['message']).to.match(/^invalid json: /);
    expect(errors[1]).to.include({ message: 'frame must be an object', request_id: null });
    expect(errors[2]).to.include({ message: 'unknown frame type: bogus', request_id: 'b' });
    expect(await host.next('turn.error')).to.include({ request_id: 'r', message: 'text must be a string', reason: 'invalid' });
    expect(await host.next('control.error')).to.include({ request_id: 'c', message: 'route_name required' });
    await roundTrip(host, 'after-errors');
  });

  it('skips a line over 8 MiB with "frame too large", and reads the next line normally', async () => {
    const host = await h.startHost(h.tempDir());
    const huge = JSON.stringify({ type: 'turn.start', sid: 'big', request_id: 'big', text: 'x'.repeat(9 * MiB) });
    await write(host, huge + '\n');
    expect(await host.next('error')).to.include({ request_id: null, message: 'frame too large' });
    await roundTrip(host, 'after-huge');
    expect(host.all('turn.started', (f) => f['sid'] === 'big')).to.deep.equal([]);
  });

  it('keeps memory bounded for a 50 MiB line without a newline', async function () {
    this.timeout(60_000);
    const host = await h.startHost(h.tempDir());
    await roundTrip(host, 'warm-up');
    const before = rssKiB(host.pid);
    const chunk = Buffer.alloc(MiB, 'z');
    let peak = before;
    for (let i = 0; i < 50; i++) {
      await write(host, chunk);
      peak = Math.max(peak, rssKiB(host.pid));
    }
    expect(await host.next('error')).to.include({ message: 'frame too large' });
    await write(host, '\n');
    await roundTrip(host, 'after-50-mib');
    peak = Math.max(peak, rssKiB(host.pid));
    const grewMiB = (peak - before) / 1024;
    expect(grewMiB, `RSS grew by ${grewMiB.toFixed(1)} MiB`).to.be.at.most(16);
  });

  it('survives 1,000 random garbage lines and still runs a normal turn (seeded)', async function () {
    this.timeout(60_000);
    const seed = 4242;
    const random = seededRandom(seed);
    const host = await h.startHost(h.tempDir());
    const pieces = ['{', '}', '[', ']', '"type"', ':', '"turn.start"', '"sid"', ',', '\u00e9', '\\', 'null', '1e999', ' ', '"respond"', '"control"', '{"type":', '\u0000'];
    const lines: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const length = 1 + Math.floor(random() * 40);
      let line = '';
      for (let j = 0; j < length; j++) line += pieces[Math.floor(random() * pieces.length)];
      lines.push(line.replace(/\n/g, ''));
    }
    await write(host, lines.join('\n') + '\n');
    await roundTrip(host, `after-garbage-seed-${seed}`);
    expect(host.child.exitCode, `seed ${seed}`).to.equal(null);
  });

  it('answers respond for an unknown session, bad params, and an answer to nothing open', async () => {
    const host = await h.startHost(h.tempDir());
    host.send({ type: 'respond', sid: 'nobody', request_id: 'x1', params: { frame: { jsonrpc: '2.0', id: 'srq-000000000000', result: {} } } });
    expect(await host.next('respond.error')).to.include({ request_id: 'x1', message: 'session not found' });
    host.send({ type: 'respond', sid: 'nobody', request_id: 'x2', params: 'yes' });
    expect(await host.next('respond.error')).to.include({ request_id: 'x2', message: 'response params must be an object' });
    await roundTrip(host, 's1');
    host.send({ type: 'respond', sid: 's1', request_id: 'x3', params: { frame: { jsonrpc: '2.0', id: 'srq-000000000000', result: {} } } });
    const ack = await host.next('respond.ack');
    expect(ack['response']).to.deep.equal({ jsonrpc: '2.0', id: 'x3', result: { status: 'expired' } });
  });
});
