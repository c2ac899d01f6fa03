// How two nodes prove to each other that they hold the cluster secret without sending it
// (PROTOCOL.md §6.2), as Kerberos-style challenge and response, both ways. The node that opens a
// link (the peer) upgrades to the owner's `/v1/rpc` with the header `x-turnhost-peer: <its id>`,
// then, as the link's first frames:
//
//   peer  → owner  {"peer_hello": {"node_id": P, "nonce": nP}}
//   owner → peer   {"peer_challenge": {"node_id": O, "nonce": nO, "proof": MAC(owner, O, P, nP, nO)}}
//   peer  → owner  {"peer_proof": MAC(peer, P, O, nO, nP)}
//   owner → peer   {"peer_welcome": true}
//
// MAC is HMAC-SHA256 under the secret of the parts, with the role first. The peer checks the
// owner's proof (over its own fresh nonce, naming the node it meant to reach) before it sends
// anything of a client's; the owner checks the peer's before it serves the link. A process that
// took a dead node's port learns two nonces and no secret, and nothing it can replay: every proof
// covers a nonce its checker just drew, and the two roles' proofs are not interchangeable. (On a
// network an attacker can sit inside of, the link still wants TLS: `--advertise https://…`.)
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The upgrade header that asks for a node's link instead of a client's. */
export const PEER_HEADER = 'x-turnhost-peer';
export const PEER_WELCOME = '{"peer_welcome":true}';
/** A handshake frame is small: anything longer is refused before it is parsed. */
export const MAX_HANDSHAKE_FRAME_BYTES = 4096;

export interface PeerHello {
  node_id: string;
  nonce: string;
}

export interface PeerChallenge {
  node_id: string;
  nonce: string;
  proof: string;
}

/** 32 random bytes, base64url: drawn afresh for every handshake. */
export function freshNonce(): string {
  return randomBytes(32).toString('base64url');
}

/** What the owner shows: that it holds the secret, is `owner`, and answers the peer's nonce. */
export function ownerProof(secret: string, owner: string, peer: string, peerNonce: string, ownerNonce: string): string {
  return mac(secret, ['owner', owner, peer, peerNonce, ownerNonce]);
}

/** What the peer shows: that it holds the secret, is `peer`, and answers the owner's nonce. */
export function peerProof(secret: string, peer: string, owner: string, ownerNonce: string, peerNonce: string): string {
  return mac(secret, ['peer', peer, owner, ownerNonce, peerNonce]);
}

/** Compares two proofs in constant time. */
export function sameProof(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function helloFrame(hello: PeerHello): string {
  return JSON.stringify({ peer_hello: hello });
}

export function challengeFrame(challenge: PeerChallenge): string {
  return JSON.stringify({ peer_challenge: challenge });
}

export function proofFrame(proof: string): string {
  return JSON.stringify({ peer_proof: proof });
}

export function parseHello(text: string): PeerHello | null {
  const hello = field(text, 'peer_hello');
  return hello !== null && isWord(hello['node_id']) && isWord(hello['nonce']) ? { node_id: hello['node_id'], nonce: hello['nonce'] } : null;
}

export function parseChallenge(text: string): PeerChallenge | null {
  const c = field(text, 'peer_challenge');
  return c !== null && isWord(c['node_id']) && isWord(c['nonce']) && isWord(c['proof']) ? { node_id: c['node_id'], nonce: c['nonce'], proof: c['proof'] } : null;
}

export function parseProof(text: string): string | null {
  if (text.length > MAX_HANDSHAKE_FRAME_BYTES) return null;
  try {
    const value = (JSON.parse(text) as { peer_proof?: unknown } | null)?.peer_proof;
    return isWord(value) ? value : null;
  } catch {
    return null;
  }
}

function mac(secret: string, parts: string[]): string {
  return createHmac('sha256', secret).update(JSON.stringify(['turnhost peer link', ...parts])).digest('base64url');
}

function field(text: string, name: string): Record<string, unknown> | null {
  if (text.length > MAX_HANDSHAKE_FRAME_BYTES) return null;
  try {
    const value = (JSON.parse(text) as Record<string, unknown> | null)?.[name];
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function isWord(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= 512;
}
