// A prompt's files (PROTOCOL.md §2.4): `blob.put` stores bytes before a prompt names them,
// `blob.get` reads one back, and a prompt's `content` is checked whole, then its new bytes stored
// and every blob named for the session, before the prompt goes to the host: a refusal names the
// block and leaves nothing stored, and the host gets references, never bytes.
import type { BlobInfo, Blobs } from '../../../persistence/blobs.js';
import {
  beyondText,
  blobHex,
  checkedBytes,
  ContentRefused,
  decodeBytes,
  incomingContent,
  isBlobRef,
  optionalName,
  storedBlock,
  textForm,
  type ContentBlock,
  type NewBytes,
} from '../../../protocol/content.js';
import { ErrorCodes, RpcError } from '../../../protocol/client-rpc.js';
import { FieldError, type Fields } from '../../../protocol/fields.js';
import type { ClientContext } from '../client-context.js';
import type { MethodTable } from './method-table.js';
import { openSide } from './stored-sessions.js';

/** A prompt as the host gets it: its text form, and its blocks when it carries more than text. */
export interface PromptContent {
  text: string;
  content?: ContentBlock[];
}

const infoOf = (bytes: NewBytes): BlobInfo => ({ sha256: bytes.sha256, mimeType: bytes.mimeType, size: bytes.bytes.length, name: bytes.name ?? null });

/**
 * `text`, `content` or both (the text first): checked, stored and named, or refused with nothing
 * stored. A blob named by reference must be one this session names already, or one this person uploaded.
 */
export async function promptContent(ctx: ClientContext, sid: string, p: Fields): Promise<PromptContent> {
  const text = p.raw('text');
  if (text !== undefined && typeof text !== 'string') throw new FieldError('text must be a string');
  if (!p.has('content')) {
    if (typeof text !== 'string') throw new FieldError('text must be a string');
    return { text };
  }
  const incoming = incomingContent(p.raw('content'), ctx.contentBounds);
  const blobs = (await openSide(ctx)).blobs;
  const known = await Promise.all(incoming.map((block, index) => (block.kind === 'block' ? referenced(blobs, ctx, sid, block.block, index) : null)));
  const blocks: ContentBlock[] = incoming.map((block, index) => (block.kind === 'bytes' ? storedBlock(block.bytes) : known[index]!));
  const total = blocks.reduce((sum, b) => sum + ('size' in b ? (b.size ?? 0) : 0), 0);
  if (total > ctx.contentBounds.maxPromptBytes) throw new ContentRefused(413, `content: the prompt's files are over --max-prompt-mib (${ctx.contentBounds.maxPromptBytes / 1024 / 1024} MiB)`);
  // Every check passed: the bytes are stored, then named, before the host hears of the prompt.
  for (const block of incoming) if (block.kind === 'bytes') await blobs.put(infoOf(block.bytes), block.bytes.bytes, ctx.identity.user);
  for (const block of blocks) if ('blob' in block && block.blob !== undefined) await blobs.name(sid, { sha256: blobHex(block.blob), mimeType: block.mimeType ?? 'application/octet-stream', size: block.size ?? 0, name: 'name' in block ? (block.name ?? null) : null });
  const all = typeof text === 'string' && text !== '' ? [{ type: 'text' as const, text }, ...blocks] : blocks;
  return beyondText(all) ? { text: textForm(all), content: all } : { text: textForm(all) };
}

/** A block that names a blob, as the store knows it (its size and type); others as they came. */
async function referenced(blobs: Blobs, ctx: ClientContext, sid: string, block: ContentBlock, index: number): Promise<ContentBlock> {
  if (!('blob' in block) || block.blob === undefined) return block;
  const hex = blobHex(block.blob);
  const info = (await blobs.named(sid, hex)) ?? (await blobs.uploaded(hex, ctx.identity.user));
  if (info === null) throw new ContentRefused(400, `content[${index}]: ${block.blob} is not a blob this session may read`);
  if (block.type === 'image' && !info.mimeType.startsWith('image/')) throw new ContentRefused(400, `content[${index}]: ${block.blob} is ${info.mimeType}, not an image`);
  // A block that names no file takes the name it was uploaded under: the page shows an image by it.
  const name = 'name' in block && block.name !== undefined ? {} : info.name === null ? {} : { name: info.name };
  return { ...block, mimeType: info.mimeType, size: info.size, ...name } as ContentBlock;
}

/** Bytes put by a client (blob.put, or the edge's upload), stored, and named for `sid` when given. */
export async function putBlob(ctx: ClientContext, bytes: Buffer, mimeType: unknown, name: string | undefined, sid: string | null): Promise<{ blob: string; size: number; mimeType: string }> {
  const checked = checkedBytes('resource_link', mimeType, bytes, 'data', ctx.contentBounds, name);
  const blobs = (await openSide(ctx)).blobs;
  if (sid !== null) await ctx.access.check(ctx.identity, 'prompt.submit', sid);
  await blobs.put(infoOf(checked), bytes, ctx.identity.user);
  if (sid !== null) await blobs.name(sid, infoOf(checked));
  return { blob: `sha256:${checked.sha256}`, size: bytes.length, mimeType: checked.mimeType };
}

/** The blob as `sid` names it, with its bytes; the same refusal whether it exists elsewhere or not. */
export async function readBlob(ctx: ClientContext, sid: string, ref: string): Promise<{ info: BlobInfo; bytes: Buffer }> {
  const missing = new RpcError(ErrorCodes.invalidParams, `invalid params: session ${sid} names no blob ${ref}`);
  if (!isBlobRef(ref)) throw missing;
  const blobs = (await openSide(ctx)).blobs;
  const info = await blobs.named(sid, blobHex(ref));
  const bytes = info === null ? null : await blobs.bytes(info.sha256);
  if (info === null || bytes === null) throw missing;
  return { info, bytes };
}

/** The methods of a prompt's files. */
export const CONTENT_METHODS: MethodTable = {
  async 'blob.put'(p, ctx) {
    const name = optionalName(p.raw('name'), 'name');
    const sid = p.optionalIdentifier('session_id') ?? null;
    return putBlob(ctx, decodeBytes(p.raw('data'), 'data', ctx.contentBounds), p.raw('mimeType'), name, sid);
  },

  async 'blob.get'(p, ctx) {
    const { info, bytes } = await readBlob(ctx, p.identifier('session_id'), p.requiredString('blob'));
    return { blob: `sha256:${info.sha256}`, mimeType: info.mimeType, size: info.size, ...(info.name === null ? {} : { name: info.name }), data: bytes.toString('base64') };
  },
};
