// A prompt's files as the model agent sends them (PROTOCOL.md §2.4, AGENT.md §9's content point):
// with `vision: true`, images as `image_url` data URLs (the turn's own: earlier prompts' images go
// as their text form, not re-sent every turn); text files as text; anything else refused, naming
// the agent, as a guest that takes no images refuses one.
import { AgentFailure, type TurnContext } from '../agent.js';
import type { ContentBlock } from '../../protocol/content.js';
import type { ApiContentPart, ApiMessage } from './history.js';

/** Null for a prompt of text alone: it goes as its text. */
export async function promptMessage(turn: TurnContext, vision: boolean, agentName: string): Promise<ApiMessage | null> {
  if (turn.content.length === 0) return null;
  const parts: ApiContentPart[] = [];
  for (const block of turn.content) parts.push(await apiPart(turn, block, vision, agentName));
  return { role: 'user', content: parts };
}

const isText = (mimeType: string | undefined): boolean => mimeType !== undefined && (mimeType.startsWith('text/') || mimeType === 'application/json');

async function apiPart(turn: TurnContext, block: ContentBlock, vision: boolean, agentName: string): Promise<ApiContentPart> {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      if (!vision) throw new AgentFailure('invalid', `agent ${agentName} does not take images`);
      return { type: 'image_url', image_url: { url: `data:${block.mimeType};base64,${(await turn.blob(block.blob)).toString('base64')}` } };
    case 'audio':
      throw new AgentFailure('invalid', `agent ${agentName} does not take audio`);
    case 'resource_link':
      if (block.blob === undefined) return { type: 'text', text: `${block.name}: ${block.uri ?? ''}` };
      if (!isText(block.mimeType)) throw new AgentFailure('invalid', `agent ${agentName} does not take ${block.mimeType ?? 'this file'} (${block.name})`);
      return { type: 'text', text: `${block.name}:\n${(await turn.blob(block.blob)).toString('utf8')}` };
    case 'resource':
      return { type: 'text', text: `${block.resource.uri}:\n${block.resource.text}` };
  }
}
