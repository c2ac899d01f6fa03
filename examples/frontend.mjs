// A front-end on turnhost/client in 40 lines: submit a prompt, print the stream as it comes,
// answer the agent's questions at the terminal. Try it with the script agent:
//   turnhost start && node examples/frontend.mjs $'pick a colour\n/ask which one?\n/approve paint it'
import { createInterface } from 'node:readline';
import { connect } from 'turnhost/client';

const prompt = process.argv.slice(2).join(' ') || 'hello from the example front-end';
const client = await connect(); // $TURNHOST_HOME or ~/.turnhost; reconnects and resumes by itself
const terminal = createInterface({ input: process.stdin });
const lines = terminal[Symbol.asyncIterator](); // typed or piped, no line is lost
const ask = async (question) => (process.stderr.write(`\n${question} `), (await lines.next()).value ?? '');

client.onClarify(async (request) => {
  if (!request.questions) return ask(`? ${request.question}`);
  const answers = {};
  for (const q of request.questions) answers[q.id] = await ask(`? ${q.question}`);
  return answers;
});
client.onApproval(async (request) => /^y/i.test(await ask(`allow ${request.question}? [y/N]`)));

const { session_id } = await client.createSession();
for await (const event of client.turn(session_id, prompt)) {
  switch (event.type) {
    case 'message.delta':
      process.stdout.write(event.payload.text);
      break;
    case 'tool.start':
      process.stderr.write(`\n→ ${event.payload.name}(${event.payload.arguments ?? ''})\n`);
      break;
    case 'turn.end':
      process.stdout.write(event.payload.interrupted ? ' (interrupted)\n' : '\n');
      break;
    case 'turn.error':
      process.stderr.write(`\nthe turn failed: ${event.payload.message} (${event.payload.reason})\n`);
      process.exitCode = 1;
      break;
  }
}
terminal.close();
client.close();
