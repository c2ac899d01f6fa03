// `turnhost daemon` declared (PROTOCOL.md §3): its options, and how they become the daemon's; the
// body is daemon.ts.
import type { Command } from 'commander';
import { WEBHOOK_EVENTS } from '../../protocol/webhook-events.js';
import { homeFrom } from '../../protocol/home-paths.js';
import { homeOption, maxClientsOption, maxUnreadOption } from '../cli-options.js';
import { contentFrom, contentOptions, httpFrom, httpOptions, retentionFrom, retentionOptions, webhookOptions } from '../daemon-flags.js';
import { hostOptions } from '../host-options.js';
import { run } from '../run-command.js';
import type { CommandTable } from '../command-table.js';

/** The supervisor in the foreground. */
function declareDaemon(program: Command): void {
  contentOptions(retentionOptions(webhookOptions(httpOptions(hostOptions(program.command('daemon').description('run the supervisor in the foreground (the host options go to its host)'))))))
    .addOption(homeOption())
    .addOption(maxClientsOption())
    .addOption(maxUnreadOption())
    .action((opts) =>
      run('daemon', async () => {
        const http = httpFrom(opts);
        return (await import('./daemon.js')).daemonCommand({
          home: homeFrom(opts.home),
          agent: opts.agent,
          agentConfig: opts.agentConfig,
          workers: opts.workers,
          maxRunningPerPerson: opts.maxRunningPerPerson,
          otlpEndpoint: opts.otlpEndpoint,
          heartbeatSecs: opts.heartbeatSecs,
          historyCacheMib: opts.historyCacheMib,
          store: opts.store,
          nodeId: opts.nodeId,
          leaseSecs: opts.leaseSecs,
          advertise: opts.advertise,
          maxClients: opts.maxClients,
          maxUnreadMib: opts.maxUnreadMib,
          webhooks: opts.webhook,
          ...(opts.webhook.length === 0 ? {} : { webhookEvents: opts.webhookEvents ?? [...WEBHOOK_EVENTS] }),
          echoLog: true,
          ...retentionFrom(opts),
          content: contentFrom(opts),
          ...(http === undefined ? {} : { http }),
        });
      }),
    );
}

export const COMMANDS: CommandTable = { daemon: declareDaemon };
