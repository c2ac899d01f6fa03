// The tools of a turn (AGENT.md §2): the built-in `clarify` and the MCP servers' tools, each call
// checked against the approval policy. The calls of one response run concurrently, `clarify`
// alone after them; results come back in call order. Nothing a tool does fails the turn: an
// error, an unknown tool or arguments that are not JSON become a result the model can read.
import type { ChatMessage, ToolCall } from '../../protocol/chat.js';
import { approvalQuestion } from '../../protocol/tool-arguments.js';
import type { TurnContext } from '../agent.js';
import { endTool, startTool } from '../genai-spans.js';
import { CLARIFY_TOOL, type Policy } from './approval.js';
import { MISSING_RESULT } from './history.js';
import type { McpServers, McpTool } from './mcp.js';
import type { ApiTool } from './openai-api.js';

/** A result past this many bytes is cut, with a note saying how much. */
export const RESULT_MAX_BYTES = 64 * 1024;

export interface ToolSet {
  mcp: McpServers;
  /** The MCP tools offered in this turn, by their offered name. */
  mcpTools: ReadonlyMap<string, McpTool>;
  policy: Policy;
}

interface Outcome {
  ok: boolean;
  text: string;
}

/** The built-in tool as the model is offered it (the agent benchmark's floor offers the same). */
export const CLARIFY_DEFINITION: ApiTool = {
  type: 'function',
  function: {
    name: CLARIFY_TOOL,
    description:
      'Ask the user a question and wait for the answer. Give `question` (and optional `choices`), or `questions` for several at once.',
    parameters: {
      type: 'object',
      properties: {
        question: { type: 'string' },
        choices: { type: 'array', items: { type: 'string' } },
        questions: {
          type: 'array',
          items: {
            type: 'object',
            properties: { id: { type: 'string' }, question: { type: 'string' }, choices: { type: 'array', items: { type: 'string' } } },
            required: ['question'],
          },
        },
      },
    },
  },
};

/** What the model is offered: clarify, and every MCP tool the policy does not deny. */
export function offeredTools(tools: ToolSet): ApiTool[] {
  const offered = [CLARIFY_DEFINITION];
  for (const tool of tools.mcpTools.values()) {
    if (tools.policy(tool) === 'deny') continue;
    offered.push({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } });
  }
  return offered;
}

/** Runs a response's calls; one `tool` message per call, in call order. */
export async function runToolCalls(calls: readonly ToolCall[], turn: TurnContext, tools: ToolSet): Promise<ChatMessage[]> {
  const outcomes = new Map<ToolCall, Outcome>();
  const others = calls.filter((call) => call.function.name !== CLARIFY_TOOL);
  await Promise.all(others.map(async (call) => outcomes.set(call, await runOne(call, turn, tools))));
  for (const call of calls) {
    if (call.function.name === CLARIFY_TOOL) outcomes.set(call, await runOne(call, turn, tools));
  }
  return calls.map((call) => ({ role: 'tool', tool_call_id: call.id, content: outcomes.get(call)!.text }));
}

async function runOne(call: ToolCall, turn: TurnContext, tools: ToolSet): Promise<Outcome> {
  const name = call.function.name;
  turn.emit({ type: 'tool.start', id: call.id, name, arguments: call.function.arguments });
  const span = startTool(turn.trace, name, call.id, call.function.arguments);
  const outcome = turn.signal.aborted ? { ok: false, text: MISSING_RESULT } : await execute(call, turn, tools);
  const text = cutResult(outcome.text);
  endTool(span, turn.trace, outcome.ok, text);
  turn.emit({ type: 'tool.complete', id: call.id, ok: outcome.ok, summary: text });
  return { ok: outcome.ok, text };
}

async function execute(call: ToolCall, turn: TurnContext, tools: ToolSet): Promise<Outcome> {
  const name = call.function.name;
  const args = parseArguments(call.function.arguments);
  if (typeof args === 'string') return { ok: false, text: `error: the arguments of ${name} are not valid: ${args}. Call it again with a JSON object.` };
  if (name === CLARIFY_TOOL) return clarify(args, turn);
  const tool = tools.mcpTools.get(name);
  if (tool === undefined) return { ok: false, text: `error: there is no tool named "${name}". Use one of the tools you were given.` };
  const policy = tools.policy(tool);
  if (policy === 'deny') return refused(name, 'the approval policy does not allow this tool');
  if (policy === 'ask' && !(await approved(name, args, turn))) {
    return turn.signal.aborted ? { ok: false, text: MISSING_RESULT } : refused(name, 'the user did not approve this call');
  }
  const outcome = await tools.mcp.call(tool, args, turn.signal);
  return turn.signal.aborted ? { ok: false, text: MISSING_RESULT } : outcome;
}

function refused(name: string, why: string): Outcome {
  return { ok: false, text: `refused: ${why} (${name}). The tool did not run. Do not retry this call; carry on without it or ask the user.` };
}

/** The person approves what will run: the parsed arguments, shown as they will be passed. */
async function approved(name: string, args: Record<string, unknown>, turn: TurnContext): Promise<boolean> {
  const answer = await turn.ask('approval.request', { question: approvalQuestion(name, args), tool: name, arguments: args });
  return field(answer, 'approved') === true;
}

/** `{question, choices?}` asks one question; `{questions: [...]}` asks a batch. */
async function clarify(args: Record<string, unknown>, turn: TurnContext): Promise<Outcome> {
  const unanswered = { ok: true, text: 'The user did not answer. Use your best judgement and carry on.' };
  if (Array.isArray(args['questions'])) {
    const questions = (args['questions'] as unknown[]).map((q, i) => {
      const item = (typeof q === 'object' && q !== null ? q : { question: String(q) }) as Record<string, unknown>;
      return { id: typeof item['id'] === 'string' && item['id'] !== '' ? item['id'] : `q${i + 1}`, question: String(item['question'] ?? ''), ...choices(item) };
    });
    const result = await turn.ask('clarify.request', { questions });
    const answers = field(result, 'answers');
    return answers === undefined || answers === null ? unanswered : { ok: true, text: JSON.stringify({ answers }) };
  }
  if (typeof args['question'] !== 'string') return { ok: false, text: 'error: clarify needs a `question` (a string) or `questions` (a list).' };
  const result = await turn.ask('clarify.request', { question: args['question'], ...choices(args) });
  const answer = field(result, 'answer');
  return answer === undefined || answer === null ? unanswered : { ok: true, text: JSON.stringify({ answer }) };
}

function choices(item: Record<string, unknown>): { choices?: string[] } {
  return Array.isArray(item['choices']) ? { choices: (item['choices'] as unknown[]).map(String) } : {};
}

/** The arguments as an object, or why they are not one. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not JSON (${(err as Error).message})`;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : 'not a JSON object';
}

export function cutResult(text: string): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= RESULT_MAX_BYTES) return text;
  // Cut on a character boundary: decoding a cut buffer drops a split character's bytes.
  const kept = Buffer.from(text).subarray(0, RESULT_MAX_BYTES).toString('utf8').replace(/\uFFFD$/, '');
  return `${kept}\n[result cut: ${bytes - Buffer.byteLength(kept)} of ${bytes} bytes left out]`;
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
