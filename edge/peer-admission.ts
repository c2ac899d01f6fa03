// The owner's side of a node's link (PROTOCOL.md §6.2, protocol/peer-handshake.ts): a WebSocket
// upgraded with `x-turnhost-peer` is served only once the node that opened it has answered this
// node's challenge, after this node answered its own. Until then it costs what any connection
// waiting to log in costs, and is bounded the same way (the edge counts it).
import type { RawData, WebSocket } from 'ws';
import type { Cluster } from '../actors/daemon/peer-links.js';
import {
  challengeFrame,
  freshNonce,
  ownerProof,
  parseHello,
  parseProof,
  PEER_WELCOME,
  peerProof,
  sameProof,
} from '../protocol/peer-handshake.js';

/** Resolves true once the peer proved it holds the cluster secret (its link is then served), false when it did not. */
export function admitPeer(ws: WebSocket, cluster: Cluster, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let step: 'hello' | 'proof' = 'hello';
    let expected = '';
    const done = (admitted: boolean): void => {
      clearTimeout(timer);
      ws.off('message', onMessage);
      resolve(admitted);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    const onMessage = (data: RawData, isBinary: boolean): void => {
      const text = isBinary ? '' : data.toString();
      if (step === 'proof') {
        const proof = parseProof(text);
        if (proof === null || !sameProof(proof, expected)) return done(false);
        ws.send(PEER_WELCOME);
        return done(true);
      }
      const hello = parseHello(text);
      if (hello === null) return done(false);
      step = 'proof';
      void cluster.secret().then((secret) => {
        if (secret === null) return done(false);
        const nonce = freshNonce();
        expected = peerProof(secret, hello.node_id, cluster.nodeId, nonce, hello.nonce);
        ws.send(challengeFrame({ node_id: cluster.nodeId, nonce, proof: ownerProof(secret, cluster.nodeId, hello.node_id, hello.nonce, nonce) }));
      }, () => done(false));
    };
    ws.on('message', onMessage);
    ws.once('close', () => done(false));
  });
}
