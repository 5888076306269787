// Embeddings through the official openai client (/v1/embeddings) and Ollama's
// /api/embed by plain fetch: one unit vector per input, base64 the same
// floats, errors in each API's shape.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './server.mjs';

const DIMS = 64; // tiny-qwen3's n_embd
const length = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const assertUnit = (v) => assert.ok(Math.abs(length(v) - 1) < 1e-5, `length ${length(v)}`);

describe('embeddings', () => {
  let server, client;

  before(async () => {
    server = await startServer(['--parallel', '2', '--ctx', '64']);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });

  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('embeds a string as one unit vector, with usage', async () => {
    const r = await client.embeddings.create({ model: 'tiny-qwen3', input: 'a cat sat on the mat',
      encoding_format: 'float' });
    assert.equal(r.object, 'list');
    assert.equal(r.data.length, 1);
    assert.equal(r.data[0].index, 0);
    assert.equal(r.data[0].embedding.length, DIMS);
    assertUnit(r.data[0].embedding);
    assert.ok(r.usage.prompt_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
  });

  it('embeds a list in order, each as it is alone, and base64 holds the same floats', async () => {
    const input = ['first text', 'a second, longer text of several words', 'third'];
    const many = await client.embeddings.create({ model: 'tiny-qwen3', input, encoding_format: 'float' });
    assert.deepEqual(many.data.map((d) => d.index), [0, 1, 2]);
    for (const [i, text] of input.entries()) {
      assertUnit(many.data[i].embedding);
      const alone = await client.embeddings.create({ model: 'tiny-qwen3', input: text,
        encoding_format: 'float' });
      alone.data[0].embedding.forEach((x, k) =>
        assert.ok(Math.abs(x - many.data[i].embedding[k]) < 1e-5, `input ${i} value ${k}`));
    }
    assert.notDeepEqual(many.data[0].embedding, many.data[1].embedding);

    const b64 = await client.embeddings.create({ model: 'tiny-qwen3', input, encoding_format: 'base64' });
    for (const [i, d] of b64.data.entries()) {
      assert.equal(typeof d.embedding, 'string');
      const bytes = Buffer.from(d.embedding, 'base64');
      const floats = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
      assert.deepEqual(floats, many.data[i].embedding.map(Math.fround));
    }
    // The client's default asks for base64 and decodes it itself.
    const decoded = await client.embeddings.create({ model: 'tiny-qwen3', input });
    assert.deepEqual(decoded.data.map((d) => d.embedding), many.data.map((d) => d.embedding.map(Math.fround)));
  });

  it('takes token ids and cuts to fewer dimensions at unit length', async () => {
    const r = await client.embeddings.create({ model: 'tiny-qwen3', input: [[5, 6, 7], [8, 9]],
      encoding_format: 'float', dimensions: 16 });
    assert.equal(r.data.length, 2);
    assert.equal(r.data[0].embedding.length, 16);
    assertUnit(r.data[0].embedding);
    assert.equal(r.usage.prompt_tokens, 5);
  });

  it('answers 400 for an input past the context and for too many dimensions', async () => {
    const long = Array.from({ length: 65 }, (_, i) => 10 + (i % 50));
    await assert.rejects(client.embeddings.create({ model: 'tiny-qwen3', input: long }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.code, 'context_length_exceeded');
      return true;
    });
    await assert.rejects(client.embeddings.create({ model: 'tiny-qwen3', input: 'x', dimensions: 65 }),
      (e) => e.status === 400 && e.param === 'dimensions');
  });

  it('serves Ollama /api/embed, truncating by default', async () => {
    const post = (body) => fetch(`${server.url}/api/embed`, { method: 'POST', body: JSON.stringify(body) });
    const res = await post({ model: 'tiny-qwen3', input: ['first text', 'third'] });
    assert.equal(res.status, 200);
    const j = await res.json();
    assert.equal(j.model, 'tiny-qwen3');
    assert.equal(j.embeddings.length, 2);
    j.embeddings.forEach(assertUnit);
    const openai = await client.embeddings.create({ model: 'tiny-qwen3', input: 'first text',
      encoding_format: 'float' });
    j.embeddings[0].forEach((x, k) => assert.ok(Math.abs(x - openai.data[0].embedding[k]) < 1e-5));
    assert.ok(j.prompt_eval_count > 0);
    assert.ok(j.total_duration > 0);
    assert.equal(typeof j.load_duration, 'number');

    const long = 'word '.repeat(200);
    const cut = await post({ model: 'tiny-qwen3', input: long });
    assert.equal(cut.status, 200);
    assert.equal((await cut.json()).prompt_eval_count, 64);
    const refused = await post({ model: 'tiny-qwen3', input: long, truncate: false });
    assert.equal(refused.status, 400);
    assert.equal(typeof (await refused.json()).error, 'string');
  });
});
