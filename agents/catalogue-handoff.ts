// The daemon validates the catalogue whole at its start and at each reload (AGENT.md §8); it hands
// the host what it found, the file's text as validated included. A host it starts, after a crash
// too, serves that catalogue until a reload, whatever the file says by then, and says hello without
// validating it again: validating an `openai` or `acp` definition loads the schema library (about
// 70 ms and 13 MiB here). The sandbox's try goes with it once the daemon has made it: a host
// started after a crash or a reload gets bubblewrap's version, the first host null (the daemon
// tries the sandbox once that host said hello, and shows the version itself: daemon.ts). A host
// started alone, or given a catalogue too large for an environment variable, validates the file
// and tries the sandbox itself, as before.
import type { AgentDefinition, CatalogueConfig, CheckedCatalogue } from './catalogue-config.js';
import type { ConfigSource } from './config-file.js';

export const CATALOGUE_ENV = 'TURNHOST_CHECKED_CATALOGUE';
/** Far under Linux's bound on one variable (128 KiB): a larger catalogue is read from its file. */
const MAX_HANDOFF_BYTES = 64 * 1024;

/** A definition without its source: the host's own (its environment), with the catalogue's text. */
type HandedDefinition = Omit<AgentDefinition, 'source'> & { definition?: string };

interface Handoff {
  catalogue: Omit<CatalogueConfig, 'definitions'>;
  definitions: HandedDefinition[];
  mechanism: string | null;
}

/** The host's environment entry that carries `checked`; none when it would be too large. */
export function catalogueHandoff(checked: CheckedCatalogue): Record<string, string> {
  const { definitions, ...catalogue } = checked.catalogue;
  const handoff: Handoff = {
    catalogue,
    definitions: [...definitions.values()].map(({ source, ...rest }) => ({ ...rest, ...(source.definition === undefined ? {} : { definition: source.definition }) })),
    mechanism: checked.mechanism,
  };
  const text = JSON.stringify(handoff);
  return Buffer.byteLength(text) > MAX_HANDOFF_BYTES ? {} : { [CATALOGUE_ENV]: text };
}

/**
 * The catalogue the daemon handed this host, each definition reading its config through `source`
 * (the host's own file flag and environment); null when none was handed. The variable is removed
 * from the environment: nothing this host starts sees it.
 */
export function handedCatalogue(env: NodeJS.ProcessEnv, source: ConfigSource): CheckedCatalogue | null {
  const text = env[CATALOGUE_ENV];
  if (text === undefined) return null;
  delete env[CATALOGUE_ENV];
  // Written by this daemon's own code a moment ago (catalogueHandoff): trusted as its type.
  const handoff = JSON.parse(text) as Handoff;
  const definitions = new Map<string, AgentDefinition>(
    handoff.definitions.map(({ definition, ...rest }) => [rest.name, { ...rest, source: { ...source, text: handoff.catalogue.text, ...(definition === undefined ? {} : { definition }) } }]),
  );
  return { catalogue: { ...handoff.catalogue, definitions }, mechanism: handoff.mechanism };
}
