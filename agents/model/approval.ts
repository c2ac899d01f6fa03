// The approval policy (AGENT.md §2): the most specific list wins, deny over ask over allow over
// the default. `clarify` only asks the user a question, so it never needs approval.
import type { ApprovalConfig } from './config.js';
import { globList } from './glob.js';

export type Approval = 'allow' | 'ask' | 'deny';

export const CLARIFY_TOOL = 'clarify';

export function approvalPolicy(config: ApprovalConfig): (tool: string) => Approval {
  const deny = globList(config.deny);
  const ask = globList(config.ask);
  const allow = globList(config.allow);
  return (tool) => {
    if (tool === CLARIFY_TOOL) return 'allow';
    if (deny(tool)) return 'deny';
    if (ask(tool)) return 'ask';
    if (allow(tool)) return 'allow';
    return config.default;
  };
}
