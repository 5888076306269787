// The chat page at / in headless Chromium: model name, a streamed reply, Stop,
// the chat kept across a reload, no console errors, and a phone-sized layout.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import puppeteer from 'puppeteer-core';
import { startServer } from './server.mjs';

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const haveChromium = fs.existsSync(chromium);
// Under CI a missing browser is a failure, so the suite runs and before() reports it.
const skip = haveChromium || process.env.CI ? false
  : `no Chromium at ${chromium} (install chromium or set CHROMIUM_PATH)`;

const texts = (page, selector) =>
  page.$$eval(selector, (els) => els.map((el) => el.textContent));

// Resolves once the current reply has ended: Stop hidden again, Send back.
const replyEnded = (page) =>
  page.waitForFunction(() => document.getElementById('stop').hidden && !document.getElementById('send').hidden);

describe('chat page', { skip }, () => {
  let server, browser, page;
  const problems = [];
  const chatRequests = [];

  before(async () => {
    assert.ok(haveChromium, `no Chromium at ${chromium}`);
    server = await startServer([]);
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu'],
    });
    page = await browser.newPage();
    page.setDefaultTimeout(20000);
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) chatRequests.push(JSON.parse(r.postData()));
    });
    await page.goto(`${server.url}/`, { waitUntil: 'load' });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('shows the name /v1/models gives', async () => {
    const models = await (await fetch(`${server.url}/v1/models`)).json();
    const name = models.data[0].id;
    assert.ok(name.length > 0);
    await page.waitForFunction((n) => document.getElementById('model-name').textContent === n, {}, name);
  });

  it('streams a reply into an assistant bubble and reports tokens per second', async () => {
    // Short answers: without max_tokens the random model may fill the context,
    // and the next request would not fit.
    await page.click('#settings summary');
    await page.type('#max-tokens', '48');
    await page.type('#input', 'Hello there');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('.msg.assistant')?.textContent.length > 0);
    await replyEnded(page);

    assert.deepEqual(await texts(page, '#messages .msg.user'), ['Hello there']);
    assert.equal((await texts(page, '#messages .msg.assistant')).length, 1);
    assert.equal(await page.$eval('#input', (el) => el.value), '');
    assert.equal(await page.$eval('#error', (el) => el.hidden), true);
    assert.match(await page.$eval('#stats', (el) => el.textContent), /^\d+ tokens, \d+\.\d tokens\/s/);

    const sent = chatRequests.at(-1);
    assert.equal(sent.model, await page.$eval('#model-name', (el) => el.textContent));
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { include_usage: true });
    assert.equal(sent.max_tokens, 48);
    assert.deepEqual(sent.messages, [{ role: 'user', content: 'Hello there' }]);
  });

  it('keeps the conversation across a reload', async () => {
    const before = await texts(page, '#messages .msg');
    await page.reload({ waitUntil: 'load' });
    assert.deepEqual(await texts(page, '#messages .msg'), before);
    assert.deepEqual(await texts(page, '#messages .msg.user'), ['Hello there']);
  });

  it('sends the system prompt and the history', async () => {
    // The reload closed the settings again.
    await page.click('#settings summary');
    await page.type('#system', 'Be brief.');
    await page.type('#input', 'And again');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 2);
    await replyEnded(page);

    const first = await texts(page, '#messages .msg.assistant');
    assert.deepEqual(chatRequests.at(-1).messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: first[0] },
      { role: 'user', content: 'And again' },
    ]);
  });

  it('"New chat" empties the conversation, also after a reload', async () => {
    await page.click('#new-chat');
    assert.equal((await page.$$('#messages .msg')).length, 0);
    await page.reload({ waitUntil: 'load' });
    assert.equal((await page.$$('#messages .msg')).length, 0);
    // The system prompt is a setting, not part of the chat.
    assert.equal(await page.$eval('#system', (el) => el.value), 'Be brief.');
  });

  it('Stop ends the stream and the bubble stops growing', async () => {
    await page.$eval('#max-tokens', (el) => { el.value = '600'; });
    // The tiny model writes thousands of tokens a second, faster than a click from
    // here arrives, so the page presses Stop itself at the first streamed text.
    await page.evaluate(() => {
      const observer = new MutationObserver(() => {
        if (document.querySelector('.msg.assistant')?.textContent) {
          observer.disconnect();
          document.getElementById('stop').click();
        }
      });
      observer.observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
    });
    await page.type('#input', `Tell me a long story ${'a'.repeat(120)}`);
    await page.keyboard.press('Enter');
    await replyEnded(page);

    assert.equal(chatRequests.at(-1).max_tokens, 600);
    assert.equal(await page.$eval('#stop', (el) => el.hidden), true);
    assert.match(await page.$eval('#stats', (el) => el.textContent), /\(stopped\)$/);
    const stopped = await texts(page, '#messages .msg.assistant');
    assert.equal(stopped.length, 1);
    assert.ok(stopped[0].length > 0);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(await texts(page, '#messages .msg.assistant'), stopped);
    assert.equal(await page.$eval('#error', (el) => el.hidden), true);
  });

  it('answers the next message after a Stop', async () => {
    await page.$eval('#max-tokens', (el) => { el.value = '16'; });
    await page.type('#input', 'Next');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 2);
    await replyEnded(page);
    assert.equal(await page.$eval('#error', (el) => el.hidden), true);
    assert.equal((await texts(page, '#messages .msg.user')).length, 2);
  });

  it('fits a 375 px wide phone without horizontal scrolling', async () => {
    await page.setViewport({ width: 375, height: 740, isMobile: true, hasTouch: true });
    await page.reload({ waitUntil: 'load' });
    assert.ok((await page.$$('#messages .msg')).length >= 4);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `the page is ${width} px wide`);
    for (const id of ['#input', '#send', '#new-chat']) {
      const box = await page.$eval(id, (el) => el.getBoundingClientRect().right);
      assert.ok(box <= 375, `${id} ends at ${box} px`);
    }
  });

  it('logged no console errors', () => {
    assert.deepEqual(problems, []);
  });
});
