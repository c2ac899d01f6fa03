/// <reference lib="dom" />
// The page (PROTOCOL.md §5.5) in a real headless Chromium (Debian's chromium-headless-shell,
// driven by playwright-core), found by the roles and names of the table, against the real daemon.
// A missing browser fails these tests: .ci/run installs it.
import { expect } from 'chai';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { readToken } from '../../edge/http-token.js';
import { startDaemon, TestClient } from '../helpers/daemon.js';
import { guestArgs, guestScene, PYTHON_GUEST } from '../helpers/guests.js';
import { pdfDocument, pngImage } from '../helpers/content-files.js';
import { Harness } from '../helpers/processes.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';

const CHROMIUM = '/usr/bin/chromium-headless-shell';
const WAIT_MS = 15_000;

async function pageDaemon(h: Harness, args: string[] = []): Promise<{ url: string; token: string; home: string }> {
  const daemon = await startDaemon(h, ['--listen', '127.0.0.1:0', ...args]);
  const client = await TestClient.connect(daemon);
  const status = await client.call<{ http: { url: string } }>('host.status');
  client.close();
  return { url: status.http.url, token: readToken(daemon.home), home: daemon.home };
}

async function loggedIn(browser: Browser, edge: { url: string; token: string }, width = 1200, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 }, colorScheme });
  page.setDefaultTimeout(WAIT_MS);
  await page.goto(`${edge.url}/login?token=${encodeURIComponent(edge.token)}`);
  expect(page.url(), 'the token leaves the address bar').to.equal(`${edge.url}/`);
  // Connected: the host's state shows once its WebSocket is open. A key pressed before then was
  // answered "not connected" on a loaded machine, as it would be for a person that quick.
  await page.getByRole('region', { name: 'Host' }).getByText('running', { exact: true }).waitFor();
  return page;
}

async function newSession(page: Page): Promise<void> {
  const before = await page.getByRole('list', { name: 'Sessions' }).getByRole('listitem').count();
  await page.getByRole('button', { name: 'New session' }).click();
  await itemCount(page, 'Sessions', before + 1);
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Prompt' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** A screenshot pasted into the Prompt, as a browser hands the page a pasted file. */
async function pasteImage(page: Page, name: string, png: Buffer): Promise<void> {
  await page.getByRole('textbox', { name: 'Prompt' }).focus();
  await page.evaluate(
    ([fileName, bytes]) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(bytes)], fileName, { type: 'image/png' }));
      document.querySelector('textarea[aria-label="Prompt"]')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    },
    [name, [...png]] as const,
  );
}

/** Resolves once the list named `name` has `count` items (the browser checks on each frame). */
async function itemCount(page: Page, name: string, count: number): Promise<void> {
  await page.waitForFunction(([list, n]) => document.querySelectorAll(`ul[aria-label="${list}"] > li`).length === n, [name, count] as const);
}

describe('the page in a real browser (headless Chromium, real daemon)', function () {
  this.timeout(90_000);
  const h = new Harness();
  let browser: Browser;

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium-headless-shell (.ci/run does)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  // Each test's pages and daemon end with it: a daemon left running until the file's end woke every
  // 10 ms (its metrics) for as long as the other tests ran.
  afterEach(async () => {
    await Promise.all(browser.contexts().map((context) => context.close()));
    await h.cleanup();
  });
  after(async () => {
    await browser?.close();
  });

  it('a person logs in with the form: a wrong token is said so, the right one signs in; the token is never in the address or the history; light, dark, 360 px', async () => {
    const edge = await pageDaemon(h);
    const page = await browser.newPage({ viewport: { width: 360, height: 740 }, colorScheme: 'dark' });
    page.setDefaultTimeout(WAIT_MS);
    const answer = await page.goto(`${edge.url}/`);
    expect(answer?.status()).to.equal(401);
    const token = page.getByRole('textbox', { name: 'Token' });
    await token.fill('not-the-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').getByText('That token is not valid here').waitFor();
    expect(page.url()).to.equal(`${edge.url}/login?failed`);
    // The page's own style: its font and a dark card, and no sideways scrolling on a phone.
    const look = (await page.evaluate(`(() => {
      const card = getComputedStyle(document.querySelector('main.login'));
      return { font: getComputedStyle(document.body).fontFamily, card: card.backgroundColor, overflow: document.documentElement.scrollWidth - window.innerWidth };
    })()`)) as { font: string; card: string; overflow: number };
    expect(look.font).to.match(/system-ui/);
    expect(look.card).to.equal('rgb(27, 30, 35)');
    expect(look.overflow, 'no sideways scrolling at 360 px').to.be.at.most(0);
    await page.getByRole('textbox', { name: 'Token' }).fill(edge.token);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'New session' }).waitFor();
    expect(page.url()).to.equal(`${edge.url}/`);
    const visited = (await page.evaluate('history.length')) as number;
    const urls: string[] = [];
    for (let back = 1; back < visited; back++) {
      await page.goBack();
      urls.push(page.url());
    }
    for (const url of [page.url(), ...urls]) expect(url).to.not.include(edge.token);
    await page.close();
    const light = await browser.newPage({ colorScheme: 'light' });
    await light.goto(`${edge.url}/login`);
    expect(await light.evaluate(`getComputedStyle(document.querySelector('main.login')).backgroundColor`)).to.equal('rgb(246, 247, 249)');
    await light.close();
    const audit = readFileSync(join(edge.home, 'logs', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { user: string; action: string });
    expect(audit.filter((r) => r.action === 'login').map((r) => r.user), 'one login, the wrong token none').to.deep.equal(['owner']);
  });

  it('logs in, creates a session, streams a reply, answers a clarify and an approval, queues two prompts and deletes one, stops a turn', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge);
    await newSession(page);
    await page.getByRole('region', { name: 'Host' }).getByText('running').waitFor();
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await send(page, 'hello from the page');
    await transcript.locator('.prompt').getByText('hello from the page', { exact: true }).waitFor();
    await transcript.locator('.reply').getByText('hello from the page', { exact: true }).waitFor();
    await transcript.getByText(/^\[time\] \d+\.\d s$/).first().waitFor(); // each turn's time (the script agent reports no usage)

    await send(page, '/ask which colour?');
    const clarify = page.getByRole('dialog', { name: 'which colour?' });
    await clarify.getByRole('textbox', { name: 'Answer' }).fill('teal');
    await clarify.getByRole('button', { name: 'Answer' }).click();
    await transcript.getByText('answer: teal', { exact: true }).waitFor();

    await send(page, '/approve deploy');
    await page.getByRole('dialog', { name: 'deploy' }).getByRole('button', { name: 'Approve' }).click();
    await transcript.getByText('approved: deploy', { exact: true }).waitFor();

    await send(page, '/sleep 30');
    await page.getByRole('button', { name: 'Stop' }).and(page.locator(':enabled')).waitFor();
    await send(page, 'first queued');
    await send(page, 'second queued');
    const queue = page.getByRole('list', { name: 'Queue' });
    await itemCount(page, 'Queue', 2);
    await queue.getByRole('listitem').filter({ hasText: 'first queued' }).getByRole('button', { name: 'Delete' }).click();
    await itemCount(page, 'Queue', 1);
    await page.getByRole('button', { name: 'Stop' }).click();
    await transcript.getByText('(interrupted)').waitFor();
    await page.close();
  });

  it('a guest agent (AGENT.md §6) on the page: its reply streamed, its permission request asked and approved', async () => {
    const edge = await pageDaemon(h, guestArgs(guestScene(h)));
    const page = await loggedIn(browser, edge);
    await newSession(page);
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await send(page, 'hello guest');
    await transcript.getByText('guest: hello guest', { exact: true }).waitFor();
    // What the turn spent (PROTOCOL.md §5.7): on its own line, and the session's total under its title.
    await transcript.getByText(/^\[usage\] 43 prompt \+ 0 completion tokens, 1 model call · \d+\.\d s$/).waitFor();
    await page.getByText('Spent: 43 tokens (43 prompt, 0 completion) in 1 turn', { exact: true }).waitFor();
    await send(page, 'tool make check');
    await page.getByRole('dialog', { name: 'make check' }).getByRole('button', { name: 'Approve' }).click();
    await transcript.getByText('ran make check', { exact: true }).waitFor();
    // The tool call is a disclosure named by the tool: its arguments and result inside.
    const tool = transcript.getByRole('button', { name: 'acp_execute' });
    expect(await tool.getAttribute('aria-expanded')).to.equal('false');
    await tool.click();
    expect(await tool.getAttribute('aria-expanded')).to.equal('true');
    await transcript.getByText(/→ acp_execute\(\{"command":"make check"\}\)/).waitFor();
    await transcript.getByText(/← acp_execute( ok)?: output of make check \(once\)/).waitFor();
    await tool.click();
    expect(await transcript.getByText(/← acp_execute/).count()).to.equal(0);
    await page.close();
  });

  it('files (PROTOCOL.md §2.4): Attach and paste add attachments, listed with a thumbnail or name and size, one removed; sent, the image is shown by its file name and the PDF downloads; a guest\'s diff is a disclosure named by its path; keyboard only at 360 px', async () => {
    const scene = guestScene(h);
    scene.write({}, { approval: { default: 'allow' } });
    const edge = await pageDaemon(h, guestArgs(scene));
    const page = await loggedIn(browser, edge, 360);
    await newSession(page);
    const dir = h.tempDir('turnhost-page-files-');
    const png = pngImage(12, 12, 41);
    const pdf = pdfDocument('attached on the page');
    writeFileSync(join(dir, 'shot.png'), png);
    writeFileSync(join(dir, 'report.pdf'), pdf);
    writeFileSync(join(dir, 'extra.pdf'), pdfDocument('removed'));
    // Attach, from the keyboard: Tab to it, Enter opens the file chooser.
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('textbox', { name: 'Prompt' }).focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await (await chooser).setFiles([join(dir, 'report.pdf'), join(dir, 'extra.pdf')]);
    // A pasted screenshot.
    await pasteImage(page, 'shot.png', png);
    const attachments = page.getByRole('list', { name: 'Attachments' });
    await itemCount(page, 'Attachments', 3);
    await attachments.getByRole('img', { name: 'shot.png' }).waitFor();
    await attachments.getByRole('listitem').filter({ hasText: 'report.pdf' }).getByText(`${pdf.length} B`).waitFor();
    await attachments.getByRole('listitem').filter({ hasText: 'extra.pdf' }).getByRole('button', { name: 'Remove' }).click();
    await itemCount(page, 'Attachments', 2);
    await page.getByRole('button', { name: 'Send' }).and(page.locator(':not([disabled])')).waitFor();
    await send(page, 'what do you see');
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await transcript.getByRole('img', { name: 'shot.png' }).waitFor();
    const link = transcript.getByRole('link', { name: /report\.pdf/ });
    const download = page.waitForEvent('download');
    await link.click();
    const saved = join(dir, 'downloaded.pdf');
    await (await download).saveAs(saved);
    expect(readFileSync(saved).equals(pdf)).to.equal(true);
    expect(await page.getByRole('list', { name: 'Attachments' }).count(), 'sent: the list is empty').to.equal(0);

    await send(page, 'edit /work/src/a.ts');
    const diff = transcript.getByRole('group').filter({ has: page.getByText('/work/src/a.ts', { exact: true }) }).first();
    await transcript.getByText('/work/src/a.ts', { exact: true }).first().click();
    await diff.getByText('const a = 2;').first().waitFor();
    expect(await transcript.locator('.diff .removed').first().innerText()).to.equal('- const a = 1;');
    expect(await transcript.locator('.diff .added').first().innerText()).to.equal('+ const a = 2;');
    await transcript.getByText('tests passed').first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scrolling at 360 px').to.equal(true);
    await page.close();
  });

  it('an image to a guest that takes none: the page says "agent acp does not take images" by the prompt, which comes back with its attachment', async () => {
    const scene = guestScene(h, 'python');
    scene.write({ args: [PYTHON_GUEST, scene.state, '--no-images'] });
    const edge = await pageDaemon(h, guestArgs(scene));
    const page = await loggedIn(browser, edge);
    await newSession(page);
    await pasteImage(page, 'refused.png', pngImage(5, 5, 43));
    await page.getByRole('list', { name: 'Attachments' }).getByRole('img', { name: 'refused.png' }).waitFor();
    await page.getByRole('button', { name: 'Send' }).and(page.locator(':not([disabled])')).waitFor();
    await send(page, 'look at this');
    await page.locator('.writing').getByRole('alert').filter({ hasText: 'agent acp does not take images' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Prompt' }).inputValue()).to.equal('look at this');
    await page.getByRole('list', { name: 'Attachments' }).getByRole('img', { name: 'refused.png' }).waitFor();
    await page.close();
  });

  it('several agents (AGENT.md §8): "New session" offers them, the default chosen; the session shows its agent, and an openai agent\'s a Model picker that sets it', async () => {
    const fake = await FakeOpenAI.start();
    try {
      const dir = h.tempDir('turnhost-page-agents-');
      const config = join(dir, 'agent.json');
      writeFileSync(config, JSON.stringify({
        agents: {
          quick: { kind: 'script', label: 'Quick', description: 'echoes, for demos' },
          model: { kind: 'openai', label: 'A model', description: 'for quick questions', model: 'm1', models: ['m1', 'm2'], base_url: fake.baseUrl },
        },
      }));
      const edge = await pageDaemon(h, ['--agent-config', config]);
      const page = await loggedIn(browser, edge);
      await page.getByRole('button', { name: 'New session' }).click();
      const chooser = page.getByRole('form', { name: 'Agent of the new session' });
      expect(await chooser.getByRole('radio', { name: 'Quick', exact: true }).isChecked(), 'the default chosen').to.equal(true);
      await chooser.getByText('for quick questions').waitFor();
      await chooser.getByRole('radio', { name: 'A model', exact: true }).check();
      await chooser.getByRole('button', { name: 'Create' }).click();
      await itemCount(page, 'Sessions', 1);
      await page.getByRole('list', { name: 'Sessions' }).getByText(/A model/).waitFor();
      const picker = page.getByRole('combobox', { name: 'Model' });
      expect(await picker.inputValue()).to.equal('m1');
      await picker.selectOption('m2');
      await page.getByRole('list', { name: 'Sessions' }).getByText(/A model \(m2\)/).waitFor();
      await send(page, 'which model?');
      await page.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText('ok', { exact: true }).waitFor();
      expect(fake.requests.at(-1)!.body.model).to.equal('m2');
      await page.close();
    } finally {
      await fake.close();
    }
  });

  it('a reply is Markdown: a heading, a list, a table, links that open in a new tab, fenced code with a Copy button that copies it', async () => {
    const edge = await pageDaemon(h);
    const context = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'], viewport: { width: 1100, height: 700 } });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(`${edge.url}/login?token=${encodeURIComponent(edge.token)}`);
    await newSession(page);
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await send(page, ['# Plan', '', '- one', '- two', '', '| a | b |', '|---|---|', '| 1 | 2 |', '', '```js', 'let x = 1;', '```', '', '[site](https://example.com/) and [mail](mailto:a@example.com)'].join('\n'));
    // The prompt is Markdown too; the reply is checked here.
    const reply = transcript.locator('.reply');
    await reply.getByRole('heading', { name: 'Plan' }).waitFor();
    await reply.getByRole('link', { name: 'mail' }).waitFor();
    expect(await transcript.locator('.prompt').getByRole('heading', { name: 'Plan' }).count()).to.equal(1);
    expect(await reply.locator('li').allTextContents()).to.deep.equal(['one', 'two']);
    expect(await reply.getByRole('table').locator('td').allTextContents()).to.deep.equal(['1', '2']);
    expect(await reply.locator('pre > code').textContent()).to.equal('let x = 1;\n');
    const site = reply.getByRole('link', { name: 'site' });
    expect([await site.getAttribute('href'), await site.getAttribute('target'), await site.getAttribute('rel')]).to.deep.equal(['https://example.com/', '_blank', 'noopener noreferrer']);
    await reply.getByRole('button', { name: 'Copy js' }).click();
    await reply.getByRole('button', { name: 'Copy js' }).getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal('let x = 1;\n');
    // The README's picture of the page is this one: TURNHOST_PAGE_SCREENSHOT=docs/page.png makes it again.
    const picture = process.env['TURNHOST_PAGE_SCREENSHOT'];
    if (picture) await page.screenshot({ path: picture });
    await context.close();
  });

  it('no markup, handler or script URL from a session reaches the DOM: the payloads a red team tries, in a prompt and in its reply', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge);
    await page.evaluate(() => ((window as unknown as { xss: number }).xss = 0));
    await newSession(page);
    const payloads = [
      '<img src=x onerror="window.xss=1">',
      '<script>window.xss=2</script>',
      '[click](javascript:window.xss=3)',
      '[data](data:text/html,<script>window.xss=4</script>)',
      '<svg onload="window.xss=5"><circle r=1 /></svg>',
      '[tricky](JaVaScRiPt:window.xss=6)',
      '[entity](&#106;avascript:window.xss=7)',
      '<javascript:window.xss=8>',
      '![img](https://example.com/x.png" onerror="window.xss=9)',
      '[quote](https://ok.example" onmouseover="window.xss=10)',
      '<a href="javascript:window.xss=11">anchor</a>',
      '<iframe src="javascript:window.xss=12"></iframe>',
      '[ref][r]\n\n[r]: javascript:window.xss=13',
      '<details open ontoggle="window.xss=14">x</details>',
      'end of payloads',
    ];
    await send(page, payloads.join('\n\n'));
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await transcript.locator('.reply').getByText('end of payloads', { exact: true }).waitFor();
    for (const link of await transcript.getByRole('link').all()) await link.hover();
    const found = await page.evaluate(() => {
      const log = document.querySelector('[aria-label="Transcript"]')!;
      const elements = [...log.querySelectorAll('*')];
      return {
        xss: (window as unknown as { xss: number }).xss,
        dangerous: elements.filter((e) => ['SCRIPT', 'IMG', 'SVG', 'IFRAME', 'OBJECT', 'EMBED', 'DETAILS', 'STYLE'].includes(e.tagName.toUpperCase())).map((e) => e.tagName),
        handlers: elements.flatMap((e) => [...e.attributes].filter((a) => a.name.toLowerCase().startsWith('on')).map((a) => `${e.tagName} ${a.name}`)),
        hrefs: [...log.querySelectorAll('a')].map((a) => a.getAttribute('href') ?? ''),
        shown: log.textContent ?? '',
      };
    });
    expect(found.xss).to.equal(0);
    expect(found.dangerous).to.deep.equal([]);
    expect(found.handlers).to.deep.equal([]);
    for (const href of found.hrefs) expect(href).to.match(/^(https?:|mailto:)/);
    expect(found.shown).to.include('<img src=x onerror="window.xss=1">').and.include('<script>window.xss=2</script>');
    await page.close();
  });

  it('Stop stops a turn that was running before the page was loaded', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge);
    await newSession(page);
    await send(page, '/sleep 30');
    await page.getByRole('button', { name: 'Stop' }).and(page.locator(':enabled')).waitFor();
    await page.reload();
    await page.getByRole('button', { name: 'Stop' }).and(page.locator(':enabled')).click();
    await page.getByRole('log', { name: 'Transcript' }).getByText('(interrupted)').waitFor();
    await page.close();
  });

  it('a reload in the middle of a long turn shows its reply once, whole; a screenshot of the page mid-turn is saved', async () => {
    const edge = await pageDaemon(h, ['--agent', 'test/fixtures/slow-reply-agent.mjs']);
    const page = await loggedIn(browser, edge);
    await newSession(page);
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await send(page, 'slow 60 50');
    await transcript.getByText('word10 ', { exact: false }).waitFor();
    const screenshot = join(h.tempDir('turnhost-screenshot-'), 'page-mid-turn.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    process.stdout.write(`      (screenshot of the page mid-turn: ${screenshot})\n`);
    await page.reload();
    const whole = Array.from({ length: 60 }, (_, i) => `word${i + 1}`).join(' ');
    await transcript.getByText(whole, { exact: false }).waitFor();
    // Once the turn's end is stored, the reply comes from the history: still once.
    await page.getByRole('button', { name: 'Stop' }).and(page.locator(':disabled')).waitFor();
    const text = await transcript.innerText();
    expect(text.split('word1 ').length - 1, 'the reply once').to.equal(1);
    expect(text).to.include(whole);
    // The turn's time is the stored one (60 words 50 ms apart), not the part this page saw.
    const seconds = Number(/\[time\] (\d+\.\d) s/.exec(text)?.[1]);
    expect(seconds, 'the turn\'s time from its stored row').to.be.at.least(2.9);
    await page.close();
  });

  it('people: each logs in with their own token and is named; the owner shares a session with a viewer, whose page shows who sent each prompt and cannot send', async () => {
    const edge = await pageDaemon(h);
    const tokenOf = async (name: string) => (await h.runCli(['user', 'add', name, '--home', edge.home])).stdout.trim();
    const alice = await loggedIn(browser, { url: edge.url, token: await tokenOf('alice') });
    await alice.getByText('Signed in as alice', { exact: true }).waitFor();
    await newSession(alice);
    await send(alice, 'plan the week');
    await alice.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText('plan the week', { exact: true }).waitFor();
    await alice.getByRole('button', { name: 'Share' }).click();
    const form = alice.getByRole('form', { name: 'Share' });
    await form.getByRole('textbox', { name: 'User' }).fill('bob');
    await form.getByRole('combobox', { name: 'Role' }).selectOption('viewer');
    await form.getByRole('button', { name: 'Share' }).click();
    await form.waitFor({ state: 'detached' });

    const bob = await loggedIn(browser, { url: edge.url, token: await tokenOf('bob') });
    await bob.getByText('Signed in as bob', { exact: true }).waitFor();
    await itemCount(bob, 'Sessions', 1);
    await bob.getByRole('list', { name: 'Sessions' }).getByText('plan the week', { exact: true }).click();
    const prompt = bob.getByRole('log', { name: 'Transcript' }).locator('.prompt');
    await prompt.locator('.by').getByText('alice', { exact: true }).waitFor();
    expect(await bob.getByRole('button', { name: 'Share' }).count(), 'a viewer cannot share').to.equal(0);
    await send(bob, 'may I?');
    await bob.getByRole('alert').getByText(/forbidden: bob may only view/).waitFor();
    await alice.close();
    await bob.close();
  });

  it("a member over a budget: a queued prompt waits, and the page says why (PROTOCOL.md §5.7)", async () => {
    const edge = await pageDaemon(h);
    const alice = (await h.runCli(['user', 'add', 'alice', '--home', edge.home])).stdout.trim();
    expect((await h.runCli(['user', 'budget', 'alice', '--turns-per-day', '1', '--home', edge.home])).code).to.equal(0);
    const page = await loggedIn(browser, { url: edge.url, token: alice });
    await newSession(page);
    await send(page, '/sleep 1');
    await page.getByRole('button', { name: 'Stop' }).and(page.locator(':enabled')).waitFor();
    await send(page, 'after the budget');
    await itemCount(page, 'Queue', 1);
    await page.getByRole('status').getByText(/^queued prompts wait: budget exceeded: turns per day \(1 of 1\), resets at \d{4}-\d\d-\d\dT00:00:00\.000Z$/).waitFor();
    await itemCount(page, 'Queue', 1);
    await page.close();
  });

  it('sessions are named by their first prompt\'s first line, most recently active first', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge);
    const sessions = page.getByRole('list', { name: 'Sessions' }).getByRole('listitem');
    await newSession(page);
    await send(page, 'plan the garden\nwith roses');
    await page.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText('with roses', { exact: false }).waitFor();
    await sessions.first().getByText('plan the garden', { exact: true }).waitFor();
    await newSession(page);
    await send(page, 'fix the fence');
    await page.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText('fix the fence', { exact: true }).waitFor();
    await sessions.first().getByText('fix the fence', { exact: true }).waitFor();
    expect(await sessions.nth(1).locator('.title').textContent()).to.equal('plan the garden');
    await page.close();
  });

  it("a session's life (PROTOCOL.md §2.3): Pin puts it first, Archive takes it out of the list (\"Archived too\" shows it), Export saves its file, Delete asks first and removes it", async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge);
    const sessions = page.getByRole('list', { name: 'Sessions' }).getByRole('listitem');
    const transcript = page.getByRole('log', { name: 'Transcript' });
    await newSession(page);
    await send(page, 'keep this one');
    await transcript.locator('.reply').getByText('keep this one', { exact: true }).waitFor();
    await newSession(page);
    await send(page, 'a newer one');
    await transcript.locator('.reply').getByText('a newer one', { exact: true }).waitFor();
    await sessions.first().getByText('a newer one', { exact: true }).waitFor();

    await sessions.nth(1).getByRole('button').click();
    await page.getByRole('button', { name: 'Pin' }).click();
    await sessions.first().getByLabel('pinned').waitFor();
    expect(await sessions.first().locator('.title').textContent()).to.equal('📌 keep this one');

    const download = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Export' }).click();
    const saved = join(h.tempDir('turnhost-download-'), 'session.jsonl');
    await (await download).saveAs(saved);
    const lines = readFileSync(saved, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).to.deep.include({ format: 'turnhost-session/1' });
    expect(lines.filter((line) => 'message' in line)).to.have.length(2);

    await page.getByRole('button', { name: 'Archive' }).click();
    await itemCount(page, 'Sessions', 1);
    await page.getByRole('checkbox', { name: 'Archived too' }).check();
    await itemCount(page, 'Sessions', 2);
    await sessions.getByText('(archived)').waitFor();
    await page.getByRole('checkbox', { name: 'Archived too' }).uncheck();
    await itemCount(page, 'Sessions', 1);

    await sessions.first().getByRole('button').click();
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Delete' }).click();
    await itemCount(page, 'Sessions', 0);
    await page.getByText('Choose a session, or make a new one.').waitFor();
    expect(asked).to.contain('cannot be undone');
    await page.close();
  });

  it("lists the session's schedules, and a fire's count once it fired", async () => {
    const edge = await pageDaemon(h);
    const added = await h.runCli(['schedule', 'add', '--home', edge.home, 'planned', 'hourly check', '--every', '3600']);
    expect(added.code, added.stderr).to.equal(0);
    const page = await loggedIn(browser, edge);
    await page.getByRole('list', { name: 'Sessions' }).getByRole('button', { name: /planned/ }).click();
    const schedules = page.getByRole('list', { name: 'Schedules' });
    await schedules.getByText('hourly check', { exact: true }).waitFor();
    expect(await schedules.getByRole('listitem').first().textContent()).to.contain('every 3600 s').and.to.contain('0 fired');
    const soon = new Date(Date.now() + 1000).toISOString();
    expect((await h.runCli(['schedule', 'add', '--home', edge.home, 'planned', 'once soon', '--at', soon])).code).to.equal(0);
    await page.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText('once soon', { exact: true }).waitFor();
    await schedules.getByRole('listitem').filter({ hasText: 'once soon' }).getByText(/next none · 1 fired/).waitFor();
    await page.close();
  });

  it('works at 360 px wide, with the keyboard alone', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge, 360);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal('New session');
    await page.keyboard.press('Enter');
    await page.getByRole('textbox', { name: 'Prompt' }).waitFor();
    // Tab from the new session's button to the prompt, as a person would.
    for (let presses = 0; presses < 20 && (await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))) !== 'Prompt'; presses++) {
      await page.keyboard.press('Tab');
    }
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).to.equal('Prompt');
    await page.keyboard.type('typed with keys');
    await page.keyboard.press('Enter');
    await page.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText('typed with keys', { exact: true }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, 'no sideways scrolling at 360 px').to.be.at.most(0);
    await page.close();
  });

  it('branches (PROTOCOL.md §2.2): Retry, Edit here and in a new branch, Fork, "forked from" both ways, superseded turns folded; the title without its Markdown', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge);
    const log = page.getByRole('log', { name: 'Transcript' });
    const reply = (text: string) => log.locator('.reply').getByText(text, { exact: true });
    await newSession(page);
    await send(page, '# Plan\nthe week');
    await reply('Plan').waitFor();
    await page.getByRole('heading', { level: 2, name: 'Plan', exact: true }).waitFor();
    await page.getByRole('list', { name: 'Sessions' }).getByText('Plan', { exact: true }).waitFor();
    await send(page, 'second');
    await reply('second').waitFor();

    // Retry the last reply: the old turn is folded away, the new one shown.
    await page.getByRole('button', { name: 'Retry' }).click();
    const folds = log.getByRole('button', { name: /superseded message/ });
    await folds.first().waitFor();
    // The retried turn runs after the fold is drawn: its reply is awaited, then counted.
    await log.locator('.reply').getByText('second', { exact: true }).first().waitFor();
    expect(await log.locator('.reply').getByText('second', { exact: true }).count(), 'the retried reply shown once').to.equal(1);

    // Edit the second prompt, here.
    await log.locator('.prompt').filter({ hasText: 'second' }).getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('textbox', { name: 'Edited prompt' }).fill('second, edited');
    await page.getByRole('button', { name: 'Save here' }).click();
    await reply('second, edited').waitFor();
    await page.waitForFunction(() => document.querySelectorAll('.transcript .superseded').length === 2);
    await folds.first().click();
    await log.locator('.superseded .folded .reply').first().waitFor();

    // Fork at the first turn: the fork opens, says where it came from, and the source lists it.
    const before = await page.getByRole('list', { name: 'Sessions' }).getByRole('listitem').count();
    await log.locator('.reply-line').filter({ hasText: 'Plan' }).getByRole('button', { name: 'Fork' }).click();
    await itemCount(page, 'Sessions', before + 1);
    await page.getByText('Forked from', { exact: false }).waitFor();
    expect(await log.locator('.reply').count(), 'the fork holds the first turn only').to.equal(1);
    await page.locator('.lineage').getByRole('link', { name: 'Plan' }).click();
    await page.getByText('Forks:', { exact: false }).waitFor();
    await reply('second, edited').waitFor();

    // Edit the first prompt in a new branch: a new session with the edit; the source as it was.
    await log.locator('.prompt').first().getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('textbox', { name: 'Edited prompt' }).fill('a different plan');
    await page.getByRole('button', { name: 'Save in a new branch' }).click();
    await itemCount(page, 'Sessions', before + 2);
    await reply('a different plan').waitFor();
    expect(await log.locator('.reply').count(), 'the branch holds its edited turn only').to.equal(1);
    await page.close();
  });

  it('in the dark scheme at 360 px: dark background, readable text, no sideways scrolling; Enter sends, Shift+Enter makes a new line', async () => {
    const edge = await pageDaemon(h);
    const page = await loggedIn(browser, edge, 360, 'dark');
    await newSession(page);
    const prompt = page.getByRole('textbox', { name: 'Prompt' });
    await prompt.click();
    await page.keyboard.type('first line');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('second line');
    expect(await prompt.inputValue()).to.equal('first line\nsecond line');
    await page.keyboard.press('Enter');
    await page.getByRole('log', { name: 'Transcript' }).locator('.reply').getByText(/first line/).waitFor();
    // A string: the bundler's helpers for named functions do not exist in the page.
    const colors = (await page.evaluate(`(() => {
      const rgb = (css) => (css.match(/\\d+(\\.\\d+)?/g) || []).slice(0, 3).map(Number);
      const luminance = (c) => {
        const [r, g, b] = c.map((v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const background = luminance(rgb(getComputedStyle(document.body).backgroundColor));
      const text = luminance(rgb(getComputedStyle(document.querySelector('.transcript .reply')).color));
      return { background, contrast: (Math.max(background, text) + 0.05) / (Math.min(background, text) + 0.05) };
    })()`)) as { background: number; contrast: number };
    expect(colors.background, 'a dark background').to.be.below(0.05);
    expect(colors.contrast, 'text against it, WCAG AA').to.be.at.least(4.5);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), 'no sideways scrolling at 360 px').to.be.at.most(0);
    // TURNHOST_PAGE_SCREENSHOT_DARK=FILE.png keeps a picture of it.
    const shot = process.env['TURNHOST_PAGE_SCREENSHOT_DARK'];
    if (shot) await page.screenshot({ path: shot, fullPage: true });
    await page.close();
  });
});
