// The Agent Card of each catalogue agent (PROTOCOL.md §7.3): what an A2A client reads before it
// calls, without a login. It names the agent, its one skill, the modes of §2.4, the edge's bearer
// token as its security, and the JSON-RPC interface at `/a2a/{agent}` in both versions served.
import { AgentCard } from '@a2a-js/sdk';
import type { AgentDefinition } from '../agents/catalogue-config.js';
import { packageVersion } from '../protocol/package-version.js';

/** The versions of A2A served (the SDK's compatibility layer takes 0.3's names). */
export const A2A_VERSIONS = ['1.0', '0.3'] as const;
const INPUT_MODES = ['text/plain', 'image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'application/json'];
const OUTPUT_MODES = ['text/plain'];

/** The card as the SDK's types hold it (what the request handler answers). */
export function agentCard(agent: Pick<AgentDefinition, 'name' | 'label' | 'description'>, origin: string): AgentCard {
  const url = `${origin}/a2a/${encodeURIComponent(agent.name)}`;
  return AgentCard.fromJSON({
    name: agent.label || agent.name,
    description: agent.description || `turnhost's agent ${agent.name}: its turns are durable, and outlive their caller`,
    supportedInterfaces: A2A_VERSIONS.map((protocolVersion) => ({ url, protocolBinding: 'JSONRPC', protocolVersion })),
    version: packageVersion(),
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: "turnhost's token (turnhost token), or a person's (turnhost user add)" } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: INPUT_MODES,
    defaultOutputModes: OUTPUT_MODES,
    skills: [{ id: agent.name, name: agent.label || agent.name, description: agent.description || `a turn of ${agent.name}`, tags: ['turnhost'] }],
  });
}

/** The card as served: A2A's JSON. */
export function agentCardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}
