// Claude Code as a turnhost guest (AGENT.md §6), through @zed-industries/claude-code-acp, offline
// against a fake Anthropic Messages API on 127.0.0.1: real tool calls, real permission requests,
// and a `session/load` that brings its memory back after a kill -9. Its own suite (`npm run
// test:guests`, run by .ci/run): each session runs Claude Code's CLI, seconds to start.
import type { RequestPermissionRequest } from '@agentclientprotocol/sdk';
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EventParams } from '../../client/rpc-connection.js';
import { BASH_TIMEOUT_MS, CLAUDE_AGENT_ACP, claudeScene, conversationText, WRITTEN, type ClaudeScene } from '../helpers/claude-code.js';
import { pngImage } from '../helpers/content-files.js';
import { hostPid, hostReady, startDaemon, TestClient, type Daemon } from '../helpers/daemon.js';
import { Editor } from '../helpers/editor.js';
import { filesUnder } from '../helpers/files.js';
import { Harness } from '../helpers/processes.js';
import { nodeArgs } from '../helpers/cluster.js';
import { postgresForSuite } from '../helpers/postgres.js';

const API_KEY = 'sk-ant-LEAKCANARY-5d2e8a71c4';
const TURN_MS = 60_000;
/** A short lease: the node that takes the session over waits seconds, not ten. */
const LEASE_SECS = 2;

describe('Claude Code as a guest agent (claude-code-acp, a fake Anthropic API)', function () {
  this.timeout(180_000);
  const h = new Harness();
  const scenes: ClaudeScene[] = [];
  const server = postgresForSuite();
  afterEach(async () => {
    await h.cleanup();
    await Promise.all(scenes.splice(0).map((scene) => scene.fake.close()));
  });

  async function start(top: Record<string, unknown> = {}, command?: string): Promise<{ scene: ClaudeScene; daemon: Daemon; client: TestClient }> {
    const scene = await claudeScene(h, top, command);
    scenes.push(scene);
    const daemon = await startDaemon(h, scene.args, { ANTHROPIC_API_KEY: API_KEY }, scene.home);
    const client = await TestClient.connect(daemon);
    await client.call('session.create', { session_id: 'cc', cwd: scene.work });
    return { scene, daemon, client };
  }

  /** The events of the session's last turn, from its turn.started. */
  const lastTurn = (client: TestClient): EventParams[] => {
    const events = client.events.filter((e) => e.session_id === 'cc');
    return events.slice(events.map((e) => e.type).lastIndexOf('turn.started'));
  };
  const ended = (client: TestClient, turnId: string) => () =>
    client.events.some((e) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turnId);

  async function submit(client: TestClient, text: string): Promise<string> {
    return (await client.call<{ turn_id: string }>('prompt.submit', { session_id: 'cc', text })).turn_id;
  }

  async function run(client: TestClient, text: string): Promise<EventParams[]> {
    const turnId = await submit(client, text);
    await client.until(ended(client, turnId), `the end of "${text}"`, TURN_MS);
    return lastTurn(client);
  }

  const reply = (events: readonly EventParams[]) => events.filter((e) => e.type === 'message.delta').map((e) => String(e.payload['text'])).join('');

  it('streams a reply; a Bash call asked as an approval runs in the session folder when approved and not when denied; the key is never written', async () => {
    const { scene, client } = await start();
    const first = await run(client, 'say hello');
    expect(first.filter((e) => e.type === 'message.delta').length).to.be.at.least(3);
    expect(reply(first)).to.equal('Hello from Claude');
    expect(first.at(-1)!.type).to.equal('turn.end');

    const approved = await submit(client, 'BASH:echo made > approved.txt');
    await client.until(() => client.requests.length === 1, 'the approval', TURN_MS);
    const asked = client.requests[0]!;
    expect(asked.method).to.equal('approval.request');
    expect(asked.params).to.deep.include({ tool: 'acp_execute', arguments: { command: 'echo made > approved.txt', description: 'run what the user asked', timeout: BASH_TIMEOUT_MS } });
    expect((asked.params['options'] as { kind: string }[]).map((o) => o.kind)).to.include.members(['allow_once', 'reject_once']);
    client.rpc.respond(asked.id, { result: { approved: true } });
    await client.until(ended(client, approved), 'the approved turn', TURN_MS);
    expect(readFileSync(join(scene.work, 'approved.txt'), 'utf8')).to.equal('made\n');
    const toolTurn = lastTurn(client);
    expect(toolTurn.find((e) => e.type === 'tool.start')!.payload).to.deep.include({ name: 'acp_execute', arguments: `{"command":"echo made > approved.txt","description":"run what the user asked","timeout":${BASH_TIMEOUT_MS}}` });
    const complete = toolTurn.find((e) => e.type === 'tool.complete')!.payload;
    expect(complete['ok']).to.equal(true);
    // Claude Code ran it in turnhost's terminal (PROTOCOL.md §2.4): the call keeps its command and exit code.
    expect(complete['content']).to.deep.equal([{ type: 'terminal', terminalId: 'term-1', command: 'echo made > approved.txt', output: '', exitCode: 0 }]);

    const denied = await submit(client, 'BASH:echo made > denied.txt');
    await client.until(() => client.requests.length === 2, 'the second approval', TURN_MS);
    client.rpc.respond(client.requests[1]!.id, { result: { approved: false } });
    await client.until(ended(client, denied), 'the denied turn', TURN_MS);
    expect(existsSync(join(scene.work, 'denied.txt'))).to.equal(false);
    expect(lastTurn(client).find((e) => e.type === 'tool.complete')!.payload['ok']).to.equal(false);

    const history = await client.call<{ messages: { role: string; tool_calls?: unknown[] }[] }>('session.history', { session_id: 'cc' });
    expect(history.messages.filter((m) => m.role === 'tool')).to.have.length(2);
    expect(history.messages.filter((m) => m.tool_calls !== undefined)).to.have.length(2);

    expect((await h.runCli(['stop', '--home', scene.home])).code).to.equal(0);
    for (const file of filesUnder(scene.home)) expect(readFileSync(file).includes(API_KEY), file).to.equal(false);
    expect(JSON.stringify(client.events) + JSON.stringify(client.requests)).to.not.include(API_KEY);
  });

  it('the approval policy allows acp_execute without a question', async () => {
    const { scene, client } = await start({ approval: { allow: ['acp_execute'] } });
    const events = await run(client, 'BASH:echo allowed > policy.txt');
    expect(client.requests).to.have.length(0);
    expect(readFileSync(join(scene.work, 'policy.txt'), 'utf8')).to.equal('allowed\n');
    expect(events.find((e) => e.type === 'tool.complete')!.payload['ok']).to.equal(true);
  });

  it('kill -9 of the host: Claude Code is gone within 5 s, and its next turn remembers the earlier ones (session/load)', async () => {
    const { scene, daemon, client } = await start();
    await run(client, 'remember the word PELICAN');
    await run(client, 'and the word OTTER');
    // Claude Code writes its transcript (~/.claude/projects/…/<session>.jsonl) a moment after a turn
    // ends: its memory is its own, and a kill before that write loses the turn from it.
    await scene.transcriptHas('OTTER', 10_000);
    const live = scene.processes();
    expect(live.length).to.be.greaterThan(0);
    process.kill(await hostPid(client), 'SIGKILL');
    const killed = Date.now();
    expect(await scene.gone(live, 5_000)).to.equal(true);
    expect(Date.now() - killed).to.be.below(5_000);
    await hostReady(daemon, 2);

    const asked = scene.fake.conversations.length;
    expect(reply(await run(client, 'which words?'))).to.equal('Hello from Claude');
    const request = scene.fake.conversations.slice(asked).find((body) => conversationText(body).includes('which words?'))!;
    expect(conversationText(request)).to.include('PELICAN').and.include('OTTER');
  });

  it("a guest's home follows its session (AGENT.md §6): two nodes on PostgreSQL, the one that ran Claude Code killed -9 2 s after its turn, and Claude remembers on the other", async () => {
    const scene = await claudeScene(h);
    scenes.push(scene);
    const url = await server().database();
    // Each node a home of its own; the session works in one folder both see (Claude Code finds its transcript by the folder's path).
    const node = (id: string) => startDaemon(h, [...nodeArgs(url, id, LEASE_SECS), ...scene.args, '--listen', '127.0.0.1:0'], { ANTHROPIC_API_KEY: API_KEY }, join(scene.dir, `home-${id}`));
    const [a, b] = await Promise.all([node('a'), node('b')]);
    const onA = await TestClient.connect(a);
    await onA.call('session.create', { session_id: 'cc', cwd: scene.work });
    await run(onA, 'remember the word PELICAN');
    await run(onA, 'and the word OTTER');
    await new Promise((resolve) => setTimeout(resolve, 2000));
    for (const pid of [a.process.pid, await hostPid(onA)]) process.kill(pid, 'SIGKILL');
    onA.close();
    await a.process.waitExit();
    await server().leaseExpired(url, 'cc');
    const onB = await TestClient.connect(b);
    try {
      await onB.call('session.resume', { session_id: 'cc' });
      const asked = scene.fake.conversations.length;
      const events = await run(onB, 'which words?');
      expect(reply(events)).to.equal('Hello from Claude');
      expect(events.some((e) => e.type === 'status.update' && e.payload['kind'] === 'context'), 'no "starts without its memory"').to.equal(false);
      const request = scene.fake.conversations.slice(asked).find((body) => conversationText(body).includes('which words?'))!;
      expect(conversationText(request)).to.include('PELICAN').and.include('OTTER');
    } finally {
      onB.close();
    }
  });

  it("a fork at the last turn forks Claude's own session (claude-agent-acp 0.23.1, ACP session/fork) when it works in the source's folder; in a new folder Claude Code cannot find it, and the fork says so", async () => {
    const { scene, client } = await start({}, CLAUDE_AGENT_ACP);
    await run(client, 'remember the word PELICAN');
    await scene.transcriptHas('PELICAN', 10_000);

    /** Forks `cc` as `sid` and runs one turn there: its events, and what the model was sent. */
    const forkAndAsk = async (sid: string, fork: Record<string, unknown>): Promise<{ events: EventParams[]; sent: string }> => {
      await client.call('session.fork', { session_id: 'cc', new_session_id: sid, ...fork });
      const asked = scene.fake.conversations.length;
      const text = `${sid} asks: which word?`;
      const { turn_id } = await client.call<{ turn_id: string }>('prompt.submit', { session_id: sid, text });
      await client.until(() => client.events.some((e) => (e.type === 'turn.end' || e.type === 'turn.error') && e.payload['turn_id'] === turn_id), `${sid}'s turn`, TURN_MS);
      const request = scene.fake.conversations.slice(asked).find((body) => conversationText(body).includes(text))!;
      return { events: client.events.filter((e) => e.session_id === sid), sent: conversationText(request) };
    };
    const contexts = (events: readonly EventParams[]) => events.filter((e) => e.type === 'status.update' && e.payload['kind'] === 'context').map((e) => String(e.payload['text']));

    // Claude Code keeps a session's transcript under its folder's name: the same folder, its memory.
    const here = await forkAndAsk('fk', { cwd: scene.work });
    expect(contexts(here.events), 'no memory lost').to.deep.equal([]);
    expect(reply(here.events)).to.equal('Hello from Claude');
    expect(here.sent, "the fork's guest remembers its source's turn").to.include('PELICAN');

    const elsewhere = await forkAndAsk('fk-new', {});
    expect(contexts(elsewhere.events)).to.have.length(1);
    expect(contexts(elsewhere.events)[0]).to.match(/could not fork the session of cc .*: it starts without its memory of the 2 earlier messages/);
    expect(reply(elsewhere.events)).to.equal('Hello from Claude');
    expect(elsewhere.sent).to.not.include('PELICAN');

    const next = scene.fake.conversations.length;
    await run(client, 'the source asks again');
    const sourceRequest = scene.fake.conversations.slice(next).find((body) => conversationText(body).includes('the source asks again'))!;
    expect(conversationText(sourceRequest), 'the source goes on with its own memory').to.include('PELICAN').and.not.include('asks: which word');
  });

  for (const mode of ['required', 'off'] as const) {
    it(`kill -9 of the daemon and the host together (sandbox.mode ${mode}): every process of Claude Code is gone within 5 s, and the next daemon loads its session`, async () => {
      const { scene, daemon, client } = await start({ sandbox: { mode } });
      await run(client, 'remember the word HERON');
      await scene.transcriptHas('HERON', 10_000);
      const live = scene.processes();
      expect(live.length, 'the adapter and its CLI').to.be.at.least(2);
      const host = await hostPid(client);
      client.close();
      for (const pid of [daemon.process.pid, host]) process.kill(pid, 'SIGKILL');
      const killed = Date.now();
      expect(await scene.gone(live, 5_000), `left: ${scene.processes().join(', ')}`).to.equal(true);
      expect(Date.now() - killed).to.be.below(5_000);
      await daemon.process.waitExit(10_000);
      const again = await startDaemon(h, scene.args, { ANTHROPIC_API_KEY: API_KEY }, scene.home);
      const after = await TestClient.connect(again);
      await after.call('session.resume', { session_id: 'cc' });
      const asked = scene.fake.conversations.length;
      await run(after, 'which word?');
      expect(conversationText(scene.fake.conversations.slice(asked).find((body) => conversationText(body).includes('which word?'))!)).to.include('HERON');
      after.close();
    });
  }

  it('an interrupt mid-stream ends the turn interrupted, and the session goes on', async () => {
    const { client } = await start();
    const slow = await submit(client, 'SLOW please');
    await client.until(() => lastTurn(client).filter((e) => e.type === 'message.delta').length >= 3, 'the first words', TURN_MS);
    await client.call('session.interrupt', { session_id: 'cc', turn_id: slow });
    await client.until(ended(client, slow), 'the interrupted turn', 15_000);
    const end = lastTurn(client).find((e) => e.type === 'turn.end')!;
    expect(end.payload['interrupted']).to.equal(true);
    expect(reply(lastTurn(client)).split(' ').length).to.be.below(100);
    expect(reply(await run(client, 'still there?'))).to.equal('Hello from Claude');
  });

  it('an editor drives Claude Code through turnhost acp: it is offered Claude Code\'s own options, and a turn outlives the editor', async () => {
    const scene = await claudeScene(h);
    scenes.push(scene);
    const env = { ANTHROPIC_API_KEY: API_KEY };
    const allowOnce = { permission: (request: RequestPermissionRequest) => ({ outcome: { outcome: 'selected' as const, optionId: request.options.find((o) => o.kind === 'allow_once')!.optionId } }) };
    const editor = await Editor.start(h, scene.home, {}, allowOnce, { args: scene.args, env });
    const { sessionId } = await editor.agent.request('session/new', { cwd: scene.work, mcpServers: [] });
    const answered = await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'BASH:echo editor > editor.txt' }] });
    expect(answered.stopReason).to.equal('end_turn');
    expect(editor.permissions[0]!.options.map((o) => o.name)).to.include('Always Allow');
    expect(editor.permissions[0]!.toolCall.kind).to.equal('execute');
    expect(readFileSync(join(scene.work, 'editor.txt'), 'utf8')).to.equal('editor\n');

    // The editor dies mid-turn: the turn ends in the daemon, and the next editor's load shows it.
    void editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'SLOW and long' }] }).catch(() => {});
    await editor.until(() => editor.text('agent_message_chunk').includes('word2 '), `the first words; updates: ${JSON.stringify(editor.updates.map((u) => u.update)).slice(-1500)}`, TURN_MS);
    editor.child.kill('SIGKILL');
    const watcher = await TestClient.connect({ socket: join(scene.home, 'turnhost.sock') });
    await watcher.call('session.resume', { session_id: sessionId });
    await watcher.until(() => watcher.events.some((e) => e.type === 'turn.end'), 'the end of the turn the editor left', TURN_MS);
    const next = await Editor.start(h, scene.home, {}, {}, { args: scene.args, env });
    await next.agent.request('session/load', { sessionId, cwd: scene.work, mcpServers: [] });
    expect(next.text('agent_message_chunk')).to.include('word99');
  });

  it('an editor behind turnhost acp pastes an image for Claude Code, which the model is sent; Claude Code\'s write reaches the editor as an ACP diff', async () => {
    const scene = await claudeScene(h);
    scenes.push(scene);
    const allowOnce = { permission: (request: RequestPermissionRequest) => ({ outcome: { outcome: 'selected' as const, optionId: request.options.find((o) => o.kind === 'allow_once')!.optionId } }) };
    const editor = await Editor.start(h, scene.home, {}, allowOnce, { args: scene.args, env: { ANTHROPIC_API_KEY: API_KEY } });
    const png = pngImage(4, 4, 41);
    const target = join(scene.work, 'notes.txt');
    const { sessionId } = await editor.agent.request('session/new', { cwd: scene.work, mcpServers: [] });
    const answered = await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `WRITE:${target}` }, { type: 'image', mimeType: 'image/png', data: png.toString('base64') }] });
    expect(answered.stopReason).to.equal('end_turn');
    const images = scene.fake.conversations[0]!.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((block) => block.type === 'image') as unknown as { source: unknown }[];
    expect(images.map((block) => block.source), 'the model was sent the pasted image').to.deep.equal([{ type: 'base64', media_type: 'image/png', data: png.toString('base64') }]);
    const diffs = editor.updates.flatMap((n) => ('content' in n.update && Array.isArray(n.update.content) ? n.update.content : [])).filter((c) => c.type === 'diff');
    expect(diffs[0]).to.deep.include({ type: 'diff', path: target, newText: WRITTEN });
    expect(readFileSync(target, 'utf8')).to.equal(WRITTEN);
  });
});
