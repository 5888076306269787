// The server driven by the official openai Node client: whole and streamed
// chat and text completions, stop strings, usage, log-probabilities, the API
// key, cancellation, concurrent streams and OpenAI-style errors.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { freePort, runAnelm, startServer } from './server.mjs';

const user = (content) => [{ role: 'user', content }];
// Greedy, with a penalty that keeps the random test model from repeating one token.
const greedy = { temperature: 0, presence_penalty: 2 };

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

const deltas = (chunks) =>
  chunks.filter((c) => c.choices.length > 0).map((c) => c.choices[0].delta?.content ?? c.choices[0].text ?? '');

const MAX_BODY = 24576;

describe('OpenAI API', () => {
  let server, client;

  before(async () => {
    server = await startServer(['--parallel', '4', '--max-body', String(MAX_BODY)]);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });

  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('lists the model it serves', async () => {
    const models = await client.models.list();
    assert.equal(models.data.length, 1);
    assert.equal(models.data[0].id, 'tiny-qwen3');
    assert.equal(models.data[0].object, 'model');
  });

  it('streams exactly the text it returns whole, role first, then finish and usage', async () => {
    const request = { model: 'tiny-qwen3', messages: user('Tell me a story'), max_tokens: 24, ...greedy };
    const whole = await client.chat.completions.create(request);
    const text = whole.choices[0].message.content;
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.choices[0].message.role, 'assistant');
    assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
    assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);
    if (whole.choices[0].finish_reason === 'length') assert.equal(whole.usage.completion_tokens, 24);

    const chunks = await collect(await client.chat.completions.create({
      ...request, stream: true, stream_options: { include_usage: true },
    }));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0].id));
    assert.equal(deltas(chunks).join(''), text);
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    const last = withChoices[withChoices.length - 1];
    assert.equal(last.choices[0].finish_reason, whole.choices[0].finish_reason);
    assert.ok(withChoices.slice(0, -1).every((c) => c.choices[0].finish_reason === null));
    const usage = chunks[chunks.length - 1];
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.usage.completion_tokens, whole.usage.completion_tokens);
    assert.equal(usage.usage.prompt_tokens, whole.usage.prompt_tokens);
    // Every delta is whole UTF-8: the client decoded none of it as a replacement.
    for (const d of deltas(chunks)) assert.equal(Buffer.from(d, 'utf8').toString('utf8'), d);
  });

  it('prompts the model through its chat template', async () => {
    const applied = await (await fetch(`${server.url}/apply-template`, {
      method: 'POST', body: JSON.stringify({ messages: user('Hi') }),
    })).json();
    assert.match(applied.prompt, /<\|im_start\|>user\nHi<\|im_end\|>\n<\|im_start\|>assistant\n/);
    const tokens = await (await fetch(`${server.url}/tokenize`, {
      method: 'POST', body: JSON.stringify({ content: applied.prompt }),
    })).json();
    const reply = await client.chat.completions.create({ messages: user('Hi'), max_tokens: 1 });
    assert.equal(reply.usage.prompt_tokens, tokens.tokens.length);
    const back = await (await fetch(`${server.url}/detokenize`, {
      method: 'POST', body: JSON.stringify({ tokens: tokens.tokens }),
    })).json();
    assert.equal(back.content, applied.prompt);
  });

  it('completes text, whole and streamed alike', async () => {
    const request = { model: 'tiny-qwen3', prompt: 'Once upon a time', max_tokens: 16, ...greedy };
    const whole = await client.completions.create(request);
    assert.equal(whole.object, 'text_completion');
    const chunks = await collect(await client.completions.create({ ...request, stream: true }));
    assert.equal(deltas(chunks).join(''), whole.choices[0].text);
    assert.equal(chunks[chunks.length - 1].choices[0].finish_reason, whole.choices[0].finish_reason);
  });

  it('ends at a stop string split across tokens and never shows it', async () => {
    const request = { messages: user('Count for me'), max_tokens: 32, ...greedy };
    const plain = (await client.chat.completions.create(request)).choices[0].message.content;
    assert.ok(plain.length >= 8, `a reply long enough to cut: ${JSON.stringify(plain)}`);
    const stop = plain.slice(Math.floor(plain.length / 2) - 1, Math.floor(plain.length / 2) + 2);
    const want = plain.slice(0, plain.indexOf(stop));
    const whole = await client.chat.completions.create({ ...request, stop: [stop, 'never-seen'] });
    assert.equal(whole.choices[0].message.content, want);
    assert.equal(whole.choices[0].finish_reason, 'stop');
    const streamed = await collect(await client.chat.completions.create({ ...request, stop, stream: true }));
    assert.equal(deltas(streamed).join(''), want);
  });

  it('gives log-probabilities of the chosen and the most likely tokens', async () => {
    const r = await client.chat.completions.create({
      messages: user('Hi'), max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3,
    });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);
    for (const t of content) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      // Greedy picks the most likely token.
      assert.equal(t.top_logprobs[0].logprob, t.logprob);
      assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
      assert.ok(t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob);
      assert.deepEqual(Buffer.from(t.bytes).toString('utf8'), Buffer.from(t.bytes).toString('utf8'));
    }
    const text = await client.completions.create({ prompt: 'Once', max_tokens: 4, temperature: 0, logprobs: 2 });
    const lp = text.choices[0].logprobs;
    assert.equal(lp.tokens.length, text.usage.completion_tokens);
    assert.equal(lp.tokens.join(''), text.choices[0].text);
    assert.equal(lp.text_offset[0], 0);
  });

  it('runs 8 concurrent streams, each as it runs alone', async () => {
    const prompts = Array.from({ length: 8 }, (_, i) => `Story number ${i} begins`);
    const alone = [];
    for (const p of prompts) {
      alone.push((await client.chat.completions.create({ messages: user(p), max_tokens: 20, ...greedy }))
        .choices[0].message.content);
    }
    const together = await Promise.all(prompts.map(async (p) => deltas(await collect(
      await client.chat.completions.create({ messages: user(p), max_tokens: 20, stream: true, ...greedy }),
    )).join('')));
    assert.deepEqual(together, alone);
  });

  it('cancels a stream the client abandons and goes on serving', async () => {
    const stream = await client.chat.completions.create({
      messages: user('Go on forever'), max_tokens: 900, temperature: 1, stream: true,
    });
    let seen = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content !== undefined && ++seen === 3) break;  // closes the connection
    }
    const health = await fetch(`${server.url}/health`);
    assert.equal(health.status, 200);
    const after = await client.chat.completions.create({ messages: user('Hi'), max_tokens: 4 });
    assert.ok(['stop', 'length'].includes(after.choices[0].finish_reason));
  });

  it('keeps to a JSON schema, so every reply parses and validates', async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 20 },
        age: { type: 'integer' },
        score: { type: 'number' },
        ok: { type: 'boolean' },
        tags: { type: 'array', items: { enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3 },
        pet: { $ref: '#/$defs/pet' },
        note: { type: ['string', 'null'], maxLength: 30 },
      },
      required: ['name', 'age', 'score', 'ok', 'tags', 'pet', 'note'],
      $defs: { pet: { type: 'object', properties: { kind: { const: 'cat' }, lives: { type: 'integer' } }, required: ['kind', 'lives'] } },
    };
    for (let seed = 1; seed <= 6; seed++) {
      const r = await client.chat.completions.create({
        messages: user('Describe a person'), max_tokens: 400, temperature: 1, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } },
      });
      const text = r.choices[0].message.content;
      assert.equal(r.choices[0].finish_reason, 'stop', text);
      const v = JSON.parse(text);
      assert.deepEqual(Object.keys(v), schema.required);
      assert.equal(typeof v.name, 'string');
      assert.ok([...v.name].length <= 20);
      assert.ok(Number.isInteger(v.age));
      assert.equal(typeof v.score, 'number');
      assert.equal(typeof v.ok, 'boolean');
      assert.ok(v.tags.length >= 1 && v.tags.length <= 3 && v.tags.every((t) => ['red', 'green', 'blue'].includes(t)));
      assert.equal(v.pet.kind, 'cat');
      assert.ok(Number.isInteger(v.pet.lives));
      assert.ok(v.note === null || typeof v.note === 'string');
    }
    // Any object: free strings may run to max_tokens; every one that ends parses.
    let ended = 0;
    for (let seed = 1; seed <= 4; seed++) {
      const object = await client.chat.completions.create({
        messages: user('Anything'), max_tokens: 300, temperature: 1, seed, response_format: { type: 'json_object' },
      });
      const text = object.choices[0].message.content;
      assert.ok(text.startsWith('{'), text);
      if (object.choices[0].finish_reason !== 'stop') continue;
      assert.equal(typeof JSON.parse(text), 'object');
      ended++;
    }
    assert.ok(ended > 0);
    await assert.rejects(client.chat.completions.create({
      messages: user('x'), response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'string', pattern: 'a+' } } },
    }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.schema');
  });

  it('counts prompt and generated tokens at /metrics', async () => {
    const metric = (text, name) => Number(new RegExp(`^anelm:${name} (\\S+)$`, 'm').exec(text)[1]);
    const read = async () => {
      const res = await fetch(`${server.url}/metrics`);
      assert.equal(res.status, 200);
      return res.text();
    };
    const before = await read();
    const r = await client.completions.create({ prompt: 'Count me in', max_tokens: 6, ...greedy });
    const after = await read();
    assert.equal(metric(after, 'tokens_predicted_total') - metric(before, 'tokens_predicted_total'),
      r.usage.completion_tokens);
    assert.ok(metric(after, 'prompt_tokens_total') > metric(before, 'prompt_tokens_total'));
    assert.ok(metric(after, 'prompt_seconds_total') > metric(before, 'prompt_seconds_total'));
    assert.equal(metric(after, 'requests_processing'), 0);
  });

  it('answers bad requests with OpenAI-style errors', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages: user('x') }),
      (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
    await assert.rejects(client.chat.completions.create({ messages: user('x'), temperature: 'hot' }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
    await assert.rejects(client.chat.completions.create({ messages: user('word '.repeat(1500)) }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
    await assert.rejects(client.chat.completions.create({ messages: user('x'.repeat(30000)) }),
      (e) => e.status === 413);
    const malformed = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: '{"messages": [' });
    assert.equal(malformed.status, 400);
    assert.equal((await malformed.json()).error.type, 'invalid_request_error');
    const missing = await fetch(`${server.url}/v1/nothing`);
    assert.equal(missing.status, 404);
    assert.ok((await missing.json()).error.message.includes('/v1/nothing'));
    // Still serving.
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  });

  it('takes a JSON body whatever its Content-Type says, and only --max-body limits it', async () => {
    // `curl -d @body.json` sends application/x-www-form-urlencoded; a pretty-printed
    // file passes 8 KiB long before its prompt does (here the padding is JSON whitespace).
    const padded = (fields, pad = 20 * 1024) => `{${' '.repeat(pad)}${JSON.stringify(fields).slice(1)}`;
    const post = (route, body, type = 'application/x-www-form-urlencoded') =>
      fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': type }, body });
    const chat = await post('/v1/chat/completions', padded({ messages: user('Hi'), max_tokens: 2 }));
    const reply = await chat.text();
    assert.equal(chat.status, 200, reply);
    assert.equal(JSON.parse(reply).object, 'chat.completion');
    for (const [route, fields] of [['/v1/completions', { prompt: 'Hi', max_tokens: 2 }],
      ['/tokenize', { content: 'Hi' }], ['/detokenize', { tokens: [1, 2] }],
      ['/apply-template', { messages: user('Hi') }], ['/v1/embeddings', { input: 'Hi' }]]) {
      const r = await post(route, padded(fields));
      assert.equal(r.status, 200, `${route}: ${await r.text()}`);
    }
    // A route that does not exist says so, whatever the body.
    assert.equal((await post('/v1/audio/speech', padded({ input: 'Hi' }))).status, 404);

    // Past --max-body: 413, whatever the type, its length declared or chunked.
    const big = padded({ messages: user('Hi'), max_tokens: 2 }, MAX_BODY);
    const tooLarge = async (r) => {
      assert.equal(r.status, 413);
      assert.equal((await r.json()).error.code, 'request_too_large');
    };
    await tooLarge(await post('/v1/chat/completions', big));
    await tooLarge(await post('/v1/chat/completions', big, 'application/json'));
    await tooLarge(await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: new Blob([big]).stream(), duplex: 'half',
    }));
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  });

  it('leaves its port to itself: a second server there exits, naming it, and the first answers on', async () => {
    const { port } = new URL(server.url);
    const second = await runAnelm(['serve', process.env.ANELM_TEST_MODEL, '--host', '127.0.0.1',
      '--port', port]);
    assert.equal(second.code, 1, second.stderr);
    assert.match(second.stderr, new RegExp(`^anelm: error: 127\\.0\\.0\\.1:${port}: address already in use$`, 'm'));
    for (let i = 0; i < 4; i++) {
      const r = await client.completions.create({ prompt: 'Hi', max_tokens: 2 });
      assert.equal(r.model, 'tiny-qwen3');
    }
  });
});

describe('Start-up', () => {
  // A model that cannot be loaded ends the server with its error, at once or
  // part of the way through the load.
  it('exits with the error when the folder holds no model, or only part of one', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'anelm-serve-'));
    const partial = fs.mkdtempSync(path.join(os.tmpdir(), 'anelm-serve-'));
    for (const name of fs.readdirSync(process.env.ANELM_TEST_MODEL)) {
      if (!name.endsWith('.safetensors')) fs.copyFileSync(path.join(process.env.ANELM_TEST_MODEL, name), path.join(partial, name));
    }
    try {
      for (const folder of [empty, partial]) {
        const r = await runAnelm(['serve', folder, '--host', '127.0.0.1', '--port', String(await freePort())]);
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /^anelm: error: \S.*$/m);
      }
    } finally {
      fs.rmSync(empty, { recursive: true });
      fs.rmSync(partial, { recursive: true });
    }
  });
});

describe('API key', () => {
  let server;
  before(async () => { server = await startServer(['--api-key', 'sesame']); });
  after(async () => { await server.stop(); });

  it('is required on every route but /health', async () => {
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'guess', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    await assert.rejects(wrong.chat.completions.create({ messages: user('x') }),
      (e) => e instanceof OpenAI.AuthenticationError && e.code === 'invalid_api_key');
    assert.equal((await fetch(`${server.url}/tokenize`, { method: 'POST', body: '{"content":"a"}' })).status, 401);
    assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const right = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sesame', maxRetries: 0 });
    const r = await right.chat.completions.create({ messages: user('x'), max_tokens: 2 });
    assert.equal(r.choices.length, 1);
  });
});
