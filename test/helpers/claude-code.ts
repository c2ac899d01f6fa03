// Claude Code as a guest (AGENT.md §6), offline: `@zed-industries/claude-code-acp` from the
// project's node_modules, in its session's sandbox (AGENT.md §7: its HOME the session's agent home,
// where it keeps its sessions in ~/.claude; the fake API reached through the session's proxy), its
// model the fake Anthropic API on 127.0.0.1. The fake answers by what the last user message says:
//   BASH:<command>   a Bash tool_use (then, given the tool's result, `done: <result>`)
//   WRITE:<path>     a Write tool_use of WRITTEN to that path (then `done: …`)
//   SLOW             100 words, 100 ms apart
//   (anything else)  `Hello from Claude`
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isZombie, waitGone } from '../../persistence/proc.js';
import { filesUnder } from './files.js';
import { FakeAnthropic, type AnthropicReply, type MessagesBody } from './fake-anthropic.js';
import { Harness, processesWhere, REPO_ROOT } from './processes.js';

export const CLAUDE_CODE_ACP = join(REPO_ROOT, 'node_modules', '.bin', 'claude-code-acp');
/** Its renamed successor (0.23.1), the one the fork test pins (PROTOCOL.md §2.2: ACP session/fork). */
export const CLAUDE_AGENT_ACP = join(REPO_ROOT, 'node_modules', '.bin', 'claude-agent-acp');

export interface ClaudeScene {
  fake: FakeAnthropic;
  dir: string;
  home: string;
  /** The session's folder: where Bash runs. */
  work: string;
  /** Where each session's sandbox keeps its own home (or, unsandboxed, Claude Code's HOME): it keeps its sessions in ~/.claude there. */
  agentHomes: string;
  config: string;
  args: string[];
  /** The live processes of this scene's Claude Code (the ACP adapter and its CLI), found by their HOME. */
  processes(): number[];
  gone(pids: readonly number[], ms: number): Promise<boolean>;
  /** Resolves once Claude Code's own transcript (under its HOME) holds `text`; it writes it after a turn ends. */
  transcriptHas(text: string, ms: number): Promise<void>;
}

/**
 * `top` goes at the top of the agent config; with `sandbox: {mode: "off"}`, Claude Code's HOME is a
 * folder of the scene's. `command`: the ACP adapter (claude-code-acp unless named).
 */
export async function claudeScene(h: Harness, top: Record<string, unknown> = {}, command = CLAUDE_CODE_ACP): Promise<ClaudeScene> {
  const fake = await FakeAnthropic.start();
  fake.fallback = modelBehaviour;
  const dir = h.tempDir('turnhost-claude-');
  const home = join(dir, 'home');
  const unsandboxed = (top['sandbox'] as { mode?: string } | undefined)?.mode === 'off';
  const agentHomes = unsandboxed ? join(dir, 'claude-home') : join(home, 'agent-homes');
  mkdirSync(agentHomes, { recursive: true });
  const work = join(dir, 'work');
  mkdirSync(work);
  const config = join(dir, 'agent.json');
  writeFileSync(
    config,
    JSON.stringify({
      ...top,
      acp: {
        command,
        env: {
          ...(unsandboxed ? { HOME: join(dir, 'claude-home') } : {}),
          ANTHROPIC_BASE_URL: fake.baseUrl,
          DISABLE_TELEMETRY: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
        },
        pass_env: ['ANTHROPIC_API_KEY'],
      },
    }),
  );
  return {
    fake,
    dir,
    home,
    work,
    agentHomes,
    config,
    args: ['--agent', 'acp', '--agent-config', config],
    // Zombies keep their environ: only live processes count.
    processes: () => processesWhere('environ', (environ) => environ.split('\0').some((entry) => entry.startsWith(`HOME=${agentHomes}`))).filter((pid) => !isZombie(pid)),
    async gone(pids, ms) {
      return (await Promise.all(pids.map((pid) => waitGone(pid, ms)))).every(Boolean);
    },
    async transcriptHas(text, ms) {
      // No event says when a guest's own file is written: read again every 50 ms, for at most `ms`.
      const deadline = Date.now() + ms;
      const transcripts = (): string[] => (existsSync(agentHomes) ? filesUnder(agentHomes) : []).filter((file) => file.includes('/.claude/projects/') && file.endsWith('.jsonl'));
      while (!transcripts().some((file) => readFileSync(file, 'utf8').includes(text))) {
        if (Date.now() > deadline) throw new Error(`Claude Code's transcript did not hold ${JSON.stringify(text)} within ${ms} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/**
 * The user's newest words in a request: the last text block of the last user message. Claude Code
 * puts a new prompt in the same message as the previous turn's tool result, or its interrupted
 * prompt, so only the last block is this turn's.
 */
export function lastUserText(body: MessagesBody): string {
  const last = [...body.messages].reverse().find((m) => m.role === 'user');
  if (last === undefined) return '';
  if (typeof last.content === 'string') return last.content;
  return [...last.content].reverse().find((block) => block.type === 'text')?.text ?? '';
}

/** Everything a request carried of the conversation, as text: what the model was given to remember. */
export function conversationText(body: MessagesBody): string {
  return JSON.stringify(body.messages);
}

/** What `WRITE:<path>` writes. */
export const WRITTEN = 'written by Claude\n';
/**
 * Claude Code offers its own Bash, or, to a client that offers terminals (turnhost does, PROTOCOL.md
 * §2.4), the adapter's, which runs the command in the client's terminal; as with Write and file
 * system clients. The fake model calls the one it is offered, as a model would.
 */
const BASH_TOOLS = ['mcp__acp__Bash', 'Bash'];
/** The adapter's Bash wants a timeout (its schema requires one); Claude Code's own takes it too. */
export const BASH_TIMEOUT_MS = 120_000;
const WRITE_TOOLS = ['mcp__acp__Write', 'Write'];

function offered(body: MessagesBody, names: readonly string[]): string {
  const tools = new Set((body.tools ?? []).map((tool) => tool.name));
  return names.find((name) => tools.has(name)) ?? names.at(-1)!;
}

function modelBehaviour(body: MessagesBody): AnthropicReply {
  const last = body.messages.at(-1);
  const result = Array.isArray(last?.content) ? last.content.at(-1) : undefined;
  if (result?.type === 'tool_result') return { text: [`done: ${JSON.stringify(result.content ?? '')}`] };
  const said = lastUserText(body);
  const bash = /BASH:(.+)$/m.exec(said);
  if (bash) return { text: ['Running it. '], tool: { id: `toolu_${Date.now()}`, name: offered(body, BASH_TOOLS), input: { command: bash[1]!.trim(), description: 'run what the user asked', timeout: BASH_TIMEOUT_MS } } };
  const write = /WRITE:(\S+)/.exec(said);
  if (write) return { text: ['Writing it. '], tool: { id: `toolu_${Date.now()}`, name: offered(body, WRITE_TOOLS), input: { file_path: write[1]!, content: WRITTEN } } };
  if (said.includes('SLOW')) return { text: Array.from({ length: 100 }, (_, i) => `word${i} `), gapMs: 100 };
  return { text: ['Hello ', 'from ', 'Claude'] };
}
