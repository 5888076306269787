// Ollama's API through the official ollama client: a whole chat, a streamed
// generate whose pieces join to the whole, the done line's counts, tags,
// show, ps, version, embeddings, a format schema the reply matches, a tool-result turn,
// errors as {"error": ...} with Ollama's statuses; with a template whose prompt
// opens a think block, the reasoning in message.thinking and think: false.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import { startServer } from './server.mjs';
import { withQwenTemplate } from './templates.mjs';

const user = (content) => [{ role: 'user', content }];

describe('Ollama API', () => {
  let server;
  let client;
  let model;
  before(async () => {
    server = await startServer();
    client = new Ollama({ host: server.url });
    model = (await client.list()).models[0].name;
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('lists the served model in tags, ps and show', async () => {
    const { models } = await client.list();
    assert.equal(models.length, 1);
    assert.equal(models[0].model, model);
    assert.ok(models[0].size > 0);
    assert.equal(models[0].details.family, 'qwen3');
    assert.equal(models[0].details.format, 'safetensors');
    assert.equal(models[0].details.quantization_level, 'BF16');
    const ps = await client.ps();
    assert.equal(ps.models[0].name, model);
    assert.ok(ps.models[0].context_length > 0);
    const show = await client.show({ model: `${model}:latest` });
    assert.ok(show.capabilities.includes('completion'));
    assert.ok(show.capabilities.includes('tools'));
    assert.equal(show.model_info['general.architecture'], 'qwen3');
    assert.ok(show.model_info['general.parameter_count'] > 0);
    assert.match(show.template, /im_start/);
    assert.match(show.parameters, /num_ctx \d+/);
    const { version } = await client.version();
    assert.match(version, /^\d+\.\d+\.\d+$/);
  });

  it('embeds through the client: one unit vector per input, each as it is alone', async () => {
    const both = await client.embed({ model, input: ['a cat', 'a dog'] });
    assert.equal(both.embeddings.length, 2);
    const alone = await client.embed({ model, input: 'a dog' });
    assert.equal(alone.embeddings.length, 1);
    for (const v of both.embeddings)
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-4);
    both.embeddings[1].forEach((x, i) => assert.ok(Math.abs(x - alone.embeddings[0][i]) < 1e-4));
    assert.notDeepEqual(both.embeddings[0], both.embeddings[1]);
  });

  it('answers a whole chat with the counts and durations', async () => {
    const r = await client.chat({
      model, messages: user('Hello'), stream: false, options: { num_predict: 6, temperature: 0 },
    });
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'length');
    assert.equal(r.message.role, 'assistant');
    assert.ok(r.message.content.length > 0);
    assert.equal(r.eval_count, 6);
    assert.ok(r.prompt_eval_count > 0);
    for (const d of ['total_duration', 'prompt_eval_duration', 'eval_duration'])
      assert.ok(Number.isInteger(r[d]) && r[d] >= 0, d);
    assert.ok(r.total_duration >= r.prompt_eval_duration);
  });

  it('streams a generate whose pieces join to the whole reply', async () => {
    const ask = { model, prompt: 'Once upon a time', options: { num_predict: 12, seed: 7 } };
    const whole = await client.generate({ ...ask, stream: false });
    let text = '';
    let last;
    let pieces = 0;
    for await (const part of await client.generate({ ...ask, stream: true })) {
      text += part.response;
      last = part;
      if (!part.done) pieces += 1;
    }
    assert.ok(pieces > 1);
    assert.equal(last.done, true);
    assert.equal(last.response, '');
    assert.equal(last.done_reason, 'length');
    assert.equal(last.eval_count, 12);
    assert.equal(text, whole.response);
  });

  it('streams a chat and stops at a stop string', async () => {
    const ask = { model, messages: user('Count'), options: { num_predict: 8, temperature: 0 } };
    const whole = (await client.chat({ ...ask, stream: false })).message.content;
    let text = '';
    for await (const part of await client.chat({ ...ask, stream: true })) text += part.message.content;
    assert.equal(text, whole);
    const stop = whole.slice(2, 4);
    const cut = await client.chat({ ...ask, stream: false, options: { ...ask.options, stop: [stop] } });
    assert.equal(cut.message.content, whole.slice(0, whole.indexOf(stop)));
    assert.equal(cut.done_reason, 'stop');
  });

  it('returns JSON matching a format schema', async () => {
    const format = {
      type: 'object',
      properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, n: { type: 'integer' } },
      required: ['city', 'n'],
    };
    const r = await client.chat({ model, messages: user('JSON'), format, stream: false, options: { num_predict: 60 } });
    const value = JSON.parse(r.message.content);
    assert.deepEqual(Object.keys(value).sort(), ['city', 'n']);
    assert.ok(['Paris', 'Oslo'].includes(value.city));
    assert.ok(Number.isInteger(value.n));
    const any = await client.generate({ model, prompt: 'JSON', format: 'json', stream: false, options: { num_predict: 40 } });
    if (any.done_reason === 'stop') assert.equal(typeof JSON.parse(any.response), 'object');
  });

  it('takes a tool-result turn after the assistant call', async () => {
    const tools = [{
      type: 'function',
      function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    }];
    const r = await client.chat({
      model, tools, stream: false, options: { num_predict: 4 },
      messages: [
        ...user('Weather in Oslo?'),
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Oslo' } } }] },
        { role: 'tool', content: '3 C', tool_name: 'get_weather' },
      ],
    });
    assert.equal(r.done, true);
  });

  it('loads the model on an empty generate', async () => {
    const r = await client.generate({ model, prompt: '', stream: false });
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'load');
  });

  it('answers errors as {"error": ...} with Ollama statuses', async () => {
    const fails = async (call, status, pattern) => {
      await assert.rejects(call, (e) => {
        assert.equal(e.status_code, status);
        assert.match(e.error, pattern);
        return true;
      });
    };
    await fails(client.chat({ model: 'llama3.2', messages: user('Hi'), stream: false }), 404, /not found/);
    await fails(client.show({ model: 'llama3.2' }), 404, /not found/);
    await fails(client.generate({ model, prompt: 'a', suffix: 'b', stream: false }), 400, /suffix/);
    await fails(client.chat({ model, messages: [{ role: 'tool', content: '3 C' }], stream: false }), 400,
      /answers no tool call/);
    await fails(client.chat({ model, messages: user('Hi'), format: 'xml', stream: false }), 400, /format/);
    await fails(client.chat({ model, messages: user('Hi'), stream: false, options: { temperature: 9 } }), 400,
      /temperature/);
  });
});

describe('Ollama API with a thinking template', () => {
  let server;
  let client;
  let model;
  before(async () => {
    server = await startServer([...withQwenTemplate(), '--seed', '7']);
    client = new Ollama({ host: server.url });
    model = (await client.list()).models[0].name;
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('says it thinks, and returns the reasoning as message.thinking', async () => {
    assert.ok((await client.show({ model })).capabilities.includes('thinking'));
    const ask = { model, messages: user('Think'), think: true, options: { num_predict: 10 } };
    const whole = await client.chat({ ...ask, stream: false });
    assert.ok(whole.message.thinking.length > 0);
    let thinking = '';
    let content = '';
    for await (const part of await client.chat({ ...ask, stream: true })) {
      thinking += part.message.thinking ?? '';
      content += part.message.content;
    }
    assert.equal(thinking, whole.message.thinking);
    assert.equal(content, whole.message.content);
  });

  it('passes think: false to the template: the reply is content', async () => {
    const r = await client.chat({
      model, messages: user('Answer at once'), think: false, stream: false, options: { num_predict: 10 },
    });
    assert.equal(r.message.thinking, undefined);
    assert.ok(r.message.content.length > 0);
  });
});
