// The model agent (AGENT.md): each turn is a loop of streamed model calls and the tool calls
// they ask for, up to `max_tool_rounds` calls. It owns no history: what it adds goes to the
// session through `append`, and the host stores it.
import type { ChatMessage } from '../../protocol/chat.js';
import { AgentFailure, type Agent, type SessionOverrides, type SessionView, type TurnContext, type TurnResult, type TurnUsage } from '../agent.js';
import { approvalPolicy, type Policy } from './approval.js';
import { PromptSizes, summarize } from './compression.js';
import { loadModelConfig, type ConfigSource, type ModelConfig } from './config.js';
import { ApiHistories } from './api-history.js';
import { promptMessage } from './prompt-content.js';
import type { ApiMessage } from './history.js';
import { McpServers, type McpLog } from './mcp.js';
import { ContextTooLong, CutReply, ModelApi, type ModelReply, type StreamHandlers, type StreamRequest } from './openai-api.js';
import { endChat, startChat } from '../genai-spans.js';
import { offeredTools, runToolCalls, type ToolSet } from './tools.js';
import type { Usage } from './streamed-reply.js';
import { asConfigError } from '../sandbox/sandbox-try.js';
import { Sandboxes } from '../sandbox/sandbox.js';
import type { SandboxStatus } from '../../protocol/outbound.js';

/** A turn that begins while a server is still starting waits this long for its tools (AGENT.md §2). */
const MCP_START_WAIT_MS = 10_000;
/** Sessions remembered as told about an MCP failure; the oldest are forgotten past this. */
const REMEMBERED_SESSIONS = 10_000;

export interface ModelAgentOptions extends ConfigSource {
  log: McpLog;
  /** A folder each MCP server's new home starts as a copy of (AGENT.md §8); null: empty. */
  homeTemplate?: string | null;
}

export async function createModelAgent(options: ModelAgentOptions): Promise<Agent> {
  const config = loadModelConfig(options);
  const needed = Object.values(config.mcp_servers).some((server) => server.enabled);
  let sandboxes: Sandboxes;
  try {
    sandboxes = await Sandboxes.start(config.sandbox, options.log, { needed, homeTemplate: options.homeTemplate ?? null });
  } catch (err) {
    throw asConfigError(err, config.file ?? 'agent.json');
  }
  return new ModelAgent(options, config, sandboxes);
}

class ModelAgent implements Agent {
  readonly name = 'openai';
  readonly steerable = true;
  private config!: ModelConfig;
  private api!: ModelApi;
  /** Compiled once per config: a turn only looks tools up. */
  private policy!: Policy;
  private readonly mcp: McpServers;
  private readonly promptSizes = new PromptSizes();
  private readonly apiHistories = new ApiHistories();
  /** Per session, the MCP failures it has been told about. */
  private readonly toldFailures = new Map<string, Set<number>>();

  constructor(
    private readonly source: ModelAgentOptions,
    config: ModelConfig,
    private readonly sandboxes: Sandboxes,
  ) {
    this.configure(config);
    this.mcp = new McpServers(source.log, sandboxes);
    this.mcp.start(config.mcp_servers);
  }

  get sandbox(): SandboxStatus {
    return this.sandboxes.status;
  }

  async runTurn(turn: TurnContext): Promise<TurnResult> {
    await this.mcp.whenStarted(MCP_START_WAIT_MS);
    this.tellMcpFailures(turn);
    const config = this.config;
    const model = turn.overrides.model ?? config.model;
    const tools = this.toolSet();
    const system: ApiMessage = { role: 'system', content: systemPrompt(config, turn.overrides) };
    const usage: TurnUsage = { prompt_tokens: 0, completion_tokens: 0, calls: 0 };
    const done = (reply: string): TurnResult => ({ reply, model, usage });
    let prior: readonly ChatMessage[] = turn.history;
    const added: ChatMessage[] = [{ role: 'user', content: turn.prompt }];
    const prompt = (await promptMessage(turn, config.vision, this.source.definition ?? this.name)) ?? undefined;
    let compressed = false;
    const request = (): { request: StreamRequest; chars: number } => {
      const { json, chars } = this.apiHistories.messages(system, prior, added, prompt);
      return { request: { model, messagesJson: json, tools: offeredTools(tools), temperature: config.temperature, max_tokens: config.max_tokens }, chars };
    };
    while (usage.calls < config.max_tool_rounds) {
      // Texts steered in since the last call reach this one, after the tool results before them.
      for (const text of turn.takeSteering()) added.push({ role: 'user', content: text });
      let sent = request();
      if (!compressed && this.promptSizes.estimate(turn.sid, sent.chars) > config.compress_at * config.context_tokens) {
        compressed = true;
        const smaller = await this.compressDuringTurn(turn, prior, model, 'the conversation is close to the context limit');
        if (smaller !== null) {
          prior = smaller;
          sent = request();
        }
      }
      let reply;
      try {
        reply = await this.call(turn, model, sent.request);
      } catch (err) {
        if (!(err instanceof ContextTooLong) || compressed) throw keepSeenText(turn, err);
        compressed = true;
        const smaller = await this.compressDuringTurn(turn, prior, model, 'the model said the conversation is too long');
        if (smaller === null) throw err;
        prior = smaller;
        sent = request();
        reply = await this.call(turn, model, sent.request).catch((again: unknown) => Promise.reject(keepSeenText(turn, again)));
      }
      usage.calls++;
      if (reply.usage) {
        addUsage(usage, reply.usage);
        this.promptSizes.record(turn.sid, reply.usage.prompt_tokens, sent.chars);
      }
      turn.reportUsage(usage, model);
      if (reply.finishReason === 'length') {
        turn.emit({ type: 'status.update', kind: 'length', text: 'the reply was cut by the token limit (max_tokens)' });
        return { ...done(reply.content), finishReason: 'length' };
      }
      if (reply.aborted || reply.toolCalls.length === 0) return done(reply.content);
      const call: ChatMessage = { role: 'assistant', content: reply.content, tool_calls: reply.toolCalls };
      turn.append(call);
      added.push(call);
      // Stored before the tools run: after a crash the history still says what was called.
      await turn.save();
      for (const result of await runToolCalls(reply.toolCalls, turn, tools)) {
        turn.append(result);
        added.push(result);
      }
      if (turn.signal.aborted) return done('');
    }
    const limit = `(stopped: this turn reached its limit of ${config.max_tool_rounds} model calls; send another message to continue)`;
    turn.emit({ type: 'status.update', kind: 'limit', text: `max_tool_rounds (${config.max_tool_rounds}) reached` });
    turn.emit({ type: 'message.delta', text: limit });
    return done(limit);
  }

  /** One model call in its span (PROTOCOL.md §5.8); the server gets the span as its `traceparent`. */
  private async call(turn: TurnContext, model: string, request: StreamRequest): Promise<ModelReply> {
    const span = startChat(turn.trace, 'openai', model, this.api.server);
    try {
      const reply = await this.api.stream(span === null ? request : { ...request, traceparent: span.traceparent }, turn.signal, streamHandlers(turn));
      endChat(span, { responseModel: reply.model, finishReason: reply.finishReason, usage: reply.usage });
      return reply;
    } catch (err) {
      span?.fail(err instanceof ContextTooLong ? 'context_length_exceeded' : err instanceof AgentFailure ? err.reason : 'upstream');
      throw err;
    }
  }

  async compress(history: readonly ChatMessage[], focusTopic: string | null, session: SessionView): Promise<ChatMessage[]> {
    const model = session.overrides.model ?? this.config.model;
    const signal = AbortSignal.timeout(this.config.request_timeout_s * 1000);
    return (await summarize(this.api, model, history, this.config.keep_recent, focusTopic, signal)) ?? [...history];
  }

  checkOverrides(overrides: Readonly<SessionOverrides>): string | null {
    const name = overrides.personality;
    const known = Object.keys(this.config.personalities);
    if (name === undefined || name === '' || known.includes(name)) return null;
    return `unknown personality "${name}" (${known.length > 0 ? `known: ${known.join(', ')}` : 'none configured in the agent config'})`;
  }

  /**
   * Re-reads the config, restarts every MCP server and counts their tools (the reload.mcp result).
   * The file as it is now: not the text the catalogue was validated from, which made this agent.
   */
  async reloadTools(): Promise<unknown> {
    const next = loadModelConfig({ ...this.source, text: undefined });
    this.configure(next);
    this.toldFailures.clear();
    return { status: 'ok', servers: await this.mcp.reload(next.mcp_servers) };
  }

  close(): Promise<void> {
    return this.mcp.close();
  }

  private configure(config: ModelConfig): void {
    this.config = config;
    this.api = newApi(config, this.source.env);
    this.policy = approvalPolicy(config.approval, Object.keys(config.mcp_servers));
  }

  private toolSet(): ToolSet {
    return { mcp: this.mcp, mcpTools: new Map(this.mcp.tools().map((tool) => [tool.name, tool])), policy: this.policy };
  }

  /** Each MCP server failure reaches each session once, at its next turn. */
  private tellMcpFailures(turn: TurnContext): void {
    const failures = this.mcp.currentFailures();
    if (failures.length === 0) return;
    let told = this.toldFailures.get(turn.sid);
    if (told === undefined) {
      told = new Set();
      this.toldFailures.set(turn.sid, told);
      if (this.toldFailures.size > REMEMBERED_SESSIONS) this.toldFailures.delete(this.toldFailures.keys().next().value!);
    }
    for (const failure of failures) {
      if (told.has(failure.id)) continue;
      told.add(failure.id);
      turn.emit({ type: 'status.update', kind: 'mcp', text: `${failure.text}; its tools are not available` });
    }
  }

  /** Summarizes the history before the prompt and has the session store it; null (history untouched) when that fails. */
  private async compressDuringTurn(turn: TurnContext, prior: readonly ChatMessage[], model: string, why: string): Promise<ChatMessage[] | null> {
    turn.emit({ type: 'status.update', kind: 'compress', text: `compressing the history: ${why}` });
    try {
      const summary = await summarize(this.api, model, prior, this.config.keep_recent, null, turn.signal);
      if (summary === null) return null;
      await turn.compressHistory(summary);
      this.promptSizes.forget(turn.sid);
      turn.emit({ type: 'status.update', kind: 'compress', text: `compressed ${prior.length} messages into ${summary.length}` });
      return summary;
    } catch (err) {
      turn.emit({ type: 'status.update', kind: 'compress', text: `compression failed, the history is unchanged: ${(err as Error).message}` });
      return null;
    }
  }
}

function newApi(config: ModelConfig, env: ConfigSource['env']): ModelApi {
  return new ModelApi({
    baseUrl: config.base_url,
    apiKey: env[config.api_key_env] || undefined,
    apiKeyEnv: config.api_key_env,
    requestTimeoutMs: config.request_timeout_s * 1000,
    idleTimeoutMs: config.idle_timeout_s * 1000,
    maxRetries: config.max_retries,
  });
}

/** The config's prompt, the session's personality, then the session's own prompt (slash.prompt). */
function systemPrompt(config: ModelConfig, overrides: Readonly<SessionOverrides>): string {
  const personality = overrides.personality ? config.personalities[overrides.personality] : undefined;
  return [config.system_prompt, personality, overrides.systemPrompt].filter((part) => part !== undefined && part !== '').join('\n\n');
}

/**
 * A reply that failed after text was streamed: that text goes into the history, as an interrupted
 * reply's does, so that the history holds what the person saw. Cut tool calls are never kept.
 */
function keepSeenText(turn: TurnContext, err: unknown): unknown {
  if (err instanceof CutReply) turn.append({ role: 'assistant', content: err.seen });
  return err;
}

function streamHandlers(turn: TurnContext): StreamHandlers {
  return {
    content: (text) => turn.emit({ type: 'message.delta', text }),
    reasoning: (text) => turn.emit({ type: 'reasoning.delta', text }),
    retry: (attempt, delayMs, why) =>
      turn.emit({ type: 'status.update', kind: 'retry', text: `retry ${attempt} in ${(delayMs / 1000).toFixed(1)} s: ${why}` }),
  };
}

/** One call's usage added to the turn's; the details only when a server gave them. */
function addUsage(turn: TurnUsage, call: Usage): void {
  turn.prompt_tokens += call.prompt_tokens;
  turn.completion_tokens += call.completion_tokens;
  if (call.cached_tokens !== undefined) turn.cached_tokens = (turn.cached_tokens ?? 0) + call.cached_tokens;
  if (call.reasoning_tokens !== undefined) turn.reasoning_tokens = (turn.reasoning_tokens ?? 0) + call.reasoning_tokens;
}
