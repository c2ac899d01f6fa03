// `npm run bench -- page`: the page in headless Chromium (Debian's chromium-headless-shell) while the
// script agent streams long replies at full speed. The lag is from the turn.end a socket client of
// the same daemon reads (the floor: the wire itself) to the moment the page shows the reply's last
// word (a MutationObserver in the page, on the same clock). Replies of 1,000, 6,000 and 20,000 words
// in paragraphs of 60; a 6,000-word reply again in a session of 200 earlier turns; and the frames
// while someone types during a 20,000-word stream (the gaps between animation frames).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { readToken } from '../edge/http-token.js';
import { median, printTable, round, verdict, withTempDir, writeResult } from './common.js';
import { startDaemon, stopDaemon } from './daemon.js';
import { RpcDriver } from './rpc-driver.js';

const CHROMIUM = '/usr/bin/chromium-headless-shell';
const SIZES = [1000, 6000, 20_000] as const;
const ROUNDS = 3;
const PARAGRAPH_WORDS = 60;
const LONG_SESSION_TURNS = 200;
/** The target: a 6,000-word reply whole on the page within 1 s of its turn.end. */
const TARGET_LAG_MS = 1000;

/** A reply of `words` words in paragraphs; its last word names it. */
function replyText(words: number, tag: string): string {
  const paragraphs: string[] = [];
  for (let i = 0; i < words - 1; i += PARAGRAPH_WORDS) {
    paragraphs.push(Array.from({ length: Math.min(PARAGRAPH_WORDS, words - 1 - i) }, (_, j) => `word${i + j}`).join(' '));
  }
  return `${paragraphs.join('\n\n')}\n\n${tag}`;
}

/** Resolves with the Date.now() at which the page first showed `word` (set up before the turn runs). */
async function watchFor(page: Page, word: string): Promise<() => Promise<number>> {
  await page.evaluate((w) => {
    const log = document.querySelector('[aria-label="Transcript"]')!;
    const state = window as unknown as { seenAt?: number };
    delete state.seenAt;
    const observer = new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node.textContent?.includes(w)) {
            state.seenAt = Date.now();
            observer.disconnect();
            return;
          }
        }
      }
    });
    observer.observe(log, { childList: true, subtree: true });
  }, word);
  return async () => {
    const handle = await page.waitForFunction(() => (window as unknown as { seenAt?: number }).seenAt, undefined, { timeout: 120_000 });
    return (await handle.jsonValue()) as number;
  };
}

/** One turn: its reply's lag on the page after the socket client read its turn.end. */
async function lagOf(page: Page, driver: RpcDriver, sid: string, words: number, tag: string): Promise<number> {
  const seen = await watchFor(page, tag);
  const ended = new Promise<number>((resolve) => driver.onEnd((s) => s === sid && resolve(Date.now())));
  await driver.call('prompt.submit', { session_id: sid, text: replyText(words, tag) });
  const endAt = await ended;
  return Math.max(0, (await seen()) - endAt);
}

/** Gaps between animation frames while the prompt box is typed into during a stream. */
async function framesWhileTyping(page: Page, driver: RpcDriver, sid: string): Promise<{ p50Ms: number; p95Ms: number; maxMs: number }> {
  // A string: the bench runs under tsx, whose helpers for named functions do not exist in the page.
  await page.evaluate(`(() => {
    window.gaps = [];
    window.measuring = true;
    let last = performance.now();
    function tick(now) {
      window.gaps.push(now - last);
      last = now;
      if (window.measuring) requestAnimationFrame(tick);
    }
    requestAnimationFrame(tick);
  })()`);
  const ended = new Promise<void>((resolve) => driver.onEnd((s) => s === sid && resolve()));
  await driver.call('prompt.submit', { session_id: sid, text: replyText(20_000, 'TYPED-END') });
  const box = page.getByRole('textbox', { name: 'Prompt' });
  await box.click();
  await box.pressSequentially('typing while it streams', { delay: 30 });
  await ended;
  const gaps = await page.evaluate(() => {
    const state = window as unknown as { gaps: number[]; measuring: boolean };
    state.measuring = false;
    return state.gaps.slice(1);
  });
  const sorted = gaps.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50Ms: at(0.5), p95Ms: at(0.95), maxMs: sorted.at(-1)! };
}

interface PageRound {
  lagMs: Record<string, number>;
  longSessionLagMs: number;
  frames: { p50Ms: number; p95Ms: number; maxMs: number };
}

async function measureRound(n: number): Promise<PageRound> {
  return withTempDir(async (home) => {
    const daemon = await startDaemon(home, ['--listen', '127.0.0.1:0']);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const driver = await RpcDriver.open(join(home, 'turnhost.sock'));
      const url = (JSON.parse(await driver.call('host.status', {})) as { result: { http: { url: string } } }).result.http.url;
      const open = async (sid: string): Promise<Page> => {
        const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
        await page.addInitScript((s) => sessionStorage.setItem('turnhost.session', s), sid);
        await page.goto(`${url}/login?token=${encodeURIComponent(readToken(home))}`);
        await page.getByRole('log', { name: 'Transcript' }).waitFor();
        return page;
      };
      await driver.call('session.create', { session_id: 'short' });
      await driver.call('session.resume', { session_id: 'short' });
      const page = await open('short');
      const lagMs: Record<string, number> = {};
      for (const words of SIZES) lagMs[words] = await lagOf(page, driver, 'short', words, `END-${words}-${n}`);
      const frames = await framesWhileTyping(page, driver, 'short');
      await page.close();

      await driver.call('session.create', { session_id: 'long' });
      await driver.call('session.resume', { session_id: 'long' });
      for (let i = 0; i < LONG_SESSION_TURNS; i++) {
        const ended = new Promise<void>((resolve) => driver.onEnd((s) => s === 'long' && resolve()));
        await driver.call('prompt.submit', { session_id: 'long', text: `turn ${i}: a short question, and its answer` });
        await ended;
      }
      const longPage = await open('long');
      // The page has drawn the session's 200 turns before the measured one starts.
      await longPage.getByRole('log', { name: 'Transcript' }).getByText(`> turn ${LONG_SESSION_TURNS - 1}:`).waitFor({ timeout: 60_000 });
      const longSessionLagMs = await lagOf(longPage, driver, 'long', 6000, `END-long-${n}`);
      await longPage.close();
      driver.close();
      return { lagMs, longSessionLagMs, frames };
    } finally {
      await browser.close();
      await stopDaemon(daemon);
    }
  });
}

export async function benchPage(): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium-headless-shell (.ci/run does)`);
  const rounds: PageRound[] = [];
  for (let n = 0; n < ROUNDS; n++) {
    process.stdout.write(`round ${n + 1} of ${ROUNDS}…\n`);
    rounds.push(await measureRound(n));
  }
  const lag = (words: number) => median(rounds.map((r) => r.lagMs[words]!));
  const longLag = median(rounds.map((r) => r.longSessionLagMs));
  printTable(
    `the page's lag after turn.end (ms, median of ${ROUNDS} rounds): the reply's last word shown, after a socket client of the same daemon read turn.end`,
    ['reply', 'lag ms', 'rounds', 'target'],
    [
      ...SIZES.map((words) => [`${words.toLocaleString('en')} words (a 2-turn session)`, round(lag(words)), rounds.map((r) => round(r.lagMs[words]!)).join(', '), words === 6000 ? `≤ ${TARGET_LAG_MS} ms: ${verdict(lag(words) <= TARGET_LAG_MS)}` : '']),
      [`6,000 words in a session of ${LONG_SESSION_TURNS} turns`, round(longLag), rounds.map((r) => round(r.longSessionLagMs)).join(', '), `≤ ${TARGET_LAG_MS} ms: ${verdict(longLag <= TARGET_LAG_MS)}`],
    ],
  );
  printTable(
    'frames while typing during a 20,000-word stream (gaps between animation frames, ms)',
    ['p50', 'p95', 'max'],
    [[round(median(rounds.map((r) => r.frames.p50Ms)), 1), round(median(rounds.map((r) => r.frames.p95Ms)), 1), round(median(rounds.map((r) => r.frames.maxMs)), 1)]],
  );
  const file = writeResult('page', { rounds });
  process.stdout.write(`\nwrote ${file}\n`);
}
