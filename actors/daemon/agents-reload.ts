// `turnhost agents reload` and SIGHUP (AGENT.md §8): the agent config read and validated again,
// by the daemon and then by its host, each in its own process. A file that does not validate is
// refused with the line a start would exit 78 with, and both keep the old catalogue; a valid one
// is the catalogue of new sessions at once. The host gets the values of the variables its new
// agents need that it was not handed at its start (a new guest's `pass_env`), and a host the
// daemon starts later is handed them with its catalogue (catalogue-handoff.ts).
import { catalogueEnvironment } from '../../agents/catalogue-config.js';
import type { CatalogueView } from '../../agents/catalogue.js';
import type { ConfigSource } from '../../agents/config-file.js';
import { AgentLoadError, checkedCatalogue } from '../../agents/loader.js';
import type { ChangingRedactor } from '../../agents/model/key-redaction.js';
import { ErrorCodes, RpcError } from '../../protocol/client-rpc.js';
import type { Ref } from '../runtime.js';
import type { AgentChoices } from './agent-choice.js';
import { askHost } from './methods/host-calls.js';
import { variableValues } from './host-child.js';
import type { SupervisorMsg } from './supervisor-messages.js';

export interface AgentsReload {
  spec: string | undefined;
  source: ConfigSource;
  choices: AgentChoices;
  /** The names the host's environment carries beyond its allowlist: each reload may add some. */
  hostNames: Set<string>;
  /** The daemon's redaction of its host's lines: a new agent's secrets join it. */
  secrets: ChangingRedactor;
  supervisor: Ref<SupervisorMsg>;
}

export async function reloadAgents(reload: AgentsReload): Promise<CatalogueView> {
  let next;
  try {
    next = await checkedCatalogue(reload.spec, reload.source);
  } catch (err) {
    if (err instanceof AgentLoadError) throw new RpcError(ErrorCodes.invalidParams, err.message, { exit: err.exitCode });
    throw err;
  }
  const needs = catalogueEnvironment(next.catalogue);
  const env = variableValues(reload.source.env, needs.names.filter((name) => !reload.hostNames.has(name)));
  const view = (await askHost(reload.supervisor, { op: 'agents', reload: true, env })) as CatalogueView;
  for (const name of needs.names) reload.hostNames.add(name);
  reload.choices.set(next);
  reload.secrets.set(needs.secrets);
  return view;
}
