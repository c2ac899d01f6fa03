// The model agent's floor: the least a program can do for the same turns. For each turn.start it
// sends the same request turnhost's model agent sends (system prompt, the session's history, the
// prompt) through the same `openai` SDK call, reads the stream to its end, keeps the history in
// memory and writes only a turn.end line: no database, no events, no actors.
import OpenAI from 'openai';
// The one tool turnhost offers with no MCP server, so that both send the same request.
import { CLARIFY_DEFINITION } from '../../dist/agents/model/tools.js';
import { helloLine, readLines, writeOut } from './floor-common.mjs';

const [baseURL, model, systemPrompt] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unset', defaultHeaders: { Authorization: null }, maxRetries: 0 });
const histories = new Map();

async function turn(frame) {
  const history = histories.get(frame.sid) ?? [];
  histories.set(frame.sid, history);
  const messages = [{ role: 'system', content: systemPrompt }, ...history, { role: 'user', content: frame.text }];
  const stream = await client.chat.completions.create({ model, messages, tools: [CLARIFY_DEFINITION], stream: true, stream_options: { include_usage: true } });
  let reply = '';
  for await (const chunk of stream) reply += chunk.choices[0]?.delta?.content ?? '';
  history.push({ role: 'user', content: frame.text }, { role: 'assistant', content: reply });
  writeOut(`{"type":"turn.end","sid":"${frame.sid}","request_id":"${frame.request_id}"}\n`);
}


writeOut(helloLine());
readLines((lines) => {
  for (const line of lines) void turn(JSON.parse(line));
});
