// Codex and Gemini CLI as guests (AGENT.md §6), offline, each in its session's sandbox (§7):
// Codex through `@zed-industries/codex-acp` (its linux-x64 binary, spawned itself: the npm bin is a
// wrapper that forwards no signals), its model a fake Responses API; Gemini CLI
// (`@google/gemini-cli`, `gemini --acp`), its model a fake Gemini API. Both keep their sessions in
// their sandbox's home (`~/.codex`, `~/.gemini`), the fake reached through the session's proxy.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isZombie, waitGone } from '../../persistence/proc.js';
import { FakeGemini, geminiConversation } from './fake-gemini.js';
import { FakeResponses } from './fake-responses.js';
import { Harness, processesWhere, REPO_ROOT } from './processes.js';

export const CODEX_ACP = join(REPO_ROOT, 'node_modules', '@zed-industries', 'codex-acp-linux-x64', 'bin', 'codex-acp');
export const GEMINI = join(REPO_ROOT, 'node_modules', '.bin', 'gemini');

export type CliKind = 'codex' | 'gemini';

export interface CliScene {
  kind: CliKind;
  /** What the model server has been sent, as text, one entry per request. */
  conversations(): string[];
  close(): Promise<void>;
  home: string;
  work: string;
  /** Where the sessions' sandboxes keep their homes. */
  agentHomes: string;
  /** The agent config the scene wrote: `acp` and `sandbox` for this CLI. */
  config: string;
  args: string[];
  /** The live processes of this scene's guests, found by their HOME. */
  processes(): number[];
  gone(pids: readonly number[], ms: number): Promise<boolean>;
  /** Made before a session's first turn: what the guest reads from its home (Gemini CLI's settings). */
  prepareHome(sid: string): void;
  /** The variable holding the model key, passed from the daemon's environment. */
  keyName: string;
}

/**
 * Codex, told by `-c` overrides (no file to place): a custom provider on the fake, no retries, each
 * command asked (`approval_policy untrusted`), and no sandbox of its own (`danger-full-access`):
 * turnhost's is the wall, and its own could not be made inside it (docs/AGENTS.md).
 */
function codexAcp(baseUrl: string): Record<string, unknown> {
  const settings = [
    'model="gpt-test"',
    'model_provider="mock"',
    'approval_policy="untrusted"',
    'sandbox_mode="danger-full-access"',
    'model_providers.mock.name="mock"',
    `model_providers.mock.base_url="${baseUrl}"`,
    'model_providers.mock.wire_api="responses"',
    'model_providers.mock.env_key="OPENAI_API_KEY"',
    'model_providers.mock.request_max_retries=0',
    'model_providers.mock.stream_max_retries=0',
    'model_providers.mock.supports_websockets=false',
  ];
  return { command: CODEX_ACP, args: settings.flatMap((setting) => ['-c', setting]), pass_env: ['OPENAI_API_KEY'] };
}

function geminiAcp(baseUrl: string): Record<string, unknown> {
  return {
    command: GEMINI,
    args: ['--acp', '-m', 'gemini-2.5-flash'],
    env: { GEMINI_CLI_NO_RELAUNCH: 'true', GOOGLE_GEMINI_BASE_URL: baseUrl },
    pass_env: ['GEMINI_API_KEY'],
  };
}

export async function cliScene(h: Harness, kind: CliKind, top: Record<string, unknown> = {}): Promise<CliScene> {
  const dir = h.tempDir(`turnhost-${kind}-`);
  const home = join(dir, 'home');
  const agentHomes = join(home, 'agent-homes');
  const work = join(dir, 'work');
  mkdirSync(work);
  const codex = kind === 'codex' ? await FakeResponses.start() : null;
  const gemini = kind === 'gemini' ? await FakeGemini.start() : null;
  const baseUrl = codex?.baseUrl ?? gemini!.baseUrl;
  const config = join(dir, 'agent.json');
  writeFileSync(config, JSON.stringify({ ...top, acp: kind === 'codex' ? codexAcp(baseUrl) : geminiAcp(baseUrl), sandbox: { allow_hosts: [new URL(baseUrl).host], ...(top['sandbox'] as object | undefined) } }));
  return {
    kind,
    conversations: () => (codex !== null ? codex.requests.map((body) => JSON.stringify(body.input)) : gemini!.requests.map(geminiConversation)),
    close: () => (codex ?? gemini)!.close(),
    home,
    work,
    agentHomes,
    config,
    args: ['--agent', 'acp', '--agent-config', config],
    processes: () => processesWhere('environ', (environ) => environ.split('\0').some((entry) => entry.startsWith(`HOME=${agentHomes}/`))).filter((pid) => !isZombie(pid)),
    async gone(pids, ms) {
      return (await Promise.all(pids.map((pid) => waitGone(pid, ms)))).every(Boolean);
    },
    prepareHome(sid) {
      if (kind !== 'gemini') return;
      // No usage statistics or telemetry: they would only meet the proxy's 403.
      mkdirSync(join(agentHomes, sid, '.gemini'), { recursive: true, mode: 0o700 });
      writeFileSync(join(agentHomes, sid, '.gemini', 'settings.json'), JSON.stringify({ privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false } }));
    },
    keyName: kind === 'codex' ? 'OPENAI_API_KEY' : 'GEMINI_API_KEY',
  };
}
