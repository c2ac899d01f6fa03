// Content beyond text (PROTOCOL.md §2.4): a prompt's blocks in ACP's shape. A request may carry
// bytes (`data`, base64); what turnhost stores and sends back names them by `blob: "sha256:<hex>"`.
// This file reads a request's blocks once, at the door, and refuses what may not come in, naming the
// block: bytes over a bound, a type not taken, base64 that does not decode, bytes that contradict
// their type, a `file:` URI. Which blobs a session may name is the store's to say (the daemon asks).
import { createHash } from 'node:crypto';
import { ErrorCodes, RpcError } from './client-rpc.js';
import { isRecord, type UnknownRecord } from './fields.js';
import type { BlobRef, ContentBlock, DiffPart, MessagePart } from './message-parts.js';

export type { BlobRef, ContentBlock, DiffPart, MessagePart, TerminalPart } from './message-parts.js';

const BLOB_REF = /^sha256:[0-9a-f]{64}$/;

/** A diff's old and new texts together past this are not kept: its path is (a frame stays small). */
export const DIFF_TEXT_MAX = 512 * 1024;
/** A terminal's output kept with its tool call: the newest this many characters. */
export const TERMINAL_OUTPUT_MAX = 64 * 1024;

/** A block whose bytes came with the request: stored, then named by its blob (a ContentBlock). */
export interface NewBytes {
  type: 'image' | 'audio' | 'resource_link';
  mimeType: string;
  name?: string;
  bytes: Buffer;
  /** Hex, without the `sha256:` prefix. */
  sha256: string;
}

/** A request's block: either as stored already, or bytes to store first. */
export type IncomingBlock = { kind: 'block'; block: ContentBlock } | { kind: 'bytes'; bytes: NewBytes };

/** What `--max-blob-mib`, `--max-prompt-mib` and `--blob-types` allow. */
export interface ContentBounds {
  maxBlobBytes: number;
  maxPromptBytes: number;
  /** MIME types (`image/png`) and families (`image/*`). */
  types: readonly string[];
}

export const DEFAULT_BLOB_TYPES: readonly string[] = ['image/*', 'application/pdf', 'text/*', 'application/json', 'audio/*'];
export const DEFAULT_CONTENT_BOUNDS: ContentBounds = { maxBlobBytes: 20 * 1024 * 1024, maxPromptBytes: 50 * 1024 * 1024, types: DEFAULT_BLOB_TYPES };

/** A refusal at the door: -32602, and the HTTP status the edge answers it with (400, 413, 415). */
export class ContentRefused extends RpcError {
  constructor(
    readonly httpStatus: 400 | 413 | 415,
    message: string,
  ) {
    super(ErrorCodes.invalidParams, `invalid params: ${message}`);
  }
}

const refuse = (status: 400 | 413 | 415, where: string, what: string): ContentRefused => new ContentRefused(status, `${where}: ${what}`);

/** `image/PNG; charset=x` is `image/png`. */
export function bareMimeType(value: string): string {
  return value.split(';')[0]!.trim().toLowerCase();
}

export function typeAllowed(mimeType: string, types: readonly string[]): boolean {
  const family = `${mimeType.split('/')[0]}/*`;
  return types.includes(mimeType) || types.includes(family);
}

/** The types whose first bytes say what they are; bytes that say otherwise are refused. */
const MAGIC: Readonly<Record<string, (b: Buffer) => boolean>> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/gif': (b) => ['GIF87a', 'GIF89a'].includes(b.subarray(0, 6).toString('latin1')),
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  'application/pdf': (b) => b.subarray(0, 5).toString('latin1') === '%PDF-',
};

/** Null when the bytes may be what they claim; else why not. */
export function contradiction(mimeType: string, bytes: Buffer): string | null {
  const matches = MAGIC[mimeType];
  return matches === undefined || matches(bytes) ? null : `the bytes are not ${mimeType}`;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Bytes at the door, each bound checked before they are decoded (base64 is 4/3 of them). */
export function decodeBytes(data: unknown, where: string, bounds: ContentBounds): Buffer {
  if (typeof data !== 'string') throw refuse(400, where, 'data must be base64 text');
  const text = data.replace(/\s+/g, '');
  if (Math.floor((text.length * 3) / 4) > bounds.maxBlobBytes + 2) throw refuse(413, where, `over --max-blob-mib (${bounds.maxBlobBytes / 1024 / 1024} MiB)`);
  if (text.length % 4 !== 0 || !BASE64.test(text)) throw refuse(400, where, 'data is not valid base64');
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length > bounds.maxBlobBytes) throw refuse(413, where, `over --max-blob-mib (${bounds.maxBlobBytes / 1024 / 1024} MiB)`);
  return bytes;
}

/** Bytes of a type, checked against the type list and their magic; a blob ready to store. */
export function checkedBytes(type: NewBytes['type'], mimeTypeGiven: unknown, bytes: Buffer, where: string, bounds: ContentBounds, name?: string): NewBytes {
  if (typeof mimeTypeGiven !== 'string' || mimeTypeGiven.trim() === '') throw refuse(400, where, 'mimeType required');
  const mimeType = bareMimeType(mimeTypeGiven);
  if (!typeAllowed(mimeType, bounds.types)) throw refuse(415, where, `the type ${mimeType} is not taken (--blob-types: ${bounds.types.join(', ')})`);
  if (type === 'image' && !mimeType.startsWith('image/')) throw refuse(400, where, `an image's mimeType must be image/*, not ${mimeType}`);
  if (type === 'audio' && !mimeType.startsWith('audio/')) throw refuse(400, where, `an audio block's mimeType must be audio/*, not ${mimeType}`);
  const wrong = contradiction(mimeType, bytes);
  if (wrong !== null) throw refuse(400, where, wrong);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  return { type, mimeType, bytes, sha256, ...(name === undefined ? {} : { name }) };
}

/** A URI turnhost may pass on: never a file on this machine. It is never opened or fetched. */
function checkedUri(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw refuse(400, where, 'uri must be a non-empty string');
  if (/^file:/i.test(value.trim())) throw refuse(400, where, 'a file: URI is refused (turnhost never opens a URI it is given: send the bytes)');
  return value;
}

/** `sha256:` and 64 lowercase hex digits. */
export function isBlobRef(value: unknown): value is BlobRef {
  return typeof value === 'string' && BLOB_REF.test(value);
}

function checkedRef(value: unknown, where: string): BlobRef {
  if (!isBlobRef(value)) throw refuse(400, where, 'blob must be "sha256:" and 64 lowercase hex digits');
  return value;
}

export const optionalName = (value: unknown, where: string): string | undefined => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '' || value === '.' || value === '..' || value.length > 255 || /[/\\\u0000-\u001f]/.test(value)) throw refuse(400, where, 'name must be a file name (1 to 255 characters, no slash or control character)');
  return value;
};

/** One block of a request, by its index. */
function incomingBlock(value: unknown, index: number, bounds: ContentBounds): IncomingBlock {
  const where = `content[${index}]`;
  if (!isRecord(value)) throw refuse(400, where, 'a block must be an object');
  const block = value as UnknownRecord;
  switch (block['type']) {
    case 'text':
      if (typeof block['text'] !== 'string') throw refuse(400, where, 'text must be a string');
      return { kind: 'block', block: { type: 'text', text: block['text'] } };
    case 'image':
    case 'audio':
      return mediaBlock(block['type'], block, where, bounds);
    case 'resource_link':
      return linkBlock(block, where, bounds);
    case 'resource':
      return embeddedResource(block, where, bounds);
    default:
      throw refuse(400, where, 'type must be one of text, image, audio, resource, resource_link');
  }
}

function mediaBlock(type: 'image' | 'audio', block: UnknownRecord, where: string, bounds: ContentBounds): IncomingBlock {
  const name = optionalName(block['name'], where);
  if (block['data'] !== undefined) return { kind: 'bytes', bytes: checkedBytes(type, block['mimeType'], decodeBytes(block['data'], where, bounds), where, bounds, name) };
  if (block['blob'] !== undefined) {
    if (typeof block['mimeType'] !== 'string') throw refuse(400, where, 'mimeType required');
    return { kind: 'block', block: { type, mimeType: bareMimeType(block['mimeType']), blob: checkedRef(block['blob'], where), size: 0, ...(name === undefined ? {} : { name }) } };
  }
  if (block['uri'] !== undefined) {
    // A link to an image is passed on as a link: turnhost never fetches it.
    const uri = checkedUri(block['uri'], where);
    const mimeType = typeof block['mimeType'] === 'string' ? { mimeType: bareMimeType(block['mimeType']) } : {};
    return { kind: 'block', block: { type: 'resource_link', uri, name: name ?? uri.split('/').pop() ?? uri, ...mimeType } };
  }
  throw refuse(400, where, `an ${type} block needs data, blob or uri`);
}

function linkBlock(block: UnknownRecord, where: string, bounds: ContentBounds): IncomingBlock {
  const name = optionalName(block['name'], where);
  if (name === undefined) throw refuse(400, where, 'name required');
  if (block['data'] !== undefined) return { kind: 'bytes', bytes: checkedBytes('resource_link', block['mimeType'], decodeBytes(block['data'], where, bounds), where, bounds, name) };
  const mimeType = typeof block['mimeType'] === 'string' ? { mimeType: bareMimeType(block['mimeType']) } : {};
  if (block['blob'] !== undefined) return { kind: 'block', block: { type: 'resource_link', name, blob: checkedRef(block['blob'], where), size: 0, ...mimeType } };
  return { kind: 'block', block: { type: 'resource_link', name, uri: checkedUri(block['uri'], where), ...mimeType } };
}

/** The last part of a URI as a file's name that stays inside a folder. */
export function fileNameOf(uri: string): string {
  const last = uri.split(/[/\\]/).pop() ?? '';
  return last === '' || last === '.' || last === '..' ? 'file' : last;
}

/** ACP's embedded resource: text stays inline; `blob` (base64, as ACP means it) is stored as a file. */
function embeddedResource(block: UnknownRecord, where: string, bounds: ContentBounds): IncomingBlock {
  const resource = block['resource'];
  if (!isRecord(resource)) throw refuse(400, where, 'resource must be an object');
  const uri = checkedUri(resource['uri'], where);
  const mimeType = typeof resource['mimeType'] === 'string' ? bareMimeType(resource['mimeType']) : undefined;
  if (typeof resource['text'] === 'string') {
    return { kind: 'block', block: { type: 'resource', resource: { uri, text: resource['text'], ...(mimeType === undefined ? {} : { mimeType }) } } };
  }
  const name = fileNameOf(uri);
  return { kind: 'bytes', bytes: checkedBytes('resource_link', mimeType ?? 'application/octet-stream', decodeBytes(resource['blob'], where, bounds), where, bounds, name) };
}

/**
 * A request's `content`, each block checked, and the prompt's bytes bounded as a whole. Blobs named
 * by reference are checked against the session later (they carry size 0 until then).
 */
export function incomingContent(value: unknown, bounds: ContentBounds): IncomingBlock[] {
  if (!Array.isArray(value)) throw refuse(400, 'content', 'must be an array of blocks');
  if (value.length === 0) throw refuse(400, 'content', 'must hold at least one block');
  const blocks = value.map((block, index) => incomingBlock(block, index, bounds));
  const total = blocks.reduce((sum, b) => sum + (b.kind === 'bytes' ? b.bytes.bytes.length : 0), 0);
  if (total > bounds.maxPromptBytes) throw refuse(413, 'content', `the prompt's files are over --max-prompt-mib (${bounds.maxPromptBytes / 1024 / 1024} MiB)`);
  return blocks;
}

/** The stored block for bytes once stored. */
export function storedBlock(bytes: NewBytes): ContentBlock {
  const blob = `sha256:${bytes.sha256}`;
  const size = bytes.bytes.length;
  if (bytes.type === 'resource_link') return { type: 'resource_link', name: bytes.name ?? `${bytes.sha256.slice(0, 12)}`, mimeType: bytes.mimeType, blob, size };
  return { type: bytes.type, mimeType: bytes.mimeType, blob, size, ...(bytes.name === undefined ? {} : { name: bytes.name }) };
}

/** Whether blocks say more than their text: a prompt of text blocks alone is stored as text. */
export function beyondText(blocks: readonly ContentBlock[]): boolean {
  return blocks.some((b) => b.type !== 'text');
}

/** One block as a line of text, for what reads text only (old clients, the script agent, titles). */
export function describeBlock(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType} ${block.size} bytes ${block.blob}]`;
    case 'resource_link':
      return block.blob === undefined ? `[link ${block.name} ${block.uri ?? ''}]` : `[file ${block.name} ${block.mimeType ?? 'application/octet-stream'} ${block.size ?? 0} bytes ${block.blob}]`;
    case 'resource':
      return `[resource ${block.resource.uri}]\n${block.resource.text}`;
  }
}

/** A prompt's text form: what `content` holds beside `parts`, and what text-only agents get. */
export function textForm(blocks: readonly ContentBlock[]): string {
  return blocks.map(describeBlock).join('\n');
}

/** The hex of a blob reference. */
export function blobHex(ref: BlobRef): string {
  return ref.slice('sha256:'.length);
}

/** A diff as kept: its texts, or its path alone when they are too large to carry. */
export function keptDiff(path: string, oldText: string | null, newText: string): DiffPart {
  if ((oldText?.length ?? 0) + newText.length > DIFF_TEXT_MAX) return { type: 'diff', path, oldText: null, newText: '', truncated: true };
  return { type: 'diff', path, oldText, newText };
}

/** A part as a line of text: what `content` and `summary` carry for clients that read text. */
export function describePart(part: MessagePart): string {
  if (part.type === 'diff') return `[diff ${part.path}]`;
  if (part.type === 'terminal') return part.output === undefined ? `[terminal ${part.terminalId}]` : part.output;
  return describeBlock(part);
}

/**
 * A message's parts as they came from another process or an agent: each checked, what is not a
 * part dropped (an agent is user code; a frame may not be ours).
 */
export function checkedParts(value: unknown): MessagePart[] {
  if (!Array.isArray(value)) return [];
  const parts: MessagePart[] = [];
  for (const raw of value) {
    if (!isRecord(raw)) continue;
    if (raw['type'] === 'diff' && typeof raw['path'] === 'string' && typeof raw['newText'] === 'string' && (raw['oldText'] === null || typeof raw['oldText'] === 'string')) {
      parts.push(raw['truncated'] === true ? { type: 'diff', path: raw['path'], oldText: null, newText: '', truncated: true } : keptDiff(raw['path'], raw['oldText'] as string | null, raw['newText']));
    } else if (raw['type'] === 'terminal' && typeof raw['terminalId'] === 'string') {
      parts.push({
        type: 'terminal',
        terminalId: raw['terminalId'],
        ...(typeof raw['command'] === 'string' ? { command: raw['command'] } : {}),
        ...(typeof raw['output'] === 'string' ? { output: raw['output'].slice(-TERMINAL_OUTPUT_MAX) } : {}),
        ...(raw['exitCode'] === null || Number.isSafeInteger(raw['exitCode']) ? { exitCode: raw['exitCode'] as number | null } : {}),
      });
    } else {
      try {
        parts.push(...storedBlocks([raw]));
      } catch {
        // not a part: dropped
      }
    }
  }
  return parts;
}

/**
 * Stored blocks as another process sent them (the daemon to the host, a row read back): the shape
 * checked once more, so a frame that is not ours fails here and not inside an agent.
 */
export function storedBlocks(value: unknown): ContentBlock[] {
  if (!Array.isArray(value)) throw new TypeError('content must be an array');
  return value.map((raw, index) => {
    if (!isRecord(raw)) throw new TypeError(`content[${index}] must be an object`);
    const type = raw['type'];
    const ok =
      (type === 'text' && typeof raw['text'] === 'string') ||
      ((type === 'image' || type === 'audio') && typeof raw['mimeType'] === 'string' && isBlobRef(raw['blob']) && typeof raw['size'] === 'number') ||
      (type === 'resource_link' && typeof raw['name'] === 'string' && (raw['blob'] === undefined || isBlobRef(raw['blob']))) ||
      (type === 'resource' && isRecord(raw['resource']) && typeof raw['resource']['uri'] === 'string' && typeof raw['resource']['text'] === 'string');
    if (!ok) throw new TypeError(`content[${index}] is not a stored content block`);
    return raw as ContentBlock;
  });
}
