// `npm run bench -- content`: what files in prompts cost (PROTOCOL.md §2.4), each beside a floor
// measured in the same run, on one real daemon per measure (SQLite):
// - from submit to the agent's first byte (its first message.delta): a prompt naming a 10 MiB PNG
//   (uploaded before), read from the store, base64'd and sent to the Python guest, beside a text
//   prompt to the same guest, interleaved; and the same two prompts sent to the same guest directly
//   (the ACP SDK's client, the image's base64 in hand), for what the guest itself spends on an image
//   (reading and decoding 13 MiB of JSON). What turnhost adds is the difference of the differences.
//   Target: +150 ms at most (median).
// - a page of history (the last 50 messages) of a session of 100 prompts each with an image,
//   beside one of 100 text prompts. Target: as fast (within 10%, or 1 ms).
// - a 20 MiB upload through the edge: the daemon's peak memory (VmHWM) before and after. Target:
//   it grows by at most 3 times the file.
// - the same 1 MiB image in 5 prompts of 2 sessions: what the store grows by, beside the image.
//   Target: one copy (at most 1.25 times the image: the rows that name it, the pages around it).
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { client, ndJsonStream, PROTOCOL_VERSION, type ContentBlock } from '@agentclientprotocol/sdk';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { RpcClient, type EventParams } from '../client/rpc-connection.js';
import { readToken } from '../edge/http-token.js';
import { pngImage } from '../test/helpers/content-files.js';
import { median, printTable, ROOT, round, ROUNDS, verdict, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';

const IMAGE_MIB = 10;
const UPLOAD_MIB = 20;
const SAMPLES = 7;
const PAGE_LIMIT = 50;
const PAGE_READS = 30;
const HISTORY_PROMPTS = 100;
const TARGETS = { firstByteAddedMs: 150, pageRatio: 1.1, pageSlackMs: 1, uploadRssRatio: 3, storeCopies: 1.25 };

/** A PNG of about `mib` MiB that does not compress: random pixels. */
function bigPng(mib: number): Buffer {
  const side = Math.ceil(Math.sqrt((mib * 1024 * 1024) / 3));
  return pngImage(side, side, randomBytes(4).readUInt32LE(0));
}

/** A client that waits for a session's events. */
class Watcher {
  private waiting: { sid: string; type: string; resolve: (at: number) => void }[] = [];

  private constructor(readonly rpc: RpcClient) {
    rpc.onEvent = (event: EventParams) => {
      const at = performance.now();
      const matched = this.waiting.filter((w) => event.session_id === w.sid && event.type === w.type);
      this.waiting = this.waiting.filter((w) => !matched.includes(w));
      for (const w of matched) w.resolve(at);
    };
  }

  static async connect(home: string): Promise<Watcher> {
    return new Watcher(await RpcClient.connect(join(home, 'turnhost.sock')));
  }

  call<T>(method: string, params: Record<string, unknown>): Promise<T> {
    return this.rpc.call<T>(method, params, 120_000);
  }

  next(sid: string, type: string): Promise<number> {
    return new Promise((resolve) => this.waiting.push({ sid, type, resolve }));
  }

  /** Submits; resolves with ms from the submit to the first `first` event, once the turn ended (both awaited from before the submit). */
  async turn(sid: string, params: Record<string, unknown>, first = 'message.delta'): Promise<number> {
    const started = performance.now();
    const firstAt = this.next(sid, first);
    const ended = this.next(sid, 'turn.end');
    await this.call('prompt.submit', { session_id: sid, ...params });
    const at = await firstAt;
    await ended;
    return at - started;
  }
}

const PYTHON_GUEST = join(ROOT, 'examples', 'acp-guest.py');

/** SAMPLES of each, in alternating order (the text prompt first in even samples): ms each. */
async function interleaved(text: (i: number) => Promise<number>, withImage: (i: number) => Promise<number>): Promise<{ textMs: number[]; imageMs: number[] }> {
  const textMs: number[] = [];
  const imageMs: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    if (i % 2 === 0) {
      textMs.push(await text(i));
      imageMs.push(await withImage(i));
    } else {
      imageMs.push(await withImage(i));
      textMs.push(await text(i));
    }
  }
  return { textMs, imageMs };
}

/** The floor: the Python guest alone, prompted by the ACP SDK's client; ms to its first message chunk. */
async function firstByteDirect(dir: string, image: Buffer): Promise<{ textMs: number[]; imageMs: number[] }> {
  const child = spawn('python3', [PYTHON_GUEST], { cwd: dir, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', GUEST_STATE_DIR: join(dir, 'direct-state') }, stdio: ['pipe', 'pipe', 'ignore'] });
  let firstChunk: (() => void) | null = null;
  const app = client({ name: 'bench' }).onNotification('session/update', ({ params }) => {
    if (params.update.sessionUpdate === 'agent_message_chunk' && firstChunk !== null) {
      firstChunk();
      firstChunk = null;
    }
  });
  const connection = app.connect(ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>));
  try {
    await connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
    const { sessionId } = await connection.agent.request('session/new', { cwd: dir, mcpServers: [] });
    const data = image.toString('base64');
    const prompt = async (blocks: ContentBlock[]): Promise<number> => {
      const started = performance.now();
      const first = new Promise<number>((resolve) => (firstChunk = () => resolve(performance.now())));
      await connection.agent.request('session/prompt', { sessionId, prompt: blocks });
      return (await first) - started;
    };
    await prompt([{ type: 'text', text: 'warm up' }]);
    return await interleaved(
      (i) => prompt([{ type: 'text', text: `a text prompt ${i}` }]),
      (i) => prompt([{ type: 'text', text: `an image ${i}` }, { type: 'image', mimeType: 'image/png', data }]),
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

async function firstByte(dir: string, image: Buffer): Promise<{ textMs: number[]; imageMs: number[] }> {
  const config = join(dir, 'agent.json');
  writeFileSync(config, JSON.stringify({ acp: { command: 'python3', args: [PYTHON_GUEST, join(dir, 'guest-state')] }, approval: { default: 'allow' } }));
  const home = join(dir, 'guest-home');
  const daemon = await startDaemon(home, ['--agent', 'acp', '--agent-config', config, '--max-blob-mib', '32', '--listen', '127.0.0.1:0']);
  const client = await Watcher.connect(home);
  try {
    await client.call('session.create', { session_id: 'fb' });
    // Past a line's 8 MiB, a file goes through the edge (PROTOCOL.md §2.4).
    const { blob } = await upload(await edgePort(client), readToken(home), 'fb', image, 'image/png');
    await client.turn('fb', { text: 'warm up' });
    return await interleaved(
      (i) => client.turn('fb', { text: `a text prompt ${i}` }),
      (i) => client.turn('fb', { content: [{ type: 'text', text: `an image ${i}` }, { type: 'image', mimeType: 'image/png', blob }] }),
    );
  } finally {
    client.rpc.close();
    await stopDaemon(daemon);
  }
}

async function edgePort(client: Watcher): Promise<number> {
  return Number(new URL((await client.call<{ http: { url: string } }>('host.status', {})).http.url).port);
}

/** The raw body through the edge; the stored blob, or a failure with the edge's answer. */
function upload(port: number, token: string, sid: string, bytes: Buffer, type: string): Promise<{ blob: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: `/v1/sessions/${sid}/blobs`, headers: { authorization: `Bearer ${token}`, 'content-type': type, 'content-length': bytes.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 201) resolve(JSON.parse(text) as { blob: string });
        else reject(new Error(`the upload answered ${res.statusCode}: ${text}`));
      });
    });
    req.on('error', reject);
    req.end(bytes);
  });
}

function peakMiB(pid: number): number {
  const kib = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) / 1024;
}

/** The database's bytes in use: its pages less the free ones. */
function storeBytes(home: string): number {
  const db = new Database(join(home, 'turnhost.db'), { readonly: true });
  try {
    const pages = (db.pragma('page_count', { simple: true }) as number) - (db.pragma('freelist_count', { simple: true }) as number);
    return pages * (db.pragma('page_size', { simple: true }) as number);
  } finally {
    db.close();
  }
}

interface StoreRun {
  pageImagesMs: number[];
  pageTextMs: number[];
  uploadPeakGrowthMiB: number;
  storeGrowthBytes: number;
  imageBytes: number;
}

async function storeMeasures(dir: string): Promise<StoreRun> {
  const home = join(dir, 'script-home');
  const daemon = await startDaemon(home, ['--listen', '127.0.0.1:0', '--max-blob-mib', '32']);
  const client = await Watcher.connect(home);
  try {
    const port = await edgePort(client);
    // Pages of a history with images and without.
    await client.call('session.create', { session_id: 'images' });
    await client.call('session.create', { session_id: 'texts' });
    for (let i = 0; i < HISTORY_PROMPTS; i++) {
      const png = pngImage(16, 16, i + 1);
      await client.turn('images', { content: [{ type: 'text', text: `picture ${i}` }, { type: 'image', mimeType: 'image/png', data: png.toString('base64'), name: `p${i}.png` }] }, 'turn.started');
      await client.turn('texts', { text: `picture ${i}` }, 'turn.started');
    }
    const pageImagesMs: number[] = [];
    const pageTextMs: number[] = [];
    const page = async (sid: string) => {
      const started = performance.now();
      await client.call('session.history', { session_id: sid, limit: PAGE_LIMIT });
      return performance.now() - started;
    };
    for (let i = 0; i < PAGE_READS; i++) {
      pageImagesMs.push(await page('images'));
      pageTextMs.push(await page('texts'));
    }
    // One image in five prompts of two sessions.
    const image = bigPng(1);
    const before = storeBytes(home);
    await client.call('session.create', { session_id: 'once-a' });
    await client.call('session.create', { session_id: 'once-b' });
    for (const sid of ['once-a', 'once-a', 'once-a', 'once-b', 'once-b']) {
      await client.turn(sid, { content: [{ type: 'image', mimeType: 'image/png', data: image.toString('base64') }] }, 'turn.started');
    }
    const storeGrowthBytes = storeBytes(home) - before;
    // A 20 MiB upload through the edge.
    const pid = daemon.pid!;
    const file = bigPng(UPLOAD_MIB);
    const peakBefore = peakMiB(pid);
    await upload(port, readToken(home), 'texts', file, 'image/png');
    const uploadPeakGrowthMiB = peakMiB(pid) - peakBefore;
    return { pageImagesMs, pageTextMs, uploadPeakGrowthMiB, storeGrowthBytes, imageBytes: image.length };
  } finally {
    client.rpc.close();
    await stopDaemon(daemon);
  }
}

export async function benchContent(): Promise<void> {
  type FirstByte = { textMs: number; imageMs: number };
  const rounds: { firstByte: FirstByte; direct: FirstByte; store: StoreRun & { pageImagesMedianMs: number; pageTextMedianMs: number } }[] = [];
  const medians = (run: { textMs: number[]; imageMs: number[] }): FirstByte => ({ textMs: median(run.textMs), imageMs: median(run.imageMs) });
  for (let n = 0; n < ROUNDS; n++) {
    process.stdout.write(`round ${n + 1} of ${ROUNDS}…\n`);
    const measured = await withTempDir(async (dir) => {
      const image = bigPng(IMAGE_MIB);
      // Interleaved: the floor first in even rounds.
      const direct = n % 2 === 0 ? await firstByteDirect(dir, image) : null;
      const fb = await firstByte(dir, image);
      const directAfter = direct ?? (await firstByteDirect(dir, image));
      const store = await storeMeasures(dir);
      return { firstByte: medians(fb), direct: medians(directAfter), store: { ...store, pageImagesMedianMs: median(store.pageImagesMs), pageTextMedianMs: median(store.pageTextMs) } };
    });
    rounds.push(measured);
  }
  const textMs = median(rounds.map((r) => r.firstByte.textMs));
  const imageMs = median(rounds.map((r) => r.firstByte.imageMs));
  const directTextMs = median(rounds.map((r) => r.direct.textMs));
  const directImageMs = median(rounds.map((r) => r.direct.imageMs));
  const addedMs = median(rounds.map((r) => r.firstByte.imageMs - r.firstByte.textMs - (r.direct.imageMs - r.direct.textMs)));
  const pageImages = median(rounds.map((r) => r.store.pageImagesMedianMs));
  const pageText = median(rounds.map((r) => r.store.pageTextMedianMs));
  const pageOk = pageImages <= pageText * TARGETS.pageRatio || pageImages - pageText <= TARGETS.pageSlackMs;
  const uploadGrowth = Math.max(...rounds.map((r) => r.store.uploadPeakGrowthMiB));
  const copies = Math.max(...rounds.map((r) => r.store.storeGrowthBytes / r.store.imageBytes));
  const result = {
    firstByte: { textMs: round(textMs, 1), imageMs: round(imageMs, 1), directTextMs: round(directTextMs, 1), directImageMs: round(directImageMs, 1), addedMs: round(addedMs, 1), target: TARGETS.firstByteAddedMs, met: addedMs <= TARGETS.firstByteAddedMs, imageMiB: IMAGE_MIB },
    historyPage: { imagesMs: round(pageImages, 2), textMs: round(pageText, 2), met: pageOk, prompts: HISTORY_PROMPTS, limit: PAGE_LIMIT },
    upload: { fileMiB: UPLOAD_MIB, peakGrowthMiB: round(uploadGrowth, 1), target: TARGETS.uploadRssRatio * UPLOAD_MIB, met: uploadGrowth <= TARGETS.uploadRssRatio * UPLOAD_MIB },
    store: { imageBytes: rounds[0]!.store.imageBytes, growthBytes: rounds.map((r) => r.store.storeGrowthBytes), copies: round(copies, 2), target: TARGETS.storeCopies, met: copies <= TARGETS.storeCopies },
    rounds,
  };
  printTable('content beyond text (median of rounds)', ['measure', 'turnhost', 'floor', 'target', ''], [
    [`submit → first byte, ${IMAGE_MIB} MiB PNG to the Python guest`, `${round(imageMs, 1)} ms (text ${round(textMs, 1)})`, `${round(directImageMs, 1)} ms direct (text ${round(directTextMs, 1)})`, `+${TARGETS.firstByteAddedMs} ms`, verdict(result.firstByte.met)],
    ['  what turnhost adds for the image (median of rounds)', `+${round(addedMs, 1)} ms`, '', '', ''],
    [`history page (${PAGE_LIMIT}) of ${HISTORY_PROMPTS} prompts with images`, `${round(pageImages, 2)} ms`, `${round(pageText, 2)} ms (text)`, 'as fast', verdict(pageOk)],
    [`${UPLOAD_MIB} MiB upload: daemon peak memory growth`, `${round(uploadGrowth, 1)} MiB`, `${UPLOAD_MIB} MiB (the file)`, `≤ ${TARGETS.uploadRssRatio}×`, verdict(result.upload.met)],
    ['one 1 MiB image in 5 prompts of 2 sessions: store growth', `${round(copies, 2)} copies`, '1 copy', `≤ ${TARGETS.storeCopies}`, verdict(result.store.met)],
  ]);
  writeResult('content', result);
}
