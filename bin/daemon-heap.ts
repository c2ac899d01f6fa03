// The daemon's garbage collector, tuned for a process whose job is to pass events through.
// A streaming turn sends ~200,000 events a second through the daemon and each leaves a few
// hundred bytes of garbage; with V8's defaults the young generation grows to 32 MB and the old
// one is let grow up to four times its live size before a full collection, so a burst of one
// million events took the daemon ~100 MB above its idle size while its live data stayed ~40 MB
// (issue 12 asks 64 MB at most). Two settings, both read by the collector each time it sizes a
// space (so they take effect when set at the start, with no node flags on the command line,
// which `turnhost daemon` run by systemd or by hand would not have):
//  - the young generation keeps its starting size (it would double when many objects survive);
//  - the old generation may grow 30% over what the last full collection kept, not up to 4x.
// Measured (slow-consumer test): peak +39 to +54 MB instead of +90 to +145.
// They must be set before the daemon's modules load: loading them allocates enough that the young
// generation had already doubled to 16 MB by the time the daemon command ran (its peak then rose
// to +50 to +65 MB once the edge's modules were added). So this module tunes the heap as it is
// evaluated, when the command line names the daemon, and bin/turnhost.ts imports it first.
// The young generation collected more often made the daemon benchmark's collections costlier
// while the event rings kept each event as a string; with the rings as bytes (event-rings.ts) the
// benchmark's daemon path is the same with or without these settings.
import { setFlagsFromString } from 'node:v8';

const GROWTH_FLAGS = ['--semi-space-growth-factor=1', '--heap-growing-percent=30'];

/** `turnhost daemon …`: the subcommand is always the first argument (the CLI has no global options). */
function isDaemonCommand(argv: readonly string[]): boolean {
  return argv[2] === 'daemon';
}

if (isDaemonCommand(process.argv)) for (const flag of GROWTH_FLAGS) setFlagsFromString(flag);
