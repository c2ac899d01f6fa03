// A prompt's files to a guest agent (PROTOCOL.md §2.4, AGENT.md §6), with the Python example as
// the guest, in its sandbox: an image as ACP's image block to a guest that declares images; a PDF
// written to the session folder's .turnhost/attachments and linked; an image to a guest that
// declares none refused, naming the agent.
import { HttpAgent } from '@ag-ui/client';
import type { BaseEvent } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventParams } from '../../client/rpc-connection.js';
import { pdfDocument, pngImage } from '../helpers/content-files.js';
import { hostPid, startDaemon, TestClient } from '../helpers/daemon.js';
import { guestArgs, guestScene, PYTHON_GUEST, type GuestScene } from '../helpers/guests.js';
import { Editor } from '../helpers/editor.js';
import { Harness, processesNaming } from '../helpers/processes.js';

const b64 = (bytes: Buffer): string => bytes.toString('base64');
/** The 1×1 PNG the fixture guest's `picture` shows. */
const PIXEL_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('content beyond text to a guest agent (the Python example, sandboxed)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  async function clientFor(scene: GuestScene): Promise<TestClient> {
    return TestClient.connect(await startDaemon(h, guestArgs(scene), {}, scene.home));
  }

  async function turnOf(client: TestClient, sid: string, content: unknown[]): Promise<EventParams> {
    client.events.length = 0;
    await client.call('prompt.submit', { session_id: sid, content });
    await client.until(() => client.events.some((e) => e.type === 'turn.end' || e.type === 'turn.error'), 'the turn to end');
    return client.events.find((e) => e.type === 'turn.end' || e.type === 'turn.error')!;
  }

  it('a guest that declares images gets the PNG as an image block, and the PDF in .turnhost/attachments of its folder, linked', async () => {
    const scene = guestScene(h, 'python');
    const client = await clientFor(scene);
    const png = pngImage(6, 6, 5);
    const pdf = pdfDocument('attached '.repeat(200_000)); // over a chunk of the store (1 MiB): read back whole
    await client.call('session.create', { session_id: 'img', cwd: scene.dir });
    const end = await turnOf(client, 'img', [
      { type: 'text', text: 'look' },
      { type: 'image', mimeType: 'image/png', data: b64(png) },
      { type: 'resource_link', name: 'report.pdf', mimeType: 'application/pdf', data: b64(pdf) },
    ]);
    expect(end.type, JSON.stringify(end.payload)).to.equal('turn.end');
    const reply = client.events.filter((e) => e.type === 'message.delta').map((e) => String(e.payload['text'])).join('');
    expect(reply).to.equal(`python guest: look\n[image image/png ${png.length} bytes]\n[file report.pdf ${pdf.length} bytes]`);
    expect(readFileSync(join(scene.dir, '.turnhost', 'attachments', 'report.pdf')).equals(pdf)).to.equal(true);
  });

  it('an editor pastes an image through turnhost acp: the guest gets it as an image block', async () => {
    const scene = guestScene(h, 'python');
    const editor = await Editor.start(h, scene.home, {}, {}, { args: guestArgs(scene) });
    const png = pngImage(3, 3, 23);
    const { sessionId } = await editor.agent.request('session/new', { cwd: scene.dir, mcpServers: [] });
    const ended = await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'pasted' }, { type: 'image', mimeType: 'image/png', data: b64(png) }] });
    expect(ended.stopReason).to.equal('end_turn');
    expect(editor.text('agent_message_chunk')).to.equal(`python guest: pasted\n[image image/png ${png.length} bytes]`);
  });

  it('a guest that declares no images: an image is refused with "agent acp does not take images"; a PDF still goes as a link', async () => {
    const scene = guestScene(h, 'python');
    scene.write({ args: [PYTHON_GUEST, scene.state, '--no-images'] });
    const client = await clientFor(scene);
    await client.call('session.create', { session_id: 'noimg', cwd: scene.dir });
    const refused = await turnOf(client, 'noimg', [{ type: 'image', mimeType: 'image/png', data: b64(pngImage()) }]);
    expect(refused.type).to.equal('turn.error');
    expect(refused.payload).to.deep.include({ reason: 'invalid', message: 'agent acp does not take images' });
    const pdf = pdfDocument('still');
    const end = await turnOf(client, 'noimg', [{ type: 'resource_link', name: 'still.pdf', mimeType: 'application/pdf', data: b64(pdf) }]);
    expect(end.type).to.equal('turn.end');
  });
});

describe("a guest's diffs and terminals, kept whole (the TS fixture guest; turnhost acp)", function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  const DIFF = { type: 'diff', path: '/work/src/a.ts', oldText: 'const a = 1;\n', newText: 'const a = 2;\n' };

  it('the socket client gets tool.update and tool.complete with the diff and the terminal; the history keeps them as the tool result\'s parts, its content the text form', async () => {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'allow' } });
    const client = await TestClient.connect(await startDaemon(h, guestArgs(scene), {}, scene.home));
    await client.call('session.create', { session_id: 'ed' });
    await client.call('prompt.submit', { session_id: 'ed', text: 'edit /work/src/a.ts' });
    await client.nextEvent('turn.end', 'ed');
    const update = client.events.find((e) => e.type === 'tool.update')!;
    const complete = client.events.find((e) => e.type === 'tool.complete')!;
    expect(update.payload['content']).to.deep.equal([DIFF]);
    expect(complete.payload).to.deep.include({ ok: true, summary: '[diff /work/src/a.ts]\n[terminal term-1]', content: [DIFF, { type: 'terminal', terminalId: 'term-1', output: 'tests passed\n', exitCode: 0 }] });
    const messages = (await client.call<{ messages: { role: string; content: string; parts?: unknown[] }[] }>('session.history', { session_id: 'ed' })).messages;
    const result = messages.find((m) => m.role === 'tool')!;
    expect(result).to.deep.include({ content: '[diff /work/src/a.ts]\n[terminal term-1]', parts: [DIFF, { type: 'terminal', terminalId: 'term-1', output: 'tests passed\n', exitCode: 0 }] });
  });

  it('a guest\'s images (a tool result\'s, the reply\'s) are stored once as blobs the session names: parts in tool.complete and the history, readable by blob.get', async () => {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'allow' } });
    const client = await TestClient.connect(await startDaemon(h, guestArgs(scene), {}, scene.home));
    await client.call('session.create', { session_id: 'pic' });
    await client.call('prompt.submit', { session_id: 'pic', text: 'picture' });
    await client.nextEvent('turn.end', 'pic');
    const pixel = Buffer.from(PIXEL_PNG, 'base64');
    const blob = `sha256:${createHash('sha256').update(pixel).digest('hex')}`;
    const image = { type: 'image', mimeType: 'image/png', blob, size: pixel.length };
    expect(client.event('tool.complete', 'pic')!.payload['content']).to.deep.equal([image]);
    expect(client.reply('pic')).to.equal(`here it is: [image image/png ${pixel.length} bytes ${blob}]`);
    const messages = (await client.call<{ messages: { role: string; content: string; parts?: unknown[] }[] }>('session.history', { session_id: 'pic' })).messages;
    expect(messages.find((m) => m.role === 'tool')!.parts).to.deep.equal([image]);
    expect(messages.at(-1)).to.deep.include({ role: 'assistant', parts: [{ type: 'text', text: 'here it is: ' }, image] });
    const read = await client.call<{ data: string; mimeType: string }>('blob.get', { session_id: 'pic', blob });
    expect(Buffer.from(read.data, 'base64').equals(pixel)).to.equal(true);
    expect(read.mimeType).to.equal('image/png');
  });

  const AG_UI_TOKEN = 'content-ag-ui-token-0123456789abcdef';

  /** One AG-UI run of `text` on a new thread of the fixture guest (behind the edge): its events, each checked against AG-UI's schema. */
  async function agUiRun(threadId: string, text: string): Promise<{ events: BaseEvent[]; url: string }> {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'allow' } });
    const daemon = await startDaemon(h, [...guestArgs(scene), '--listen', '127.0.0.1:0'], { TURNHOST_TOKEN: AG_UI_TOKEN }, scene.home);
    const url = (await (await TestClient.connect(daemon)).call<{ http: { url: string } }>('host.status')).http.url;
    const on = new HttpAgent({ url: `${url}/v1/ag-ui`, headers: { authorization: `Bearer ${AG_UI_TOKEN}` }, threadId });
    on.addMessage({ id: 'u1', role: 'user', content: text });
    const events: BaseEvent[] = [];
    await on.runAgent({ runId: `run-${threadId}` }, { onEvent: ({ event }) => void events.push(EventSchemas.parse(event) as BaseEvent) });
    return { events, url };
  }

  it('an AG-UI client gets the diff and the terminal as ACTIVITY_SNAPSHOTs (checked against AG-UI\'s schema)', async () => {
    const { events } = await agUiRun('ag-edit', 'edit /work/src/a.ts');
    const activities = events.filter((e) => e.type === 'ACTIVITY_SNAPSHOT') as unknown as { activityType: string; content: Record<string, unknown> }[];
    expect(activities.map((a) => [a.activityType, a.content])).to.deep.equal([
      ['diff', { path: DIFF.path, oldText: DIFF.oldText, newText: DIFF.newText }],
      ['diff', { path: DIFF.path, oldText: DIFF.oldText, newText: DIFF.newText }],
      ['terminal', { terminalId: 'term-1', output: 'tests passed\n', exitCode: 0 }],
    ]);
  });

  it('an AG-UI client gets a guest\'s image as an ACTIVITY_SNAPSHOT naming the edge\'s address for its bytes, which its token reads', async () => {
    const { events, url } = await agUiRun('ag-pic', 'picture');
    const pixel = Buffer.from(PIXEL_PNG, 'base64');
    const hex = createHash('sha256').update(pixel).digest('hex');
    const image = events.find((e) => e.type === 'ACTIVITY_SNAPSHOT') as unknown as { activityType: string; content: Record<string, unknown> };
    expect(image).to.deep.include({ activityType: 'image', content: { mimeType: 'image/png', blob: `sha256:${hex}`, size: pixel.length, url: `/v1/sessions/ag-pic/blobs/${hex}` } });
    const fetched = await fetch(`${url}${String(image.content['url'])}`, { headers: { authorization: `Bearer ${AG_UI_TOKEN}` } });
    expect(fetched.status).to.equal(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(pixel)).to.equal(true);
  });

  it('an editor behind turnhost acp gets the guest\'s diff as an ACP diff, as it would from the guest directly, and again on session/load', async () => {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'allow' } });
    const editor = await Editor.start(h, scene.home, {}, {}, { args: guestArgs(scene) });
    const { sessionId } = await editor.agent.request('session/new', { cwd: scene.dir, mcpServers: [] });
    expect((await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit /work/src/a.ts' }] })).stopReason).to.equal('end_turn');
    const updates = editor.updates.map((n) => n.update).filter((u) => u.sessionUpdate === 'tool_call_update');
    expect(updates.map((u) => ('content' in u ? u.content : null))).to.deep.equal([
      [DIFF],
      [DIFF, { type: 'content', content: { type: 'text', text: 'tests passed\n\n(exit code 0)' } }],
    ]);
    const second = await Editor.start(h, scene.home, {}, {}, { args: guestArgs(scene) });
    await second.agent.request('session/load', { sessionId, cwd: scene.dir, mcpServers: [] });
    const replayed = second.updates.map((n) => n.update).find((u) => u.sessionUpdate === 'tool_call_update');
    expect(replayed && 'content' in replayed ? replayed.content?.[0] : null).to.deep.equal(DIFF);
  });
});

describe('terminals turnhost runs for a guest (ACP terminal/*, in its sandbox)', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  type Part = { type: string; terminalId?: string; command?: string; output?: string; exitCode?: number | null };

  async function sandboxedGuest(): Promise<{ client: TestClient; scene: GuestScene; daemon: Awaited<ReturnType<typeof startDaemon>> }> {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'allow' } });
    const daemon = await startDaemon(h, guestArgs(scene), {}, scene.home);
    return { client: await TestClient.connect(daemon), scene, daemon };
  }

  it('a command runs in the session\'s folder inside the sandbox; its command, output and exit code reach tool.complete and the history\'s parts', async () => {
    const { client, scene } = await sandboxedGuest();
    await client.call('session.create', { session_id: 'term', cwd: scene.dir });
    await client.call('prompt.submit', { session_id: 'term', text: `run pwd; echo made > made.txt; test -e ${scene.home}/turnhost.db || echo home-hidden; exit 3` });
    await client.nextEvent('turn.end', 'term');
    const expected: Part = { type: 'terminal', terminalId: 'term-1', command: `pwd; echo made > made.txt; test -e ${scene.home}/turnhost.db || echo home-hidden; exit 3`, output: `${scene.dir}\nhome-hidden\n`, exitCode: 3 };
    expect(client.reply('term')).to.equal(`exit 3 truncated false: ${scene.dir}\nhome-hidden\n`);
    expect(client.event('tool.complete', 'term')!.payload['content']).to.deep.equal([expected]);
    expect(readFileSync(join(scene.dir, 'made.txt'), 'utf8')).to.equal('made\n');
    const messages = (await client.call<{ messages: { role: string; parts?: Part[] }[] }>('session.history', { session_id: 'term' })).messages;
    expect(messages.find((m) => m.role === 'tool')!.parts).to.deep.equal([expected]);
  });

  it('outputByteLimit keeps the newest bytes, cut at a character\'s start, and says it truncated', async () => {
    const { client, scene } = await sandboxedGuest();
    await client.call('session.create', { session_id: 'cut', cwd: scene.dir });
    // 2000 two-byte characters, then "end": 10 bytes kept would split a character; 9 are whole.
    await client.call('prompt.submit', { session_id: 'cut', text: "run --limit 10 printf 'é%.0s' $(seq 2000); printf end" });
    await client.nextEvent('turn.end', 'cut');
    expect(client.reply('cut')).to.equal('exit 0 truncated true: éééend');
  });

  it('output captured before a kill -9 of the host is still shown after it (tool.update, replayed), and the command is gone with its host', async () => {
    const { client, scene } = await sandboxedGuest();
    const marker = `th-term-${process.pid}-${Date.now()}`;
    await client.call('session.create', { session_id: 'kept', cwd: scene.dir });
    await client.call('prompt.submit', { session_id: 'kept', text: `run echo captured-before-crash; exec sh -c "sleep 120; :" ${marker}` });
    const shown = (e: { payload: Record<string, unknown> }) => ((e.payload['content'] as Part[] | undefined) ?? []).some((p) => p.output === 'captured-before-crash\n');
    await client.nextEvent('tool.update', 'kept', shown);
    const sleeper = processesNaming([marker]);
    expect(sleeper, 'the command runs').to.have.length.greaterThan(0);
    process.kill(await hostPid(client), 'SIGKILL');
    await client.nextEvent('turn.error', 'kept');
    const after = await TestClient.connect({ socket: join(scene.home, 'turnhost.sock') });
    await after.call('session.resume', { session_id: 'kept', after_seq: 0 });
    await after.until(() => after.events.some((e) => e.type === 'tool.update' && shown(e)), 'the replayed tool.update');
    expect(await scene.gone(sleeper, 10_000), 'the terminal\'s command died with its host').to.equal(true);
  });
});
