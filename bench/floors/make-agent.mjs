// The floor of a first turn with an agent not yet made (AGENT.md §8): making that agent alone, in a
// fresh process in which nothing of it is loaded yet, as in a host the daemon started (it hands
// the host the catalogue it validated: catalogue-handoff.ts), by the same loader from the same
// file. Prints the time `loadAgent` took (the imports of its kind's modules, reading its config,
// its construction), in ms.
import { loadAgent } from '../../dist/agents/loader.js';
import { GuestSlots } from '../../dist/agents/acp/guest-slots.js';

const [file, home, name, kind] = process.argv.slice(2);
const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, child() { return quiet; } };
const started = performance.now();
const agent = await loadAgent(kind, { log: quiet, homes: () => null, home, flag: file, definition: name, env: process.env, slots: new GuestSlots(1), homeTemplate: null });
process.stdout.write(`${performance.now() - started}\n`);
await agent.close?.();
