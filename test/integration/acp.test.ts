// `turnhost acp` (PROTOCOL.md §7.2) driven by the ACP SDK's own client side, as an editor drives
// it: the test spawns `turnhost acp`, which starts a daemon in the test's home, and speaks ACP v1
// to it over its stdin and stdout.
import { Readable, Writable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';
import {
  client,
  ndJsonStream,
  PROTOCOL_VERSION,
  type ClientCapabilities,
  type ClientConnection,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from '@agentclientprotocol/sdk';
import { expect } from 'chai';
import { join } from 'node:path';
import { TestClient } from '../helpers/daemon.js';
import { Harness } from '../helpers/processes.js';
import { Waiters } from '../helpers/waiters.js';

interface EditorAnswers {
  permission?: (request: RequestPermissionRequest) => RequestPermissionResponse;
  elicit?: (request: CreateElicitationRequest) => CreateElicitationResponse;
}

/** An editor: `turnhost acp` as its child, the SDK's client side on the child's pipes. */
class Editor {
  readonly updates: SessionNotification[] = [];
  readonly permissions: RequestPermissionRequest[] = [];
  /** Every line the agent wrote to its stdout, to check that each is ACP. */
  stdout = '';
  private readonly waiters = new Waiters<void>();
  private constructor(
    readonly child: ChildProcess,
    readonly connection: ClientConnection,
  ) {}

  static async start(h: Harness, home: string, capabilities: ClientCapabilities, answers: EditorAnswers = {}): Promise<Editor> {
    const child = h.spawnCli(['acp', '--home', home]);
    let editor: Editor | null = null;
    const app = client({ name: 'test-editor' })
      .onNotification('session/update', ({ params }) => {
        editor!.updates.push(params);
        editor!.waiters.offer(undefined, 'all');
      })
      .onRequest('session/request_permission', ({ params }) => {
        editor!.permissions.push(params);
        return answers.permission?.(params) ?? { outcome: { outcome: 'cancelled' } };
      })
      .onRequest('elicitation/create', ({ params }) => answers.elicit?.(params) ?? { action: 'decline' });
    child.stdout!.on('data', (chunk: Buffer) => editor !== null && (editor.stdout += chunk.toString('utf8')));
    const connection = app.connect(ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>));
    editor = new Editor(child, connection);
    const init = await connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: capabilities });
    expect(init.agentCapabilities?.loadSession).to.equal(true);
    return editor;
  }

  get agent() {
    return this.connection.agent;
  }

  /** The text of the updates of one kind, from the `from`th update on. */
  text(kind: 'agent_message_chunk' | 'user_message_chunk', from = 0): string {
    return this.updates
      .slice(from)
      .map((n) => n.update)
      .filter((u) => u.sessionUpdate === kind)
      .map((u) => {
        const content = (u as { content?: { type: string; text?: string } }).content;
        return content?.type === 'text' ? (content.text ?? '') : '';
      })
      .join('');
  }

  until(match: () => boolean, what: string): Promise<void> {
    return match() ? Promise.resolve() : this.waiters.wait(match, 15_000, () => `no ${what} within 15 s`);
  }
}

describe('turnhost acp: the ACP SDK\'s client side, as an editor', function () {
  this.timeout(60_000);
  const h = new Harness();
  afterEach(() => h.cleanup());

  const prompt = (editor: Editor, sessionId: string, text: string) => editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });

  it('a prompt streams the reply and ends with end_turn; a permission granted, a clarify as a form, a tool call; stdout carries ACP alone', async () => {
    const home = h.tempDir();
    const editor = await Editor.start(h, home, { elicitation: { form: {} } }, {
      permission: (request) => ({ outcome: { outcome: 'selected', optionId: request.options.find((o) => o.kind === 'allow_once')!.optionId } }),
      elicit: () => ({ action: 'accept', content: { answer: 'green' } }),
    });
    const { sessionId } = await editor.agent.request('session/new', { cwd: home, mcpServers: [] });

    expect(await prompt(editor, sessionId, 'hello editor')).to.deep.equal({ stopReason: 'end_turn' });
    expect(editor.text('agent_message_chunk')).to.equal('hello editor');

    let mark = editor.updates.length;
    expect((await prompt(editor, sessionId, 'shipping\n/approve deploy to prod')).stopReason).to.equal('end_turn');
    expect(editor.permissions.map((p) => p.options.map((o) => o.kind))).to.deep.equal([['allow_once', 'reject_once']]);
    expect(editor.permissions[0]!.toolCall.title).to.equal('deploy to prod');
    expect(editor.text('agent_message_chunk', mark)).to.include('approved: deploy to prod');

    mark = editor.updates.length;
    await prompt(editor, sessionId, 'asking\n/ask favourite colour?');
    expect(editor.text('agent_message_chunk', mark)).to.include('answer: green');

    mark = editor.updates.length;
    await prompt(editor, sessionId, 'searching\n/tool grep 0.05');
    const tool = editor.updates.slice(mark).map((n) => n.update).filter((u) => u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update');
    expect(tool.map((u) => [u.sessionUpdate, 'status' in u ? u.status : undefined])).to.deep.equal([
      ['tool_call', 'in_progress'],
      ['tool_call_update', 'completed'],
    ]);
    expect(new Set(tool.map((u) => ('toolCallId' in u ? u.toolCallId : null))).size).to.equal(1);

    const lines = editor.stdout.split('\n').filter((line) => line !== '');
    expect(lines.length).to.be.greaterThan(10);
    for (const line of lines) expect((JSON.parse(line) as { jsonrpc?: string }).jsonrpc, line).to.equal('2.0');
  });

  it('session/cancel stops the running turn: the prompt ends with cancelled; an editor without forms leaves a clarify unanswered', async () => {
    const home = h.tempDir();
    const editor = await Editor.start(h, home, {});
    const { sessionId } = await editor.agent.request('session/new', { cwd: home, mcpServers: [] });
    const running = prompt(editor, sessionId, 'long\n/sleep 30');
    await editor.until(() => editor.text('agent_message_chunk') === 'long', 'first reply chunk');
    await editor.agent.notify('session/cancel', { sessionId });
    expect(await running).to.deep.equal({ stopReason: 'cancelled' });
    const mark = editor.updates.length;
    await prompt(editor, sessionId, 'asking\n/ask anyone?');
    expect(editor.text('agent_message_chunk', mark)).to.include('answer: (none)');
  });

  it('an editor killed mid-turn loses nothing: the turn ends in the daemon, and the next editor\'s session/load replays all of it', async () => {
    const home = h.tempDir();
    const first = await Editor.start(h, home, {});
    const { sessionId } = await first.agent.request('session/new', { cwd: home, mcpServers: [] });
    void prompt(first, sessionId, 'first part\n/sleep 0.5\nsecond part').catch(() => {});
    await first.until(() => first.text('agent_message_chunk').includes('first'), 'the first chunk');
    first.child.kill('SIGKILL');
    const watcher = await TestClient.connect({ socket: join(home, 'turnhost.sock') });
    try {
      await watcher.call('session.resume', { session_id: sessionId, after_seq: 0 });
      await watcher.nextEvent('turn.end', sessionId);
    } finally {
      watcher.close();
    }
    const second = await Editor.start(h, home, {});
    expect(await second.agent.request('session/load', { sessionId, cwd: home, mcpServers: [] })).to.deep.equal({});
    expect(second.text('user_message_chunk')).to.equal('first part\n/sleep 0.5\nsecond part');
    expect(second.text('agent_message_chunk')).to.equal('first part\nsecond part');
    const missing = await second.agent.request('session/load', { sessionId: 'no-such-session', cwd: home, mcpServers: [] }).catch((err: unknown) => err);
    expect(missing).to.have.property('code', -32002);
  });
});
