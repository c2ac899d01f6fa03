// A turn's prompt as a guest takes it (PROTOCOL.md §2.4, AGENT.md §6): the blocks its
// `promptCapabilities` declare (an image as ACP's `image`, base64), and every other file written to
// `<cwd>/.turnhost/attachments/` and sent as a `resource_link` (every ACP agent takes those). An
// image or audio to a guest that declared it takes none is refused, naming the agent: sent as text
// it would "silently do nothing".
import type { ContentBlock as AcpBlock, PromptCapabilities } from '@agentclientprotocol/sdk';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AgentFailure, type TurnContext } from '../agent.js';
import { fileNameOf, type ContentBlock } from '../../protocol/content.js';

/** Where a guest finds the files of its prompts, inside its working folder. */
export const ATTACHMENTS_DIR = join('.turnhost', 'attachments');

export async function guestPrompt(turn: TurnContext, capabilities: PromptCapabilities | null | undefined, cwd: string, agentName: string): Promise<AcpBlock[]> {
  if (turn.content.length === 0) return [{ type: 'text', text: turn.prompt }];
  const blocks: AcpBlock[] = [];
  for (const block of turn.content) blocks.push(await guestBlock(turn, block, capabilities ?? {}, cwd, agentName));
  return blocks;
}

async function guestBlock(turn: TurnContext, block: ContentBlock, capabilities: PromptCapabilities, cwd: string, agentName: string): Promise<AcpBlock> {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
    case 'audio': {
      const takes = block.type === 'image' ? capabilities.image : capabilities.audio;
      if (takes !== true) throw new AgentFailure('invalid', `agent ${agentName} does not take ${block.type === 'image' ? 'images' : 'audio'}`);
      return { type: block.type, mimeType: block.mimeType, data: (await turn.blob(block.blob)).toString('base64') };
    }
    case 'resource_link':
      if (block.blob === undefined) return { type: 'resource_link', name: block.name, uri: block.uri ?? '', ...(block.mimeType === undefined ? {} : { mimeType: block.mimeType }) };
      return attached(cwd, block.name, await turn.blob(block.blob), block.mimeType);
    case 'resource':
      if (capabilities.embeddedContext === true) return { type: 'resource', resource: { uri: block.resource.uri, text: block.resource.text, ...(block.resource.mimeType === undefined ? {} : { mimeType: block.resource.mimeType }) } };
      return attached(cwd, fileNameOf(block.resource.uri), Buffer.from(block.resource.text), block.resource.mimeType);
  }
}

/**
 * The file in the attachments folder, and its link. A name a different file took already gets
 * the content's hash before it: an earlier prompt's file stays what that prompt sent.
 */
async function attached(cwd: string, name: string, bytes: Buffer, mimeType: string | undefined): Promise<AcpBlock> {
  const folder = join(cwd, ATTACHMENTS_DIR);
  await mkdir(folder, { recursive: true });
  let path = join(folder, name);
  const held = await readFile(path).catch(() => null);
  if (held !== null && !held.equals(bytes)) path = join(folder, `${createHash('sha256').update(bytes).digest('hex').slice(0, 12)}-${name}`);
  await writeFile(path, bytes);
  return { type: 'resource_link', name, uri: pathToFileURL(path).href, size: bytes.length, ...(mimeType === undefined ? {} : { mimeType }) };
}
