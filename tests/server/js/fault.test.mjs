// The server under fault, over raw sockets: malformed HTTP, oversized headers
// and bodies, slow clients, clients that leave mid-stream and 64 connections
// at once. Through all of it /health and well-behaved clients are answered,
// every slot comes free, and the memory after more rounds of abuse is where
// the first round left it (nothing grows per round).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { startServer } from './server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Sends `bytes` on a fresh connection; resolves with what the server wrote
// once it closes the connection, falls quiet for 200 ms after answering (a
// kept-alive connection), or `ms` pass.
function rawExchange(port, bytes, ms = 5000) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    let quiet;
    const done = () => { clearTimeout(timer); clearTimeout(quiet); socket.destroy(); resolve(reply); };
    const timer = setTimeout(done, ms);
    socket.on('data', (d) => {
      reply += d.toString('latin1');
      clearTimeout(quiet);
      quiet = setTimeout(done, 200);
    });
    socket.on('error', done);
    socket.on('close', done);
    socket.write(bytes);
  });
}

// The status of the first response in a raw reply, 0 when there is none.
const statusOf = (reply) => Number((/^HTTP\/1\.[01] (\d{3})/.exec(reply) ?? [0, 0])[1]);

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t0 };
}

// Resident memory of a process in KiB (Linux), null elsewhere.
function rssKiB(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]);
  } catch {
    return null;
  }
}

describe('Server under fault', () => {
  let server, port;

  const health = async () => (await fetch(`${server.url}/health`)).json();
  const complete = (body) => fetch(`${server.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0, ...body }),
  });

  // Waits until no slot holds a request and none waits.
  async function waitIdle(ms = 20000) {
    const deadline = Date.now() + ms;
    let h;
    while (Date.now() < deadline) {
      h = await health();
      if (h.slots_processing === 0 && h.requests_waiting === 0) return h;
      await sleep(50);
    }
    assert.fail(`slots still busy after ${ms} ms: ${JSON.stringify(h)}`);
  }

  // /health and one ordinary completion, both promptly.
  async function stillServing() {
    const h = await timed(() => fetch(`${server.url}/health`));
    assert.equal(h.value.status, 200);
    assert.ok(h.ms < 2000, `/health took ${h.ms} ms`);
    const c = await complete({});
    assert.equal(c.status, 200);
    assert.equal((await c.json()).object, 'text_completion');
  }

  before(async () => {
    server = await startServer(['--parallel', '2', '--timeout', '2', '--max-body', '65536',
      '--ctx', '4096']);
    port = Number(new URL(server.url).port);
  });

  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  const malformed = [
    'GARBAGE\r\n\r\n',
    'GET\r\n\r\n',
    'GET / HTTP/9.9\r\n\r\n',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n{}',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"prompt"',
    'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{"prompt": 1e9',
    '\x00\xff\xfe\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',  // a TLS hello, cut short
    `GET /${'a'.repeat(100000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(70000)}\r\n\r\n`,
  ];

  // Requests that are not HTTP or break its rules: an error status or a closed
  // connection, never a hang or a crash; all at once, as those that promise a
  // body the server waits for until --timeout take that long.
  async function malformedRequests() {
    // Odd but harmless: a header line without a colon, thousands of headers; served or refused.
    for (const bytes of ['GET /health HTTP/1.1\r\nno colon here\r\n\r\n',
      `GET /health HTTP/1.1\r\n${Array.from({ length: 20000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\n\r\n`]) {
      const reply = await rawExchange(port, bytes);
      assert.ok([0, 200, 400, 431].includes(statusOf(reply)), reply.slice(0, 120));
    }
    await Promise.all(malformed.map(async (bytes) => {
      const reply = await rawExchange(port, Buffer.from(bytes, 'latin1'));
      const status = statusOf(reply);
      assert.ok(status === 0 || (status >= 400 && status < 500),
        `${JSON.stringify(bytes.slice(0, 60))}: ${reply.slice(0, 120)}`);
    }));
  }

  // Slow clients dribbling a request a byte at a time hold connections, not
  // the server; --timeout 2 drops each stalled one.
  async function slowClients() {
    const slow = Array.from({ length: 8 }, () => net.connect(port, '127.0.0.1'));
    const closed = slow.map((s) => new Promise((r) => { s.on('close', r); s.on('error', r); }));
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"pro';
    for (let i = 0; i < 6; ++i) {
      for (const s of slow) if (!s.destroyed) s.write(head[i]);
      await sleep(200);
    }
    await stillServing();
    const t0 = Date.now();
    await Promise.all(closed);
    assert.ok(Date.now() - t0 < 10000, 'slow clients were not timed out');
  }

  async function abuse() {
    await Promise.all([malformedRequests(), slowClients()]);
    await stillServing();

    // A body over --max-body: 413 with an OpenAI-style error.
    const big = await complete({ prompt: 'x'.repeat(70000) });
    assert.equal(big.status, 413);
    assert.equal((await big.json()).error.code, 'request_too_large');

    // Clients that leave mid-stream: their generations stop and their slots come free.
    const streams = Array.from({ length: 6 }, async () => {
      const controller = new AbortController();
      const r = await fetch(`${server.url}/v1/completions`, {
        method: 'POST', signal: controller.signal,
        body: JSON.stringify({ prompt: 'Once', max_tokens: 4000, stream: true, temperature: 1 }),
      });
      const reader = r.body.getReader();
      await reader.read();
      controller.abort();
    });
    await Promise.all(streams);
    await waitIdle();
    // A socket cut mid-request, after its headers and part of the body.
    const cut = net.connect(port, '127.0.0.1');
    cut.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"prompt": "a');
    await sleep(100);
    cut.destroy();

    // 64 connections at once, each a completion; /health answers meanwhile.
    const many = Array.from({ length: 64 }, () => complete({ max_tokens: 4 }).then((r) => r.status));
    await sleep(50);
    const h = await timed(() => health());
    assert.equal(h.value.status, 'ok');
    assert.ok(h.ms < 2000, `/health took ${h.ms} ms under 64 connections`);
    assert.deepEqual([...new Set(await Promise.all(many))], [200]);
    await waitIdle();
    await stillServing();
  }


  it('keeps serving through every kind of abuse, round after round, its memory flat', async () => {
    await stillServing();
    const rss = [rssKiB(server.pid)];
    for (let round = 0; round < 3; ++round) {
      await abuse();
      await waitIdle();
      rss.push(rssKiB(server.pid));
    }
    assert.equal((await health()).slots_idle, 2);
    if (process.env.ANELM_SANITIZED) {
      console.log('server RSS not checked: AddressSanitizer keeps freed memory in quarantine');
    } else if (rss[0] !== null) {
      console.log(`server RSS (KiB) at start and after each round: ${rss.join(' ')}`);
      // The first round brings the allocator's pools and the connection threads'
      // stacks into use; later rounds must not grow past them.
      assert.ok(rss[rss.length - 1] <= rss[1] + 4096, `RSS grew: ${rss.join(' ')} KiB`);
    }
  });
});
