import { expect } from 'chai';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { ClientOutput } from '../../actors/daemon/client-output.js';
import { unreadLimits } from '../../actors/daemon/unread-bound.js';
import { Harness } from '../helpers/processes.js';

/** A connected pair of unix sockets: the daemon's end and what a client reads from the other. */
async function socketPair(h: Harness): Promise<{ server: Server; daemonEnd: Socket; received: Promise<string> }> {
  const path = join(h.tempDir(), 'pair.sock');
  const server = createServer();
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const client = connect(path);
  let text = '';
  client.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const received = new Promise<string>((resolve) => client.once('end', () => resolve(text)));
  const daemonEnd = await accepted;
  return { server, daemonEnd, received };
}

describe('a client connection\'s output', () => {
  const h = new Harness();
  afterEach(() => h.cleanup());

  it('sends the lines of one event-loop turn in order, in one write per run of text, byte lines as they are', async () => {
    const { server, daemonEnd, received } = await socketPair(h);
    const writes: (string | Buffer)[] = [];
    const write = daemonEnd.write.bind(daemonEnd);
    daemonEnd.write = ((chunk: string | Buffer) => (writes.push(chunk), write(chunk))) as typeof daemonEnd.write;
    const output = new ClientOutput(daemonEnd, unreadLimits(), () => expect.fail('no bound is reached'));
    output.write('a\n');
    output.write('b\n');
    output.write(Buffer.from('bytes\n'));
    output.write('c\n');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map(String)).to.deep.equal(['a\nb\n', 'bytes\n', 'c\n']);
    output.write('last\n');
    output.end(); // lines held for the turn leave before the end
    expect(await received).to.equal('a\nb\nbytes\nc\nlast\n');
    server.close();
  });
});
