// How a request's sampling is settled: a request naming no seed draws its own
// (the chat page's Regenerate gives a new text) unless the server was given
// --seed; a seed in the request repeats its text; the same range rule as the
// command line's refuses values outside it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './server.mjs';

const request = {
  model: 'tiny-qwen3',
  messages: [{ role: 'user', content: 'Tell me a story' }],
  max_tokens: 24,
  temperature: 1,
  top_p: 1,
  top_k: 0,
};

async function texts(client, body, n) {
  const out = [];
  for (let i = 0; i < n; ++i) {
    const r = await client.chat.completions.create(body);
    out.push(r.choices[0].message.content);
  }
  return out;
}

// A server with `args` for the tests of one describe block.
function serve(args) {
  const s = {};
  before(async () => {
    s.server = await startServer(args);
    s.client = new OpenAI({ baseURL: `${s.server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await s.server.stop(), 0);
  });
  return s;
}

describe('sampling without --seed', () => {
  const s = serve([]);

  it('gives each request without a seed its own draw', async () => {
    const [a, b] = await texts(s.client, request, 2);
    assert.notEqual(a, b);
  });

  it('repeats a request that names its seed', async () => {
    const [a, b] = await texts(s.client, { ...request, seed: 42 }, 2);
    assert.equal(a, b);
  });

  it('says where the settings of requests that set none come from', () => {
    assert.match(s.server.stderr(), /requests that set none: temp [0-9.]+ \(generation_config\.json\).*a random seed each/);
  });

  it('refuses a temperature outside the range the command line allows too', async () => {
    await assert.rejects(s.client.chat.completions.create({ ...request, temperature: 2.5 }),
      (e) => e.status === 400 && /temperature: 2.5 is outside \[0, 2\]/.test(e.message));
  });
});

describe('sampling with --seed', () => {
  const s = serve(['--seed', '7']);

  it('gives requests without a seed the server\'s', async () => {
    const [a, b] = await texts(s.client, request, 2);
    assert.equal(a, b);
  });
});
