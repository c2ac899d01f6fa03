// `npm run bench -- people`: what knowing who asks costs (PROTOCOL.md §5.6). The same read (a
// session's history) through one daemon's edge as the home's owner (the one token of before), as a
// member with a personal token, and as a member with a JWT whose key is cached: per REST request
// (each request authenticated anew, on a kept-alive connection), and per WebSocket message (one
// connection each, authenticated once; each of a member's messages is checked against their role
// in the session). Interleaved rounds, medians; the owner is the floor.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { WebSocket } from 'ws';
import { readToken } from '../edge/http-token.js';
import { CLI, median, printTable, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { quantile } from './driver.js';

const WARMUP = 300;
const CALLS = 3000;
/** PROTOCOL.md §5.6's bound on what a member's WebSocket message may cost over the owner's, at p50. */
const WS_P50_BUDGET_MS = 0.1;

type Who = 'owner token' | 'personal token' | 'JWT (cached key)';
const WHO: readonly Who[] = ['owner token', 'personal token', 'JWT (cached key)'];

interface Latency {
  p50Ms: number;
  p99Ms: number;
}

const run = promisify(execFile);

export async function benchPeople(): Promise<void> {
  await withTempDir(async (home) => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwks = join(home, 'jwks.json');
    writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }));
    const daemon = await startDaemon(home, ['--listen', '127.0.0.1:0', '--jwt-jwks-file', jwks, '--jwt-audience', 'turnhost']);
    try {
      const status = JSON.parse((await run(process.execPath, [CLI, 'status', '--json', '--home', home])).stdout) as { http: { url: string } };
      const url = status.http.url;
      const tokens: Record<Who, string> = {
        'owner token': readToken(home),
        'personal token': (await run(process.execPath, [CLI, 'user', 'add', 'alice', '--home', home])).stdout.trim(),
        'JWT (cached key)': await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setSubject('carol').setAudience('turnhost').setExpirationTime('2h').sign(privateKey),
      };
      const sessions = {} as Record<Who, string>;
      for (const who of WHO) sessions[who] = await createSession(url, tokens[who], `bench-${who.split(' ')[0]}`);

      const rest: Record<Who, Latency[]> = { 'owner token': [], 'personal token': [], 'JWT (cached key)': [] };
      const ws: Record<Who, Latency[]> = { 'owner token': [], 'personal token': [], 'JWT (cached key)': [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (const who of r % 2 === 0 ? WHO : [...WHO].reverse()) {
          rest[who].push(await restLatency(url, tokens[who], sessions[who]));
          ws[who].push(await wsLatency(url, tokens[who], sessions[who]));
        }
      }
      report(rest, ws);
    } finally {
      await stopDaemon(daemon);
    }
  });
}

function createSession(url: string, token: string, sid: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/sessions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.once('end', () => (res.statusCode === 201 ? resolve(sid) : reject(new Error(`session.create: HTTP ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ session_id: sid }));
  });
}

async function restLatency(url: string, token: string, sid: string): Promise<Latency> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(`${url}/v1/sessions/${sid}/history`, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`history: HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    return await timed(get);
  } finally {
    agent.destroy();
  }
}

async function wsLatency(url: string, token: string, sid: string): Promise<Latency> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/rpc`, { headers: { authorization: `Bearer ${token}` } });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let id = 0;
  const call = () =>
    new Promise<void>((resolve, reject) => {
      ws.once('message', (data) => (String(data).includes('"error"') ? reject(new Error(String(data))) : resolve()));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'session.history', params: { session_id: sid } }));
    });
  try {
    return await timed(call);
  } finally {
    ws.close();
  }
}

async function timed(once: () => Promise<void>): Promise<Latency> {
  for (let i = 0; i < WARMUP; i++) await once();
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const began = performance.now();
    await once();
    samples.push(performance.now() - began);
  }
  return { p50Ms: quantile(samples, 0.5), p99Ms: quantile(samples, 0.99) };
}

function report(rest: Record<Who, Latency[]>, ws: Record<Who, Latency[]>): void {
  const med = (runs: Latency[], key: keyof Latency) => median(runs.map((r) => r[key]));
  const rows = (door: Record<Who, Latency[]>) =>
    WHO.map((who) => {
      const p50 = med(door[who], 'p50Ms');
      const over = p50 - med(door['owner token'], 'p50Ms');
      return { who, p50Ms: round(p50, 3), p99Ms: round(med(door[who], 'p99Ms'), 3), p50OverOwnerMs: round(over, 3) };
    });
  const restRows = rows(rest);
  const wsRows = rows(ws);
  printTable('REST: GET /v1/sessions/{id}/history, a request each (medians of the rounds)', ['credential', 'p50 ms', 'p99 ms', 'p50 over the owner token'], restRows.map((r) => [r.who, r.p50Ms, r.p99Ms, r.p50OverOwnerMs]));
  printTable('WebSocket: session.history, a message each on one connection', ['credential', 'p50 ms', 'p99 ms', 'p50 over the owner token'], wsRows.map((r) => [r.who, r.p50Ms, r.p99Ms, r.p50OverOwnerMs]));
  const worstWs = Math.max(...wsRows.map((r) => r.p50OverOwnerMs));
  const target = { 'a WebSocket message costs at most +0.1 ms p50 over the owner token': { value: worstWs, met: worstWs <= WS_P50_BUDGET_MS } };
  process.stdout.write(`\ntarget: a member's WebSocket message ≤ +${WS_P50_BUDGET_MS} ms p50: +${worstWs} ms, ${verdict(worstWs <= WS_P50_BUDGET_MS)}\n`);
  const file = writeResult('people', { calls: CALLS, rounds: { rest, ws }, rest: restRows, websocket: wsRows, targets: target });
  process.stdout.write(`results: ${file}\n`);
}
