// Content beyond text through the client socket (PROTOCOL.md §2.4), against the real daemon and host
// on a real SQLite file: files in a prompt stored once, named by reference in the history, read back;
// each refusal naming its block with nothing stored and no turn; a queued prompt keeps its files;
// a delete frees what no other session names; a blob put before a kill -9 is there after it.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContentBlock } from '../../protocol/content.js';
import type { HistoryEntry } from '../../protocol/history-entry.js';
import { pdfDocument, pngImage } from '../helpers/content-files.js';
import { readDatabase } from '../helpers/database.js';
import { hostPid, rpcError, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { httpRequest, type HttpAnswer } from '../helpers/http.js';
import { Harness } from '../helpers/processes.js';

const sha = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const b64 = (bytes: Buffer): string => bytes.toString('base64');

/** What the store holds of files: their contents, and which session names which. */
function stored(home: string): { contents: number; named: string[] } {
  return readDatabase(home, (db) => ({
    contents: (db.prepare('SELECT count(*) AS n FROM home_contents').get() as { n: number }).n,
    named: (db.prepare('SELECT sid, sha256 FROM session_blobs ORDER BY sid, sha256').all() as { sid: string; sha256: string }[]).map((r) => `${r.sid} ${r.sha256.slice(0, 8)}`),
  }));
}

async function history(client: TestClient, sid: string): Promise<HistoryEntry[]> {
  return (await client.call<{ messages: HistoryEntry[] }>('session.history', { session_id: sid })).messages;
}

describe('content beyond text: files in prompts (real daemon, SQLite)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  async function scene(args: string[] = []): Promise<{ daemon: Daemon; client: TestClient }> {
    const daemon = await startDaemon(h, args);
    return { daemon, client: await TestClient.connect(daemon) };
  }

  it('a PNG and a PDF in one prompt: stored once, the history names them (parts) beside the text form, the agent describes each, blob.get gives the bytes back', async () => {
    const { daemon, client } = await scene();
    const png = pngImage(8, 8, 7);
    const pdf = pdfDocument('quarterly');
    await client.call('session.create', { session_id: 'c1' });
    const content = [
      { type: 'text', text: 'what is in these?' },
      { type: 'image', mimeType: 'image/png', data: b64(png), name: 'shot.png' },
      { type: 'resource_link', name: 'report.pdf', mimeType: 'application/pdf', data: b64(pdf) },
    ];
    const submitted = await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'c1', content });
    await client.nextEvent('turn.end', 'c1');
    const [prompt, reply] = await history(client, 'c1');
    const expected: ContentBlock[] = [
      { type: 'text', text: 'what is in these?' },
      { type: 'image', mimeType: 'image/png', blob: sha(png), size: png.length, name: 'shot.png' },
      { type: 'resource_link', name: 'report.pdf', mimeType: 'application/pdf', blob: sha(pdf), size: pdf.length },
    ];
    expect(prompt).to.deep.include({ role: 'user', turn_id: submitted.turn_id, parts: expected });
    expect(prompt!.content).to.equal(`what is in these?\n[image image/png ${png.length} bytes ${sha(png)}]\n[file report.pdf application/pdf ${pdf.length} bytes ${sha(pdf)}]`);
    expect(reply!.content, 'the script agent echoes each block described').to.include(`[image image/png ${png.length} bytes ${sha(png)}]`);
    expect(JSON.stringify(prompt), 'no bytes in the history').to.not.include(b64(png).slice(0, 40));
    const back = await client.call<{ data: string; mimeType: string; size: number; name: string }>('blob.get', { session_id: 'c1', blob: sha(png) });
    expect(back).to.deep.include({ mimeType: 'image/png', size: png.length, name: 'shot.png' });
    expect(Buffer.from(back.data, 'base64').equals(png)).to.equal(true);
    expect(stored(daemon.home)).to.deep.equal({ contents: 2, named: [`c1 ${sha(pdf).slice(7, 15)}`, `c1 ${sha(png).slice(7, 15)}`].sort() });
    const messageRows = readDatabase(daemon.home, (db) => db.prepare('SELECT content, parts FROM messages').all() as { content: string; parts: string | null }[]);
    expect(messageRows.every((row) => !`${row.content}${row.parts}`.includes(b64(png).slice(0, 40))), 'message rows hold no bytes').to.equal(true);
  });

  it('the same image in 5 prompts of 2 sessions (put once, then named by blob) is stored once; a delete frees it only when no session names it', async () => {
    const { daemon, client } = await scene();
    const png = pngImage(16, 16, 3);
    const put = await client.call<{ blob: string; size: number; mimeType: string }>('blob.put', { mimeType: 'image/png', name: 'same.png', data: b64(png) });
    expect(put).to.deep.equal({ blob: sha(png), size: png.length, mimeType: 'image/png' });
    for (const sid of ['a', 'b']) await client.call('session.create', { session_id: sid });
    for (const sid of ['a', 'a', 'a', 'b', 'b']) {
      await client.call('prompt.submit', { session_id: sid, content: [{ type: 'image', mimeType: 'image/png', blob: sha(png) }] });
      await client.nextEvent('turn.end', sid);
      client.events.length = 0;
    }
    expect(stored(daemon.home)).to.deep.equal({ contents: 1, named: [`a ${sha(png).slice(7, 15)}`, `b ${sha(png).slice(7, 15)}`] });
    await client.call('session.delete', { session_id: 'a' });
    expect(stored(daemon.home)).to.deep.equal({ contents: 1, named: [`b ${sha(png).slice(7, 15)}`] });
    await client.call('session.delete', { session_id: 'b' });
    expect(stored(daemon.home)).to.deep.equal({ contents: 0, named: [] });
  });

  it('refuses, naming the block, with nothing stored and no turn: bad base64, bytes that are not their type, a type not taken, over --max-blob-mib, a file: URI, a blob the session does not name', async () => {
    const { daemon, client } = await scene(['--max-blob-mib', '1']);
    await client.call('session.create', { session_id: 'r' });
    const png = pngImage(4, 4, 9);
    const jpegClaimedPng = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64)]);
    const cases: [unknown[], RegExp][] = [
      [[{ type: 'text', text: 'a' }, { type: 'image', mimeType: 'image/png', data: 'not base64!' }], /content\[1\]: data is not valid base64/],
      [[{ type: 'image', mimeType: 'image/png', data: b64(jpegClaimedPng) }], /content\[0\]: the bytes are not image\/png/],
      [[{ type: 'resource_link', name: 'x.zip', mimeType: 'application/zip', data: b64(Buffer.from('PK\u0003\u0004')) }], /content\[0\]: the type application\/zip is not taken/],
      [[{ type: 'text', text: 'big' }, { type: 'image', mimeType: 'image/png', data: b64(Buffer.concat([png, Buffer.alloc(1024 * 1024)])) }], /content\[1\]: over --max-blob-mib \(1 MiB\)/],
      [[{ type: 'resource_link', name: 'passwd', uri: 'file:///etc/passwd' }], /content\[0\]: a file: URI is refused/],
      [[{ type: 'image', mimeType: 'image/png', blob: sha(png) }], /content\[0\]: sha256:[0-9a-f]{64} is not a blob this session may read/],
      [[], /content: must hold at least one block/],
    ];
    for (const [content, message] of cases) {
      const err = await rpcError(client.call('prompt.submit', { session_id: 'r', content }));
      expect(err.code, String(message)).to.equal(-32602);
      expect(err.message).to.match(message);
    }
    expect(stored(daemon.home)).to.deep.equal({ contents: 0, named: [] });
    expect(await history(client, 'r')).to.deep.equal([]);
    expect(client.events.filter((e) => e.type === 'turn.started')).to.deep.equal([]);
    const putRefused = await rpcError(client.call('blob.put', { mimeType: 'application/pdf', data: b64(png) }));
    expect(putRefused.message).to.match(/data: the bytes are not application\/pdf/);
    expect(stored(daemon.home).contents).to.equal(0);
  });

  it('a prompt with files that finds its session busy is queued with them, and its turn gets them', async () => {
    const { client } = await scene();
    await client.call('session.create', { session_id: 'q' });
    await client.call('prompt.submit', { session_id: 'q', text: '/sleep 0.5' });
    await client.nextEvent('turn.started', 'q');
    const png = pngImage(4, 4, 11);
    const queued = await client.call<{ status: string; queue_id: string }>('prompt.submit', { session_id: 'q', content: [{ type: 'text', text: 'later' }, { type: 'image', mimeType: 'image/png', data: b64(png) }] });
    expect(queued.status).to.equal('queued');
    await client.until(() => client.events.filter((e) => e.type === 'turn.end').length === 2, 'both turns to end');
    const prompts = (await history(client, 'q')).filter((m) => m.role === 'user');
    expect(prompts[1]!.parts).to.deep.equal([
      { type: 'text', text: 'later' },
      { type: 'image', mimeType: 'image/png', blob: sha(png), size: png.length },
    ]);
  });

  it('a retry sends the prompt\'s files again; an edit takes new ones (checked before anything is rewound); a schedule fires with its files', async () => {
    const { daemon, client } = await scene();
    const png = pngImage(5, 5, 13);
    const pdf = pdfDocument('edited');
    const image = { type: 'image', mimeType: 'image/png', blob: sha(png), size: png.length };
    await client.call('session.create', { session_id: 'br' });
    await client.call('prompt.submit', { session_id: 'br', content: [{ type: 'text', text: 'first' }, { type: 'image', mimeType: 'image/png', data: b64(png) }] });
    await client.nextEvent('turn.end', 'br');
    client.events.length = 0;
    await client.call('session.retry', { session_id: 'br' });
    await client.nextEvent('turn.end', 'br');
    let prompts = (await history(client, 'br')).filter((m) => m.role === 'user');
    expect(prompts.map((m) => m.parts)).to.deep.equal([[{ type: 'text', text: 'first' }, image]]);
    const turnId = prompts[0]!.turn_id;
    const refused = await rpcError(client.call('prompt.edit', { session_id: 'br', turn_id: turnId, content: [{ type: 'image', mimeType: 'image/png', data: b64(pdf) }] }));
    expect(refused.message).to.match(/^invalid params: content\[0\]/);
    expect((await history(client, 'br')).filter((m) => m.role === 'user').map((m) => m.turn_id), 'nothing rewound').to.deep.equal([turnId]);
    client.events.length = 0;
    await client.call('prompt.edit', { session_id: 'br', turn_id: turnId, text: 'second', content: [{ type: 'resource_link', name: 'e.pdf', mimeType: 'application/pdf', data: b64(pdf) }] });
    await client.nextEvent('turn.end', 'br');
    prompts = (await history(client, 'br')).filter((m) => m.role === 'user');
    expect(prompts.map((m) => m.parts)).to.deep.equal([[{ type: 'text', text: 'second' }, { type: 'resource_link', name: 'e.pdf', mimeType: 'application/pdf', blob: sha(pdf), size: pdf.length }]]);
    client.events.length = 0;
    const at = new Date(Date.now() + 300).toISOString();
    await client.call('schedule.create', { session_id: 'br', at, content: [{ type: 'text', text: 'scheduled' }, { type: 'image', mimeType: 'image/png', blob: sha(png) }] });
    await client.nextEvent('turn.end', 'br');
    prompts = (await history(client, 'br')).filter((m) => m.role === 'user');
    expect(prompts.at(-1)!.parts).to.deep.equal([{ type: 'text', text: 'scheduled' }, image]);
    expect(stored(daemon.home).contents, 'each file stored once').to.equal(2);
  });

  it('an upload no session names is forgotten after --unnamed-upload-hours, its bytes freed; one a prompt or a session named stays', async () => {
    const { daemon, client } = await scene(['--unnamed-upload-hours', '0.001', '--retention-sweep-secs', '1']);
    const [lost, toSession, prompted] = [pngImage(3, 3, 51), pngImage(3, 3, 52), pngImage(3, 3, 53)];
    await client.call('session.create', { session_id: 'up' });
    await client.call('blob.put', { mimeType: 'image/png', data: b64(lost) });
    await client.call('blob.put', { mimeType: 'image/png', data: b64(toSession), session_id: 'up' });
    const put = await client.call<{ blob: string }>('blob.put', { mimeType: 'image/png', data: b64(prompted) });
    await client.call('prompt.submit', { session_id: 'up', content: [{ type: 'image', mimeType: 'image/png', blob: put.blob }] });
    await client.nextEvent('turn.end', 'up');
    // The uploads are 3.6 s old at a sweep after that (one a second): the one nobody named goes.
    await daemon.process.logged(/"msg":"retention: 0 session\(s\) deleted, 0 archived, 1 unnamed upload\(s\) forgotten"/, 15_000);
    expect(stored(daemon.home)).to.deep.equal({ contents: 2, named: [`up ${sha(toSession).slice(7, 15)}`, `up ${sha(prompted).slice(7, 15)}`].sort() });
    const refused = await rpcError(client.call('prompt.submit', { session_id: 'up', content: [{ type: 'image', mimeType: 'image/png', blob: sha(lost) }] }));
    expect(refused.message).to.include('is not a blob this session may read');
  });

  it('turnhost chat --attach FILE (twice): the files go with the prompt; a file that cannot be read is one line, exit 1', async () => {
    const { daemon } = await scene();
    const dir = h.tempDir();
    const png = pngImage(5, 5, 17);
    const pdf = pdfDocument('by the cli');
    writeFileSync(join(dir, 'shot.png'), png);
    writeFileSync(join(dir, 'notes.pdf'), pdf);
    const chat = await h.runCli(['chat', '--home', daemon.home, '--session', 'cli', '--attach', join(dir, 'shot.png'), '--attach', join(dir, 'notes.pdf'), 'these two']);
    expect(chat.code, chat.stderr).to.equal(0);
    expect(chat.stdout).to.include(`these two\n[image image/png ${png.length} bytes ${sha(png)}]\n[file notes.pdf application/pdf ${pdf.length} bytes ${sha(pdf)}]`);
    const missing = await h.runCli(['chat', '--home', daemon.home, '--attach', join(dir, 'nothing.png'), 'hi']);
    expect([missing.code, missing.stderr]).to.deep.equal([1, `turnhost chat: cannot read ${join(dir, 'nothing.png')}: ENOENT\n`]);
  });

  it('export with files is turnhost-session/2 (each file a line before the first message naming it); another home imports it, files and all; a file line that lies about its bytes is refused', async () => {
    const { daemon, client } = await scene();
    const png = pngImage(6, 6, 61);
    await client.call('session.create', { session_id: 'ex' });
    await client.call('prompt.submit', { session_id: 'ex', content: [{ type: 'text', text: 'keep this' }, { type: 'image', mimeType: 'image/png', data: b64(png), name: 'kept.png' }] });
    await client.nextEvent('turn.end', 'ex');
    const folder = h.tempDir();
    const file = join(folder, 'ex.jsonl');
    expect((await h.runCli(['export', 'ex', '--out', file, '--home', daemon.home])).code).to.equal(0);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>);
    expect(lines[0]).to.deep.include({ format: 'turnhost-session/2' });
    const blobAt = lines.findIndex((line) => 'blob' in line);
    const firstMessage = lines.findIndex((line) => 'message' in line);
    expect(blobAt).to.be.within(1, firstMessage - 1);
    expect(lines[blobAt]!['blob']).to.deep.equal({ sha256: sha(png), mimeType: 'image/png', size: png.length, name: 'kept.png', data: b64(png) });

    const other = await startDaemon(h);
    const imported = await h.runCli(['import', file, '--as', 'copy', '--home', other.home]);
    expect([imported.code, imported.stdout], imported.stderr).to.deep.equal([0, 'copy: imported 2 message(s), 1 turn(s)\n']);
    const there = await TestClient.connect(other);
    const [prompt] = await history(there, 'copy');
    expect(prompt!.parts).to.deep.equal([{ type: 'text', text: 'keep this' }, { type: 'image', mimeType: 'image/png', blob: sha(png), size: png.length, name: 'kept.png' }]);
    const back = await there.call<{ data: string }>('blob.get', { session_id: 'copy', blob: sha(png) });
    expect(Buffer.from(back.data, 'base64').equals(png)).to.equal(true);

    const lying = join(folder, 'lying.jsonl');
    const forged = lines.map((line) => ('blob' in line ? { blob: { ...line['blob'], data: b64(pngImage(6, 6, 62)) } } : line));
    writeFileSync(lying, forged.map((line) => JSON.stringify(line)).join('\n'));
    const refused = await h.runCli(['import', lying, '--as', 'forged', '--home', other.home]);
    expect([refused.code, refused.stderr]).to.deep.equal([1, `turnhost import: ${lying}: line ${blobAt + 1}: the file's bytes are not ${sha(png)}; nothing imported\n`]);
  });

  it('a file over a chunk (2.5 MiB) is stored in chunks and read back whole: blob.get, export and import; its chunks go with the last session that names it', async () => {
    const { daemon, client } = await scene();
    const text = Buffer.from(Array.from({ length: 2.5 * 1024 * 1024 }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join(''));
    await client.call('session.create', { session_id: 'big' });
    const { blob } = await client.call<{ blob: string }>('blob.put', { mimeType: 'text/plain', name: 'big.txt', data: b64(text), session_id: 'big' });
    await client.call('prompt.submit', { session_id: 'big', content: [{ type: 'resource_link', name: 'big.txt', mimeType: 'text/plain', blob }] });
    await client.nextEvent('turn.end', 'big');
    const chunks = (home: string) => readDatabase(home, (db) => (db.prepare('SELECT count(*) AS n FROM content_chunks').get() as { n: number }).n);
    expect([stored(daemon.home).contents, chunks(daemon.home)]).to.deep.equal([1, 2]);
    const back = await client.call<{ data: string }>('blob.get', { session_id: 'big', blob });
    expect(Buffer.from(back.data, 'base64').equals(text)).to.equal(true);
    const file = join(h.tempDir(), 'big.jsonl');
    expect((await h.runCli(['export', 'big', '--out', file, '--home', daemon.home])).code).to.equal(0);
    const other = await startDaemon(h);
    expect((await h.runCli(['import', file, '--as', 'copy', '--home', other.home])).code).to.equal(0);
    const there = await TestClient.connect(other);
    expect(Buffer.from((await there.call<{ data: string }>('blob.get', { session_id: 'copy', blob })).data, 'base64').equals(text)).to.equal(true);
    expect(chunks(other.home)).to.equal(2);
    await client.call('session.delete', { session_id: 'big' });
    expect([stored(daemon.home).contents, chunks(daemon.home)]).to.deep.equal([0, 0]);
  });

  it('a blob put before a kill -9 of the daemon and its host is there after the restart, and a prompt names it', async () => {
    const first = await startDaemon(h);
    const client = await TestClient.connect(first);
    const pdf = pdfDocument('kept');
    await client.call('blob.put', { mimeType: 'application/pdf', name: 'kept.pdf', data: b64(pdf) });
    const host = await hostPid(client);
    client.close();
    process.kill(first.process.pid, 'SIGKILL');
    process.kill(host, 'SIGKILL');
    await first.process.waitExit();
    const again = await startDaemon(h, [], {}, first.home);
    const next = await TestClient.connect(again);
    await next.call('session.create', { session_id: 'k' });
    await next.call('prompt.submit', { session_id: 'k', content: [{ type: 'resource_link', name: 'kept.pdf', blob: sha(pdf) }] });
    await next.nextEvent('turn.end', 'k');
    const [prompt] = await history(next, 'k');
    expect(prompt!.parts).to.deep.equal([{ type: 'resource_link', name: 'kept.pdf', blob: sha(pdf), mimeType: 'application/pdf', size: pdf.length }]);
  });
});

describe('content beyond text over the HTTP edge: uploads, downloads, and who may read a file (real daemon)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  it("a member uploads a PNG and a PDF (the raw body), prompts with them and reads them back; another member gets one 404 for a file that exists and for one that does not, and may not name it; the bounds answer 413, 415 and 400", async () => {
    const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', '--max-blob-mib', '1']);
    const owner = await TestClient.connect(daemon);
    const port = Number(new URL((await owner.call<{ http: { url: string } }>('host.status')).http.url).port);
    const cli = async (...args: string[]) => (await h.runCli([...args, '--home', daemon.home])).stdout.trim();
    const [alice, bob] = [await cli('user', 'add', 'alice'), await cli('user', 'add', 'bob')];
    const as = (token: string, type = 'application/json') => ({ authorization: `Bearer ${token}`, 'content-type': type });
    for (const [token, sid] of [[alice, 'al'], [bob, 'bo']] as const) {
      expect((await httpRequest(port, { method: 'POST', path: '/v1/sessions', headers: as(token), body: { session_id: sid } })).status).to.equal(201);
    }
    const png = pngImage(10, 10, 13);
    const pdf = pdfDocument('uploaded');
    const upload = (token: string, sid: string, bytes: Buffer, type: string, name: string) =>
      httpRequest(port, { method: 'POST', path: `/v1/sessions/${sid}/blobs`, headers: { ...as(token, type), 'x-filename': name }, body: bytes });
    const pngUp = await upload(alice, 'al', png, 'image/png', 'screen shot.png');
    expect([pngUp.status, pngUp.json()]).to.deep.equal([201, { blob: sha(png), size: png.length, mimeType: 'image/png' }]);
    expect((await upload(alice, 'al', pdf, 'application/pdf', 'report.pdf')).status).to.equal(201);

    const image = await httpRequest(port, { path: `/v1/sessions/al/blobs/${sha(png)}`, headers: as(alice) });
    expect([image.status, image.headers['content-type'], image.headers['x-content-type-options'], image.headers['content-disposition']]).to.deep.equal([200, 'image/png', 'nosniff', 'inline; filename="screen_shot.png"']);
    expect(image.bytes.equals(png)).to.equal(true);
    const file = await httpRequest(port, { path: `/v1/sessions/al/blobs/${sha(pdf).slice(7)}`, headers: as(alice) });
    expect([file.status, file.headers['content-type'], file.headers['content-disposition']]).to.deep.equal([200, 'application/pdf', 'attachment; filename="report.pdf"']);
    expect(file.bytes.equals(pdf)).to.equal(true);

    await owner.call('session.resume', { session_id: 'al' });
    const submitted = await httpRequest(port, { method: 'POST', path: '/v1/sessions/al/prompts', headers: as(alice), body: { text: 'see', content: [{ type: 'image', mimeType: 'image/png', blob: sha(png) }] } });
    expect(submitted.status, submitted.text).to.equal(202);
    await owner.until(() => owner.events.some((e) => e.type === 'turn.end' && e.session_id === 'al'), 'the turn to end');
    const [prompt] = await history(owner, 'al');
    expect(prompt!.parts).to.deep.equal([{ type: 'text', text: 'see' }, { type: 'image', mimeType: 'image/png', blob: sha(png), size: png.length, name: 'screen shot.png' }]);

    const elsewhere = await httpRequest(port, { path: `/v1/sessions/al/blobs/${sha(png)}`, headers: as(bob) });
    const namedNowhere = await httpRequest(port, { path: `/v1/sessions/bo/blobs/${sha(png)}`, headers: as(bob) });
    const nowhere = await httpRequest(port, { path: `/v1/sessions/bo/blobs/${sha(Buffer.from('never stored'))}`, headers: as(bob) });
    expect([elsewhere.status, namedNowhere.status, nowhere.status]).to.deep.equal([404, 404, 404]);
    const shape = (answer: HttpAnswer) => answer.text.replace(/sha256:[0-9a-f]{64}/, 'sha256:X');
    expect(shape(namedNowhere), 'the same 404 whether the blob exists or not').to.equal(shape(nowhere));
    const borrowed = await httpRequest(port, { method: 'POST', path: '/v1/sessions/bo/prompts', headers: as(bob), body: { content: [{ type: 'image', mimeType: 'image/png', blob: sha(png) }] } });
    expect([borrowed.status, (borrowed.json()['error'] as { message: string }).message]).to.deep.equal([400, `invalid params: content[0]: ${sha(png)} is not a blob this session may read`]);

    const tooBig = await upload(bob, 'bo', Buffer.concat([png, Buffer.alloc(1024 * 1024)]), 'image/png', 'big.png');
    const notTaken = await upload(bob, 'bo', Buffer.from('PK\u0003\u0004zip'), 'application/zip', 'a.zip');
    const notWhatItSays = await upload(bob, 'bo', pdf, 'image/png', 'fake.png');
    expect([tooBig.status, notTaken.status, notWhatItSays.status]).to.deep.equal([413, 415, 400]);
    expect(readDatabase(daemon.home, (db) => db.prepare("SELECT count(*) AS n FROM session_blobs WHERE sid = 'bo'").get())).to.deep.equal({ n: 0 });
    owner.close();
  });
});
