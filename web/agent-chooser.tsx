// "New session" with several agents (AGENT.md §8): the catalogue as `agents.list` gives it, and the
// form that chooses one.
import { useState } from 'preact/hooks';

/** One agent a session may be made with, as `agents.list` shows it (AGENT.md §8). */
export interface AgentItem {
  name: string;
  label: string;
  description: string;
  models?: string[];
}

export interface Catalogue {
  default: string;
  agents: AgentItem[];
}

/**
 * "New session" with several agents (AGENT.md §8): each with its label and what it is for, the
 * default chosen; Create makes the session with the one chosen.
 */
export function AgentChooser({ catalogue, onChoose }: { catalogue: Catalogue; onChoose(agent: string): void }) {
  const [agent, setAgent] = useState(catalogue.default);
  return (
    <form
      class="agent-chooser"
      aria-label="Agent of the new session"
      onSubmit={(e) => {
        e.preventDefault();
        onChoose(agent);
      }}
    >
      <fieldset>
        <legend>Agent</legend>
        {catalogue.agents.map((a) => (
          <div key={a.name} class="choice">
            <label>
              <input type="radio" name="agent" value={a.name} checked={a.name === agent} onChange={() => setAgent(a.name)} aria-describedby={`agent-${a.name}`} />
              <span>{a.label}</span>
            </label>
            {a.description !== '' && <small id={`agent-${a.name}`}>{a.description}</small>}
          </div>
        ))}
      </fieldset>
      <button type="submit" class="primary">
        Create
      </button>
    </form>
  );
}
