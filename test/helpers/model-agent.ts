// The model agent's test scene: a fake model server, a home whose agent.json points at it, the
// MCP fixture server, and readers for what the host sent its clients.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeOpenAI } from './fake-openai.js';
import { Harness, REPO_ROOT, type Frame, type HostProcess } from './processes.js';

export const MCP_FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'mcp-server.mjs');

export interface ModelScene {
  home: string;
  fake: FakeOpenAI;
  /** The MCP fixture's call log (one JSON line per call start and end), in its folder: the one its sandbox may write. */
  mcpLog: string;
  /** The MCP fixture's folder (its cwd). */
  mcpFolder: string;
  writeConfig(config: object): void;
}

/** A temp home with agent.json: the fake server's URL, model `test-model`, and `config` on top. */
export async function modelScene(h: Harness, config: object = {}): Promise<ModelScene> {
  const home = h.tempDir();
  const fake = await FakeOpenAI.start();
  const mcpFolder = join(home, 'mcp-work');
  mkdirSync(mcpFolder);
  const scene: ModelScene = {
    home,
    fake,
    mcpFolder,
    mcpLog: join(mcpFolder, 'mcp-calls.log'),
    writeConfig: (more) => writeFileSync(join(home, 'agent.json'), JSON.stringify({ model: 'test-model', base_url: fake.baseUrl, ...more })),
  };
  scene.writeConfig(config);
  return scene;
}

/** The fixture as an `mcp_servers` entry; its command line names the home (inside a word: not a path its sandbox must show), so cleanup finds it. */
export function fixtureServer(scene: ModelScene, extra: object = {}, flags: string[] = []): object {
  return { command: process.execPath, args: [MCP_FIXTURE, '--log', scene.mcpLog, `--scene=${scene.home}`, ...flags], cwd: scene.mcpFolder, ...extra };
}

export function startModelHost(h: Harness, scene: ModelScene, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<HostProcess> {
  return h.startHost(scene.home, ['--agent', 'openai', ...args], env);
}

export interface HostEvent {
  type: string;
  payload: Record<string, unknown>;
}

type RpcMessage = { id?: string; method?: string; params: { type?: string; payload?: Record<string, unknown> } & Record<string, unknown> };

const message = (f: Frame) => f['message'] as RpcMessage;

/** Every event the host sent the session's clients so far, in order. */
export function eventsOf(host: HostProcess, sid: string, type?: string): HostEvent[] {
  return host
    .all('rpc', (f) => f['sid'] === sid && message(f).method === 'event')
    .map((f) => ({ type: String(message(f).params.type), payload: message(f).params.payload ?? {} }))
    .filter((e) => type === undefined || e.type === type);
}

export function nextEvent(host: HostProcess, sid: string, type: string, timeoutMs?: number): Promise<HostEvent> {
  return host
    .next('rpc', { where: (f) => f['sid'] === sid && message(f).params?.type === type, ...(timeoutMs ? { timeoutMs } : {}) })
    .then((f) => ({ type, payload: message(f).params.payload ?? {} }));
}

export interface ServerRequest {
  id: string;
  method: string;
  params: Record<string, unknown>;
}

export async function nextServerRequest(host: HostProcess, sid: string): Promise<ServerRequest> {
  const frame = await host.next('rpc', { where: (f) => f['sid'] === sid && String(message(f).id ?? '').startsWith('srq-') });
  return frame['message'] as unknown as ServerRequest;
}

let responses = 0;
export async function answerRequest(host: HostProcess, sid: string, id: string, result: object): Promise<Frame> {
  const request_id = `answer-${++responses}`;
  host.send({ type: 'respond', sid, request_id, params: { frame: { jsonrpc: '2.0', id, result } } });
  return host.next('respond.ack', { where: (f) => f['request_id'] === request_id });
}

/** Sends a turn and resolves with its end frame (turn.end or turn.error). */
export async function runTurn(host: HostProcess, sid: string, request_id: string, text: string, timeoutMs = 10_000): Promise<Frame> {
  host.send({ type: 'turn.start', sid, request_id, text });
  return host.ended(request_id, timeoutMs);
}

export function text(host: HostProcess, sid: string, type = 'message.delta'): string {
  return eventsOf(host, sid, type)
    .map((e) => String(e.payload['text']))
    .join('');
}

/** Scenes for one describe block: `cleanup` closes their fake servers, then the harness's processes and folders. */
export function modelScenes(h: Harness): { scene(config?: object): Promise<ModelScene>; cleanup(): Promise<void> } {
  const scenes: ModelScene[] = [];
  return {
    async scene(config = {}) {
      const s = await modelScene(h, config);
      scenes.push(s);
      return s;
    },
    async cleanup() {
      await Promise.all(scenes.splice(0).map((s) => s.fake.close()));
      await h.cleanup();
    },
  };
}
