// A session's header on the page: what it is (title, agent, model, lineage, spend) and what may
// be done to it (share, pin, archive, export, delete).
import { useState } from 'preact/hooks';
import type { UsageTotals } from '../protocol/usage.js';

/** Where a session was forked from, and the sessions forked from it (PROTOCOL.md §2.2). */
export interface ForkOrigin {
  session_id: string;
  turn_id: string | null;
}

export interface Lineage {
  forked_from: ForkOrigin | null;
  forks: ForkOrigin[];
}

export interface SessionLife {
  archived: boolean;
  pinned: boolean;
  /** An owner, an editor or an admin pins and archives; an owner or an admin deletes. */
  canMark: boolean;
  canDelete: boolean;
}

/** What a session's header shows and offers. */
export interface HeaderProps {
  sid: string;
  /** Its first prompt's first line; null before it has one (then the id names it). */
  title: string | null;
  /** Its agent (AGENT.md §8), shown with its model, and the models it may pick from. */
  agent: { name: string; label: string; model: string | null; models: string[] } | null;
  onModel(model: string): Promise<void>;
  lineage: Lineage | null;
  spent: UsageTotals | null;
  titleOf(sid: string): string;
  onOpen(sid: string): void;
  canShare: boolean;
  onShare(user: string, role: 'viewer' | 'editor'): Promise<void>;
  /** Pin, archive, export and delete (PROTOCOL.md §2.3), as the person may. */
  life: SessionLife | null;
  onMark(mark: 'pin' | 'unpin' | 'archive' | 'unarchive'): Promise<void>;
  onDelete(): Promise<void>;
}

/** The session's title and id, its agent and model, where it was forked, what it spent, and what may be done to it. */
export function SessionHeader(props: HeaderProps) {
  return (
    <div class="session-head">
      <h2>{props.title ?? props.sid}</h2>
      {props.title !== null && <small class="sid">{props.sid}</small>}
      {props.agent !== null && <AgentLine agent={props.agent} onModel={props.onModel} />}
      <LineageLinks lineage={props.lineage} titleOf={props.titleOf} onOpen={props.onOpen} />
      {props.spent !== null && props.spent.turns > 0 && <p class="spent">{spentText(props.spent)}</p>}
      {props.canShare && <ShareForm onShare={props.onShare} />}
      {props.life !== null && <LifeBar sid={props.sid} life={props.life} onMark={props.onMark} onDelete={props.onDelete} />}
    </div>
  );
}

/** A session's life in its header: pin, archive, export (a file of JSON lines), delete (asked first). */
function LifeBar({ sid, life, onMark, onDelete }: { sid: string; life: SessionLife; onMark(mark: 'pin' | 'unpin' | 'archive' | 'unarchive'): Promise<void>; onDelete(): Promise<void> }) {
  return (
    <p class="life">
      {life.canMark && (
        <>
          <button type="button" class="quiet" aria-pressed={life.pinned} onClick={() => void onMark(life.pinned ? 'unpin' : 'pin')}>
            {life.pinned ? 'Unpin' : 'Pin'}
          </button>
          <button type="button" class="quiet" onClick={() => void onMark(life.archived ? 'unarchive' : 'archive')}>
            {life.archived ? 'Unarchive' : 'Archive'}
          </button>
        </>
      )}
      <a class="quiet" href={`/v1/sessions/${encodeURIComponent(sid)}/export`} download={`${sid}.jsonl`}>
        Export
      </a>
      {life.canDelete && (
        <button type="button" class="quiet danger" onClick={() => void onDelete()}>
          Delete
        </button>
      )}
    </p>
  );
}

/** A session's agent and model in its header; an agent with models offers them (`slash.model`). */
function AgentLine({ agent, onModel }: { agent: { label: string; model: string | null; models: string[] }; onModel(model: string): Promise<void> }) {
  return (
    <p class="agent">
      {agent.label}
      {agent.models.length > 1 ? (
        <select aria-label="Model" value={agent.model ?? agent.models[0]} onChange={(e) => void onModel((e.target as HTMLSelectElement).value)}>
          {agent.models.map((model) => (
            <option key={model} value={model}>
              {model}
            </option>
          ))}
        </select>
      ) : (
        (agent.model ?? agent.models[0]) !== undefined && <span> · {agent.model ?? agent.models[0]}</span>
      )}
    </p>
  );
}

/** A session's total spend, on one line under its title. */
function spentText(total: UsageTotals): string {
  const turns = `${total.turns} turn${total.turns === 1 ? '' : 's'}`;
  return `Spent: ${(total.prompt_tokens + total.completion_tokens).toLocaleString('en')} tokens (${total.prompt_tokens.toLocaleString('en')} prompt, ${total.completion_tokens.toLocaleString('en')} completion) in ${turns}`;
}

/** "Forked from" one way, "Forks" the other (PROTOCOL.md §2.2), each a link to that session. */
function LineageLinks({ lineage, titleOf, onOpen }: { lineage: Lineage | null; titleOf(sid: string): string; onOpen(sid: string): void }) {
  if (lineage === null || (lineage.forked_from === null && lineage.forks.length === 0)) return null;
  const link = (sid: string) => (
    <a
      href={`#${encodeURIComponent(sid)}`}
      onClick={(e) => {
        e.preventDefault();
        onOpen(sid);
      }}
    >
      {titleOf(sid)}
    </a>
  );
  return (
    <p class="lineage">
      {lineage.forked_from !== null && <span>Forked from {link(lineage.forked_from.session_id)}</span>}
      {lineage.forks.length > 0 && (
        <span>
          Forks:{' '}
          {lineage.forks.map((fork, i) => (
            <span key={fork.session_id}>
              {i > 0 && ', '}
              {link(fork.session_id)}
            </span>
          ))}
        </span>
      )}
    </p>
  );
}

/** The owner's (or an admin's) "Share": a user's name and what they may do. */
function ShareForm({ onShare }: { onShare: HeaderProps['onShare'] }) {
  const [open, setOpen] = useState(false);
  const [user, setUser] = useState('');
  const [role, setRole] = useState<'viewer' | 'editor'>('viewer');
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Share
      </button>
    );
  }
  return (
    <form
      aria-label="Share"
      class="share"
      onSubmit={(e) => {
        e.preventDefault();
        if (user.trim() !== '') void onShare(user.trim(), role).then(() => setOpen(false));
      }}
    >
      <input aria-label="User" value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} />
      <select aria-label="Role" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as 'viewer' | 'editor')}>
        <option value="viewer">viewer</option>
        <option value="editor">editor</option>
      </select>
      <button type="submit">Share</button>
    </form>
  );
}
