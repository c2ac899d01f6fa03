// `turnhost host` declared (PROTOCOL.md §3): its options; the body is host.ts.
import { Option, type Command } from 'commander';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, positiveInteger } from '../cli-options.js';
import { webhookEvents } from '../daemon-flags.js';
import { hostOptions } from '../host-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The compute host on stdin/stdout, as a daemon spawns it or a person runs it by hand. */
function declareHost(program: Command): void {
  hostOptions(program.command('host').description('run the compute host on stdin/stdout (the host protocol)'))
    .addOption(homeOption())
    .addOption(new Option('--queue-deltas', 'send queue.delta frames instead of session.queue events (for the daemon)').hideHelp())
    .addOption(new Option('--log-fd <fd>', 'write log records to this open descriptor instead of stderr (for the daemon)').argParser(positiveInteger).hideHelp())
    .addOption(new Option('--catalogue-fd <fd>', 'read the agent catalogue the daemon validated from this open descriptor (for the daemon)').argParser(positiveInteger).hideHelp())
    .addOption(new Option('--webhook-events <list>', 'write these webhook events to the outbox (for the daemon)').argParser(webhookEvents).hideHelp())
    .action((opts) =>
      run('host', async () => (await import('./host.js')).hostCommand({ home: homeFrom(opts.home), agent: opts.agent, agentConfig: opts.agentConfig, workers: opts.workers, maxRunningPerPerson: opts.maxRunningPerPerson, otlpEndpoint: opts.otlpEndpoint, heartbeatSecs: opts.heartbeatSecs, queueDeltas: opts.queueDeltas, logFd: opts.logFd, catalogueFd: opts.catalogueFd, historyCacheMib: opts.historyCacheMib, store: opts.store, nodeId: opts.nodeId, leaseSecs: opts.leaseSecs, advertise: opts.advertise, webhookEvents: opts.webhookEvents })),
    );
}

export const COMMANDS: CommandTable = { host: declareHost };
