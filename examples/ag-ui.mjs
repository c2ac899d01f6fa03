// An AG-UI client against turnhost in under 40 lines: AG-UI's own HttpAgent runs a turn through
// POST /v1/ag-ui and answers the agent's questions with the next run's `resume`. Try it:
//   turnhost web   (then, with the token `turnhost token` prints)
//   TURNHOST_TOKEN=… node examples/ag-ui.mjs $'pick a colour\n/ask which one?\n/approve paint it'
import { createInterface } from 'node:readline';
import { HttpAgent } from '@ag-ui/client';

const url = process.env.TURNHOST_URL ?? 'http://127.0.0.1:7433';
const headers = { authorization: `Bearer ${process.env.TURNHOST_TOKEN}` };
const agent = new HttpAgent({ url: `${url}/v1/ag-ui`, headers, threadId: process.env.THREAD_ID ?? `ag-ui-${Date.now()}` });
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator](); // typed or piped
const ask = async (question) => (process.stderr.write(`\n? ${question} `), (await lines.next()).value ?? '');

const printer = {
  onTextMessageContentEvent: ({ event }) => void process.stdout.write(event.delta),
  onToolCallStartEvent: ({ event }) => void process.stderr.write(`\n→ ${event.toolCallName}\n`),
  onRunErrorEvent: ({ event }) => void process.stderr.write(`\nerror (${event.code}): ${event.message}\n`),
};

agent.addMessage({ id: crypto.randomUUID(), role: 'user', content: process.argv.slice(2).join(' ') || 'hello from AG-UI' });
let resume = [];
do {
  // A run that ends in an interrupt leaves the turn waiting in turnhost; the next run answers it.
  await agent.runAgent(resume.length > 0 ? { resume } : {}, printer);
  resume = [];
  for (const interrupt of agent.pendingInterrupts) {
    const answer = await ask(interrupt.reason === 'approval' ? `allow ${interrupt.message}? [y/N]` : interrupt.message);
    resume.push({ interruptId: interrupt.id, status: 'resolved', payload: interrupt.reason === 'approval' ? { approved: /^y/i.test(answer) } : answer });
  }
} while (resume.length > 0);
process.stdout.write('\n');
process.exit(0);
