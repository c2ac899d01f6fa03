// The daemon validates the catalogue whole at its start and at each reload (AGENT.md §8); it hands
// the host what it found, the file's text as validated included, with the values of the variables
// its agents need. A host it starts, after a crash too, serves that catalogue until a reload,
// whatever the file says by then, and says hello without validating it again: validating an
// `openai` or `acp` definition loads the schema library (about 70 ms and 13 MiB here).
//
// The handoff comes on a pipe of its own (`turnhost host --catalogue-fd 4`), not in the host's
// environment, so that the daemon starts its first host before it validates: the host loads its
// modules (hundreds of ms) while the daemon validates (10 to 20 ms for ten definitions), and the
// host reads the handoff when it needs it. A file that does not validate is never handed: the
// daemon closes the pipe empty and exits 78. The sandbox's try goes with it once the daemon has
// made it: a host started after a crash or a reload gets bubblewrap's version, the first host null
// (the daemon tries the sandbox once that host said hello: daemon.ts). A host started alone
// validates the file and tries the sandbox itself.
import { readFd } from '../protocol/fd-reader.js';
import type { AgentDefinition, CatalogueConfig, CheckedCatalogue } from './catalogue-config.js';
import type { ConfigSource } from './config-file.js';
import { AgentLoadError } from './loader-error.js';

/** Far over any catalogue a person writes; a bound on what the host buffers all the same. */
const MAX_HANDOFF_BYTES = 16 * 1024 * 1024;

/** A definition without its source: the host's own (its environment), with the catalogue's text. */
type HandedDefinition = Omit<AgentDefinition, 'source'> & { definition?: string };

interface Handoff {
  catalogue: Omit<CatalogueConfig, 'definitions'>;
  definitions: HandedDefinition[];
  mechanism: string | null;
  /** The variables the catalogue's agents need beyond the host's allowlist (an API key, a guest's `pass_env`). */
  env: Record<string, string>;
}

/** What a host is handed: `checked`, and `env`, the values of the variables its agents need. */
export interface HandedCatalogue {
  checked: CheckedCatalogue;
  env: Record<string, string>;
}

/** The text the daemon writes on the host's catalogue descriptor. */
export function catalogueHandoff({ checked, env }: HandedCatalogue): string {
  const { definitions, ...catalogue } = checked.catalogue;
  const handoff: Handoff = {
    catalogue,
    definitions: [...definitions.values()].map(({ source, ...rest }) => ({ ...rest, ...(source.definition === undefined ? {} : { definition: source.definition }) })),
    mechanism: checked.mechanism,
    env,
  };
  return JSON.stringify(handoff);
}

/**
 * The catalogue the daemon wrote on `fd`, each definition reading its config through `source`
 * (the host's own file flag and environment). The pipe closed empty: the daemon found the file
 * invalid and is ending (exit 78). A daemon that died first closes it too.
 */
export async function readHandedCatalogue(fd: number, source: ConfigSource): Promise<HandedCatalogue> {
  const text = await readAll(fd);
  if (text === '') throw new AgentLoadError(`the daemon handed no catalogue on descriptor ${fd}: its agent config did not validate, or it ended`);
  // Written by this daemon's own code a moment ago (catalogueHandoff): trusted as its type.
  const handoff = JSON.parse(text) as Handoff;
  const definitions = new Map<string, AgentDefinition>(
    handoff.definitions.map(({ definition, ...rest }) => [rest.name, { ...rest, source: { ...source, text: handoff.catalogue.text, ...(definition === undefined ? {} : { definition }) } }]),
  );
  return { checked: { catalogue: { ...handoff.catalogue, definitions }, mechanism: handoff.mechanism }, env: handoff.env };
}

function readAll(fd: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    readFd(fd, {
      chunk: (chunk) => {
        bytes += chunk.length;
        // The reader reuses its buffer: each chunk is copied.
        if (bytes <= MAX_HANDOFF_BYTES) chunks.push(Buffer.from(chunk));
      },
      end: (error) => {
        if (error !== undefined) reject(new AgentLoadError(`cannot read the catalogue on descriptor ${fd}: ${error.message}`));
        else if (bytes > MAX_HANDOFF_BYTES) reject(new AgentLoadError(`the catalogue on descriptor ${fd} is over ${MAX_HANDOFF_BYTES} bytes`));
        else resolve(Buffer.concat(chunks).toString('utf8'));
      },
    });
  });
}
