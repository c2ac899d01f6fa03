// A body the edge refuses (PROTOCOL.md §5.3): the 413 goes out at once and the rest of the body is
// read and dropped (up to 64 MiB or 10 s, as nginx's lingering close), so that every client reads
// the answer, whatever it is, and the connection serves its next request. Each client 5 times.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { once } from 'node:events';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readToken } from '../../edge/http-token.js';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';

const run = promisify(execFile);
const TWO_MIB = 2 * 1024 * 1024;
const TRIES = 5;
const REFUSED = 'the body is larger than 1 MiB';

describe('a refused body: every client reads the 413, and the connection goes on (real daemon)', function () {
  this.timeout(120_000);
  const h = new Harness();
  let port = 0;
  let token = '';
  let bodyFile = '';
  let path = '';

  before(async () => {
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0']);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'big' });
    port = Number(new URL((await client.call<{ http: { url: string } }>('host.status')).http.url).port);
    client.close();
    token = readToken(daemon.home);
    bodyFile = join(h.tempDir(), 'body.json');
    writeFileSync(bodyFile, JSON.stringify({ text: 'x'.repeat(TWO_MIB) }));
    path = `http://127.0.0.1:${port}/v1/sessions/big/prompts`;
  });
  after(() => h.cleanup());

  it("Node's fetch reads the 413 (no EPIPE), 5 of 5", async () => {
    const body = JSON.stringify({ text: 'x'.repeat(TWO_MIB) });
    for (let i = 0; i < TRIES; i++) {
      const answer = await fetch(path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
      expect(answer.status).to.equal(413);
      expect(((await answer.json()) as { error: { message: string } }).error.message).to.equal(REFUSED);
    }
  });

  it("Node's http.request reads the 413, and its kept-alive connection serves the next request, 5 of 5", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, target: string, body?: Buffer): Promise<{ status: number; text: string; reused: boolean }> =>
      new Promise((resolve, reject) => {
        const req = request(`http://127.0.0.1:${port}${target}`, { method, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text, reused: req.reusedSocket }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      for (let i = 0; i < TRIES; i++) {
        const refused = await send('POST', '/v1/sessions/big/prompts', Buffer.alloc(TWO_MIB, 0x20));
        expect([refused.status, JSON.parse(refused.text).error.message]).to.deep.equal([413, REFUSED]);
        const next = await send('GET', '/v1/status');
        expect(next.status).to.equal(200);
        expect(next.reused, 'the same connection').to.equal(true);
      }
    } finally {
      agent.destroy();
    }
  });

  it('curl reads the 413, 5 of 5', async () => {
    for (let i = 0; i < TRIES; i++) {
      const { stdout } = await run('curl', ['-sS', '-o', '-', '-w', '\n%{http_code}', '-H', `authorization: Bearer ${token}`, '-H', 'content-type: application/json', '--data-binary', `@${bodyFile}`, path]);
      const [text, status] = stdout.split('\n');
      expect(status).to.equal('413');
      expect(JSON.parse(text!).error.message).to.equal(REFUSED);
    }
  });

  it("Python's urllib reads the 413, 5 of 5", async () => {
    const script = [
      'import sys, urllib.request, urllib.error',
      'body = open(sys.argv[2], "rb").read()',
      'req = urllib.request.Request(sys.argv[1], data=body, headers={"authorization": "Bearer " + sys.argv[3], "content-type": "application/json"})',
      'try:',
      '    urllib.request.urlopen(req)',
      'except urllib.error.HTTPError as e:',
      '    print(e.code, e.read().decode())',
    ].join('\n');
    for (let i = 0; i < TRIES; i++) {
      const { stdout } = await run('python3', ['-c', script, path, bodyFile, token]);
      const [status, ...text] = stdout.trim().split(' ');
      expect(status).to.equal('413');
      expect(JSON.parse(text.join(' ')).error.message).to.equal(REFUSED);
    }
  });

  it('a body past 64 MiB: the 413, then the connection is closed before the body ends', async () => {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {}); // the server closes while this side still writes
    socket.write(`POST /v1/sessions/big/prompts HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${token}\r\ncontent-length: ${100 * 1024 * 1024}\r\n\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let written = 0;
    // A 100 MiB body: the server closes once 64 MiB of it are dropped, long before the client is done.
    while (written < 100 && !socket.destroyed) {
      if (!socket.write(chunk)) await Promise.race([once(socket, 'drain').catch(() => {}), closed]);
      written++;
    }
    await closed;
    expect(answer.startsWith('HTTP/1.1 413')).to.equal(true);
    expect(written, 'MiB written before the server closed').to.be.below(100);
  });
});
