// The daemon's floor: the least a process between a JSON-RPC client and the host can do. It
// spawns `turnhost host`, turns each prompt.submit into a turn.start, answers it at turn.started,
// and passes the host's events on with a per-session seq, cutting them out of the host's lines as
// the daemon does (dist/protocol/event-line.js). No actors, no event rings, no metrics, no
// validation, one client. What is left is what any process in the middle costs on this machine.
//
// usage: node pass-through.mjs <turnhost entry> <home> <socket path>; prints `ready <host pid>`.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { eventLine } from '../../dist/protocol/event-line.js';
// The lines written in one event-loop turn leave in one write, as the daemon's do.
import { tickWrites } from '../../dist/protocol/tick-writes.js';

const [entry, home, socketPath] = process.argv.slice(2);
const host = spawn(process.execPath, [entry, 'host', '--home', home, '--workers', '64'], { stdio: ['pipe', 'pipe', 'ignore'] });
const toHost = tickWrites(host.stdin);
let toClient = () => {};
/** request_id sent to the host → the client's JSON-RPC id. */
const submits = new Map();
const seqs = new Map();
let requests = 0;

function onLines(stream, handle) {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop();
    for (const line of lines) if (line !== '') handle(line);
  });
}

function event(sid, paramsJson) {
  const seq = (seqs.get(sid) ?? 0) + 1;
  seqs.set(sid, seq);
  toClient(`{"jsonrpc":"2.0","method":"event","params":${paramsJson.slice(0, -1)},"seq":${seq}}}\n`);
}

function turnEvent(type, frame, payload) {
  event(frame.sid, JSON.stringify({ type, session_id: frame.sid, payload }));
}

onLines(host.stdout, (line) => {
  const cut = eventLine(line);
  if (cut !== null) return event(cut.sid, cut.paramsJson);
  const frame = JSON.parse(line);
  if (frame.type === 'hello') process.stdout.write(`ready ${host.pid}\n`);
  if (frame.type === 'turn.started') {
    const id = submits.get(frame.request_id);
    submits.delete(frame.request_id);
    toClient(`{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify({ status: 'streaming', turn_id: frame.turn_id })}}\n`);
    turnEvent('turn.started', frame, { turn_id: frame.turn_id });
  }
  if (frame.type === 'turn.end') {
    const { turn_id, interrupted, message_count, history_version } = frame;
    turnEvent('turn.end', frame, { turn_id, interrupted, message_count, history_version });
  }
});

const server = createServer((socket) => {
  toClient = tickWrites(socket);
  onLines(socket, (line) => {
    const message = JSON.parse(line);
    if (message.method !== 'prompt.submit') {
      // session.create: the host makes a session at its first turn.start.
      toClient(`{"jsonrpc":"2.0","id":${message.id},"result":{"session_id":${JSON.stringify(message.params.session_id)}}}\n`);
      return;
    }
    const requestId = `r${++requests}`;
    submits.set(requestId, message.id);
    toHost(`${JSON.stringify({ type: 'turn.start', sid: message.params.session_id, request_id: requestId, text: message.params.text })}\n`);
  });
});
server.listen(socketPath);

process.on('SIGTERM', () => {
  server.close();
  host.stdin.end();
  host.once('exit', () => process.exit(0));
});
