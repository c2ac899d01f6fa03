import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type TurnhostClient } from '../../client/index.js';

/**
 * A stand-in daemon on a real unix socket: the first connection is dropped as soon as a
 * prompt.submit arrives (the answer is lost); later connections answer what a daemon that had
 * accepted it would. Only the client library's own behaviour is under test here.
 */
function fakeDaemon(path: string, submits: Record<string, unknown>[]): Promise<Server> {
  let connections = 0;
  const server = createServer((socket: Socket) => {
    const first = ++connections === 1;
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      for (let at = buffered.indexOf('\n'); at !== -1; at = buffered.indexOf('\n')) {
        const request = JSON.parse(buffered.slice(0, at)) as { id: number; method: string; params: Record<string, unknown> };
        buffered = buffered.slice(at + 1);
        const answer = (result: unknown) => socket.write(`${JSON.stringify({ jsonrpc: '2.0', id: request.id, result })}\n`);
        if (request.method === 'prompt.submit') {
          submits.push(request.params);
          if (first) socket.destroy();
          else answer({ status: 'duplicate', state: 'running', turn_id: 'turn-1' });
        } else if (request.method === 'session.resume') {
          answer({ session_id: request.params['session_id'], last_seq: 0, replay: 'complete', open_requests: [] });
        } else answer({ session_id: request.params['session_id'], session_key: 'k' });
      }
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

describe('turnhost/client: a submit cut off by a dropped connection', () => {
  let dir: string;
  let server: Server;
  let client: TurnhostClient;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'turnhost-resubmit-'))));
  afterEach(async () => {
    client?.close();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('is sent again once reconnected, with the same client_message_id, and answers what the daemon says of it', async () => {
    const submits: Record<string, unknown>[] = [];
    const socket = join(dir, 'turnhost.sock');
    server = await fakeDaemon(socket, submits);
    client = await connect({ socket, reconnect: { attempts: 5, initialDelayMs: 10, maxDelayMs: 50 } });
    const result = await client.submit('s', 'once');
    expect(submits).to.have.length(2);
    expect(submits[0]!['client_message_id']).to.be.a('string').and.equal(submits[1]!['client_message_id']);
    expect(submits[0]).to.include({ on_busy: 'queue', text: 'once' });
    expect(result).to.deep.equal({ status: 'duplicate', state: 'running', turn_id: 'turn-1' });
  });
});
