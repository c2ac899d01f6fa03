// The approval policy (AGENT.md §2): the most specific list wins, deny over ask over allow over
// the default. `clarify` only asks the user a question, so it never needs approval. A glob that
// names a configured server by its prefix (`mcp_fs_*`) matches that server's tools only: the
// folded name alone must never let a rule written for one server approve another's tools.
import type { ApprovalConfig } from './config.js';
import { globList } from './glob.js';
import { serverNamedBy } from './mcp-names.js';

export type Approval = 'allow' | 'ask' | 'deny';

export const CLARIFY_TOOL = 'clarify';

/** A tool as the policy sees it: its offered name, and the MCP server it comes from (none for clarify). */
export interface PolicyTool {
  name: string;
  server?: string;
}

export type Policy = (tool: PolicyTool) => Approval;

export function approvalPolicy(config: ApprovalConfig, servers: readonly string[]): Policy {
  const deny = ruleList(config.deny, servers);
  const ask = ruleList(config.ask, servers);
  const allow = ruleList(config.allow, servers);
  return (tool) => {
    if (tool.name === CLARIFY_TOOL && tool.server === undefined) return 'allow';
    if (deny(tool)) return 'deny';
    if (ask(tool)) return 'ask';
    if (allow(tool)) return 'allow';
    return config.default;
  };
}

function ruleList(globs: readonly string[], servers: readonly string[]): (tool: PolicyTool) => boolean {
  const rules = globs.map((glob) => ({ matches: globList([glob]), server: serverNamedBy(glob, servers) }));
  return (tool) => rules.some((rule) => (rule.server === undefined || rule.server === tool.server) && rule.matches(tool.name));
}
