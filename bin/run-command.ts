// How every command ends: its body's exit code once its output has drained, a thrown error as one
// line on stderr (a config error's exit 78, else 1), and a reader that went away as a quiet end.
import { AgentLoadError } from '../agents/loader-error.js';

/**
 * Runs a command body and exits with its code; anything it throws is one line on stderr, exit 1.
 * The exit waits until stdout and stderr have drained: a pipe takes 64 KiB at once, and an exit
 * before the rest has left cuts the output (`history --json | jq` would get broken JSON).
 */
export async function run(name: string, body: () => number | Promise<number>): Promise<void> {
  // The host writes its frames to fd 1 itself, with blocking writes: opening process.stdout
  // would make fd 1 non-blocking, and a full pipe would then cost the host a sleep per write.
  const streams = name === 'host' ? [process.stderr] : [process.stdout, process.stderr];
  for (const stream of streams) quietOnClosedPipe(stream);
  let code: number;
  try {
    code = await body();
  } catch (err) {
    process.stderr.write(`turnhost ${name}: ${(err as Error).message}\n`);
    code = err instanceof AgentLoadError ? err.exitCode : 1;
  }
  process.exitCode = code;
  await Promise.all(streams.map(drained));
  process.exit(code);
}

function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableLength === 0) return Promise.resolve();
  return new Promise((resolve) => {
    stream.write('', () => resolve());
    stream.once('error', () => resolve());
  });
}

/** A reader that went away (`turnhost history X | head -1`) ends the command quietly, as `cat` would. */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
