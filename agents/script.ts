// The script agent (PROTOCOL.md §4): deterministic, for demos, tests and benchmarks. Plain
// lines are echoed word by word; `/` lines are directives whose outcomes end the reply.
import { keepRecent, type Agent, type AskOptions, type TurnContext, type TurnResult } from './agent.js';

interface Script {
  turn: TurnContext;
  echoed: string[];
  outcomes: string[];
  toolCount: number;
}

type Directive = (script: Script, argument: string) => Promise<void> | void;

const SECOND_MS = 1000;

export const scriptAgent: Agent = {
  name: 'script',
  steerable: true,
  async runTurn(turn: TurnContext): Promise<TurnResult> {
    const script: Script = { turn, echoed: [], outcomes: [], toolCount: 0 };
    for (const line of turn.prompt.split('\n')) {
      if (turn.signal.aborted) break;
      if (line.startsWith('/')) await runDirective(script, line);
      else echo(script, line);
    }
    const outcomes = script.outcomes.join('\n');
    if (outcomes) emitText(script, outcomes);
    return { reply: [...script.echoed, ...script.outcomes].join('\n') };
  },
  compress: (history, focusTopic) => keepRecent(history, focusTopic),
};

async function runDirective(script: Script, line: string): Promise<void> {
  const space = line.indexOf(' ');
  const name = space === -1 ? line.slice(1) : line.slice(1, space);
  const argument = space === -1 ? '' : line.slice(space + 1).trim();
  const directive = DIRECTIVES[name];
  if (directive === undefined) {
    script.outcomes.push(`unknown directive: /${name}`);
    return;
  }
  await directive(script, argument);
}

function echo(script: Script, line: string): void {
  script.echoed.push(line);
  const words = line.match(/\s*\S+/g) ?? [];
  const separator = script.echoed.length > 1 ? '\n' : '';
  if (words.length === 0) {
    if (separator) script.turn.emit({ type: 'message.delta', text: separator });
    return;
  }
  words.forEach((word, i) => script.turn.emit({ type: 'message.delta', text: i === 0 ? separator + word : word }));
}

/** Streams directive outcomes after the echoed text, so the deltas add up to the reply. */
function emitText(script: Script, text: string): void {
  const separator = script.echoed.length > 0 ? '\n' : '';
  script.turn.emit({ type: 'message.delta', text: separator + text });
}

function parseSeconds(text: string): number | undefined {
  if (!/^\d+(\.\d+)?$|^\.\d+$/.test(text)) return undefined;
  return Number(text) * SECOND_MS;
}

/** Resolves true after `ms`, or false as soon as the signal aborts. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** `--timeout S` before a question sets how long it stays open. */
function askOptions(argument: string): { text: string; options: AskOptions } {
  const withTimeout = /^--timeout\s+(\S+)\s*(.*)$/.exec(argument);
  const timeoutMs = withTimeout ? parseSeconds(withTimeout[1]!) : undefined;
  return { text: withTimeout ? withTimeout[2]! : argument, options: timeoutMs === undefined ? {} : { timeoutMs } };
}

function answerText(value: unknown): string {
  if (value === undefined || value === null || value === '') return '(none)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function field(result: unknown, key: string): unknown {
  return typeof result === 'object' && result !== null ? (result as Record<string, unknown>)[key] : undefined;
}

const DIRECTIVES: Record<string, Directive> = {
  async sleep(script, argument) {
    const ms = parseSeconds(argument);
    if (ms === undefined) {
      script.outcomes.push(`sleep: not a number of seconds: ${argument}`);
      return;
    }
    await sleepUnlessAborted(ms, script.turn.signal);
  },

  async ask(script, argument) {
    const { text, options } = askOptions(argument);
    const result = await script.turn.ask('clarify.request', { question: text }, options);
    script.outcomes.push(`answer: ${answerText(field(result, 'answer'))}`);
  },

  async batch(script, argument) {
    const { text, options } = askOptions(argument);
    const questions = text.split('|').map((q, i) => ({ id: `q${i}`, question: q.trim() }));
    const result = await script.turn.ask('clarify.request', { questions }, options);
    const answers = field(result, 'answers');
    const parts = questions.map((q) => `${q.id}=${answerText(field(answers, q.id))}`);
    script.outcomes.push(`answers: ${parts.join(', ')}`);
  },

  async approve(script, argument) {
    const { text, options } = askOptions(argument);
    const result = await script.turn.ask('approval.request', { question: text }, options);
    script.outcomes.push(`${field(result, 'approved') === true ? 'approved' : 'denied'}: ${text}`);
  },

  async tool(script, argument) {
    const [name = 'tool', seconds = '0'] = argument.split(/\s+/);
    const ms = parseSeconds(seconds) ?? 0;
    const id = `tool-${++script.toolCount}`;
    script.turn.emit({ type: 'tool.start', id, name });
    const finished = await sleepUnlessAborted(ms, script.turn.signal);
    script.turn.emit({ type: 'tool.complete', id, ok: finished });
    script.outcomes.push(`tool ${name} ${finished ? 'ok' : 'interrupted'}`);
  },

  /** Waits up to S seconds for steered texts (PROTOCOL.md §4): what has arrived by then is taken. */
  async 'await-steer'(script, argument) {
    const ms = parseSeconds(argument);
    if (ms === undefined) {
      script.outcomes.push(`await-steer: not a number of seconds: ${argument}`);
      return;
    }
    await script.turn.steeringArrival(ms);
    const texts = script.turn.takeSteering();
    if (texts.length === 0) script.outcomes.push('steered: (none)');
    for (const text of texts) script.outcomes.push(`steered: ${text}`);
  },

  spin(_script, argument) {
    const until = performance.now() + (Number(argument) || 0);
    while (performance.now() < until) {
      // Deliberately holds the event loop: liveness tests need a host that cannot answer.
    }
  },

  fail(_script, argument) {
    throw new Error(argument || 'script agent failure');
  },
};
