// The daemon's garbage collector, tuned for a process whose job is to pass events through.
// A streaming turn sends ~200,000 events a second through the daemon and each leaves a few
// hundred bytes of garbage; with V8's defaults the young generation grows to 32 MB and the old
// one is let grow up to four times its live size before a full collection, so a burst of one
// million events took the daemon ~100 MB above its idle size while its live data stayed ~40 MB
// (issue 12 asks 64 MB at most). Two settings, made as this module is evaluated (when the command
// line names the daemon; bin/turnhost.ts imports it first), with no node flags on the command
// line, which `turnhost daemon` run by systemd or by hand would not have:
//  - the old generation may grow 30% over what the last full collection kept, not up to 4x;
//  - the young generation is held at 8 MiB. V8 sizes it from node flags only as the process
//    starts, and doubles it when many objects survive its collections; a setting made later can
//    only stop the growth. So it is grown first, by keeping objects alive across collections
//    (~25 ms, once), and then held.
// Measured (slow-consumer test): peak +39 to +54 MB instead of +90 to +145. The 8 MiB: the young
// generation had been held at whatever size loading the CLI's modules left (8 or 16 MiB at
// random); once each command loaded only its own modules it stayed at its starting 2 MiB, and the
// daemon spent 153 µs of CPU a turn in the daemon benchmark against 134 at 8 MiB (six rounds each).
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

const YOUNG_GENERATION_BYTES = 8 * 1024 * 1024;
/** Growing to 8 MiB takes ~10,000 of these arrays; past this many, V8 was told a smaller limit (node flags). */
const MAX_SURVIVORS_MADE = 500_000;

/** `turnhost daemon …`: the subcommand is always the first argument (the CLI has no global options). */
function isDaemonCommand(argv: readonly string[]): boolean {
  return argv[2] === 'daemon';
}

function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? Infinity;
}

/** The heap's statistics are a list of objects: read once a batch of arrays, not once an array. */
const SURVIVORS_PER_LOOK = 256;

/** Objects kept alive across collections, the oldest half dropped now and then, until V8 has grown the young generation. */
function growYoungGeneration(bytes: number): void {
  let survivors: number[][] = [];
  for (let made = 0; made < MAX_SURVIVORS_MADE && (made % SURVIVORS_PER_LOOK !== 0 || youngGenerationBytes() < bytes); made++) {
    survivors.push(new Array<number>(16).fill(made));
    if (survivors.length > 50_000) survivors = survivors.slice(25_000);
  }
}

if (isDaemonCommand(process.argv)) {
  setFlagsFromString('--heap-growing-percent=30');
  growYoungGeneration(YOUNG_GENERATION_BYTES);
  setFlagsFromString('--semi-space-growth-factor=1');
}
