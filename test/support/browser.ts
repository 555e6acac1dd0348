// A real headless Chromium (Debian's `chromium` package, driven by puppeteer-core) on a page of the
// service, watched as the tests watch every other client: each HTTP response the page receives is
// checked against openapi.yaml (contract.ts), each feed message against asyncapi.yaml (feed.ts), and
// every console error, uncaught exception and Content-Security-Policy violation is kept, for a test to
// expect none. `.ci/run` installs the package when it is missing.
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { checkResponse } from './contract.ts';
import { messageProblem } from './feed.ts';

/** Where the browser is: CHROMIUM_PATH, or Debian's. */
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const chromiumMissing = (): string | undefined =>
  existsSync(chromiumPath) ? undefined : `no Chromium at ${chromiumPath} (apt-get install -y chromium, or set CHROMIUM_PATH)`;

/**
 * Skips the suite of `context` (a `before` hook's `this`) when there is no Chromium; but on CI, which
 * installs it (`.ci/run`), a missing browser is a failure.
 */
export function skipWithoutChromium(context: Mocha.Context): void {
  const missing = chromiumMissing();
  if (!missing) return;
  if (process.env.CI) throw new Error(missing);
  context.skip();
}

export interface WatchedPage {
  page: Page;
  /** What went wrong on the page so far: console errors, exceptions, policy violations, contract breaks. */
  problems: string[];
  /** Every feed message the page received, as sent. */
  feedMessages: string[];
  /** The address of every feed socket the page opened. */
  feedUrls: string[];
  /** Waits for the checks of the responses received so far. */
  settled(): Promise<void>;
  /** Forgets the browser's log of the answers `status` the test makes the service give: they are expected. */
  expectRefusals(status: number): void;
  /** A test's end: waits for the checks, fails on any problem left, and closes the page (whatever it found). */
  finish(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
  return puppeteer.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}

/** A new page of `browser` with every check above attached, at `width` × `height`. */
export async function watchedPage(browser: Browser, width = 1280, height = 800): Promise<WatchedPage> {
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  const problems: string[] = [];
  const feedMessages: string[] = [];
  const feedUrls: string[] = [];
  const checks: Promise<void>[] = [];

  page.on('console', (message) => {
    if (message.type() !== 'error' && message.type() !== 'warn') return;
    // With the address it is about, where the browser gives one (a resource that failed to load names none in its text).
    const { url } = message.location();
    problems.push(`console ${message.type()}: ${message.text()}${url ? ` (${url})` : ''}`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${(error as Error).message}`));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (url.protocol === 'data:') return;
    const method = response.request().method();
    checks.push(
      (async () => {
        // A redirect, a HEAD or a CORS preflight (OPTIONS) has no body to read, nor an EventSource's stream
        // one that ends (its messages are the page's to check); every other answer is read whole, but the
        // refusal of an EventSource, whose body the browser may have dropped as it closed, is then left unchecked.
        const eventSource = response.request().resourceType() === 'eventsource';
        const status = response.status();
        const bodiless = method === 'HEAD' || method === 'OPTIONS' || (eventSource && status === 200) || (status >= 300 && status < 400);
        const text = bodiless ? '' : await response.text().catch((error: Error) => (eventSource ? undefined : Promise.reject(error)));
        if (text === undefined) return;
        const headers = new Headers(Object.entries(response.headers()));
        checkResponse({ method, path: url.pathname, status, headers, text });
      })().catch((error: Error) => {
        problems.push(`${method} ${url.pathname}: ${error.message}`);
      }),
    );
  });
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  cdp.on('Network.webSocketCreated', ({ url }) => feedUrls.push(url));
  cdp.on('Network.webSocketFrameReceived', ({ response }) => {
    feedMessages.push(response.payloadData);
    const problem = messageProblem(response.payloadData);
    if (problem) problems.push(`feed message: ${problem}`);
  });

  return {
    page,
    problems,
    feedMessages,
    feedUrls,
    async settled() {
      await Promise.all(checks);
    },
    expectRefusals(status) {
      const expected = new RegExp(`status of ${status}`);
      problems.splice(0, problems.length, ...problems.filter((problem) => !expected.test(problem)));
    },
    async finish() {
      try {
        await Promise.all(checks);
        expect(problems, 'console errors, CSP violations and contract breaks on the page').to.deep.equal([]);
      } finally {
        // A page left open goes on with what it was doing (a live view reconnecting, say) until the browser closes.
        await page.close();
      }
    },
  };
}

/**
 * The hooks of a suite whose tests each drive a page of `browser()`: a new watched page before each test,
 * finished after it (its checks awaited, any problem failing the test, then closed). A test reads its
 * page from what this returns.
 */
export function pageForEachTest(browser: () => Browser): { watched: WatchedPage; page: Page } {
  const tab = {} as { watched: WatchedPage; page: Page };
  beforeEach(async () => {
    tab.watched = await watchedPage(browser());
    tab.page = tab.watched.page;
  });
  afterEach(() => tab.watched.finish());
  return tab;
}

/** Opens the console of the server at `url` on `page`, signs in with `key`, and waits for the console. */
export async function signInToConsole(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.type('#key', key);
  await page.click('.sign-in-form button[type=submit]');
  await page.waitForSelector('header.top');
}

/** Sets the value of the input (or textarea) `selector` of `page` as a person would leave it. */
export async function fillInput(page: Page, selector: string, value: string): Promise<void> {
  await page.$eval(
    selector,
    (input, text) => {
      (input as HTMLInputElement).value = text as string;
    },
    value,
  );
}

/** A server of one empty page on an ephemeral loopback port: an origin of its own for the browser, as an app's. */
export async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><title>an app</title><link rel="icon" href="data:,">'); // no favicon asked for
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
