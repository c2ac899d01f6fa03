// An editor for the tests: `turnhost acp` as its child process, the ACP SDK's client side on the
// child's pipes, keeping every update and permission request it receives.
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
import { Harness } from './processes.js';
import { Waiters } from './waiters.js';

export interface EditorAnswers {
  permission?: (request: RequestPermissionRequest) => RequestPermissionResponse;
  elicit?: (request: CreateElicitationRequest) => CreateElicitationResponse;
}

/** An editor: `turnhost acp` as its child, the SDK's client side on the child's pipes. */
export class Editor {
  readonly updates: SessionNotification[] = [];
  readonly permissions: RequestPermissionRequest[] = [];
  /** Every line the agent wrote to its stdout, to check that each is ACP. */
  stdout = '';
  private readonly waiters = new Waiters<void>();
  private constructor(
    readonly child: ChildProcess,
    readonly connection: ClientConnection,
  ) {}

  /** `launch`: the host's options `turnhost acp` passes on (an agent and its config) and its environment. */
  static async start(h: Harness, home: string, capabilities: ClientCapabilities, answers: EditorAnswers = {}, launch: { args?: readonly string[]; env?: NodeJS.ProcessEnv } = {}): Promise<Editor> {
    const child = h.spawnCli(['acp', '--home', home, ...(launch.args ?? [])], launch.env);
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

  until(match: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    return match() ? Promise.resolve() : this.waiters.wait(match, timeoutMs, () => `no ${what} within ${timeoutMs} ms`);
  }
}
