// Anthropic's Messages API through the official @anthropic-ai/sdk client: a
// plain message, a forced tool whose input matches its schema, a streamed
// reply collected by the SDK's stream helper, a tool_result turn, the key
// sent as x-api-key, and 400s in Anthropic's error shape; with a template
// whose prompt opens a think block, the reasoning as thinking blocks.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './server.mjs';
import { withQwenTemplate } from './templates.mjs';

const user = (content) => [{ role: 'user', content }];

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] },
      celsius: { type: 'boolean' },
    },
    required: ['city', 'celsius'],
  },
};

describe('/v1/messages', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--api-key', 'sesame']);
    client = new Anthropic({ baseURL: server.url, apiKey: 'sesame', maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers a plain message with a text block', async () => {
    const m = await client.messages.create({
      max_tokens: 8, system: 'Be brief.', messages: user('Hello'), temperature: 0,
    });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.ok(m.id.startsWith('msg_'));
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, 'text');
    assert.ok(m.content[0].text.length > 0);
    assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
    assert.ok(m.usage.input_tokens > 0);
    assert.ok(m.usage.output_tokens > 0 && m.usage.output_tokens <= 8);
  });

  it('stops at max_tokens and at a stop sequence', async () => {
    const long = await client.messages.create({ max_tokens: 3, messages: user('Count'), temperature: 0 });
    assert.equal(long.stop_reason, 'max_tokens');
    assert.equal(long.usage.output_tokens, 3);
    const text = long.content[0].text;
    const stop = text.slice(1, 3);
    const cut = await client.messages.create({
      max_tokens: 3, messages: user('Count'), temperature: 0, stop_sequences: [stop],
    });
    assert.equal(cut.stop_reason, 'stop_sequence');
    assert.equal(cut.stop_sequence, stop);
    assert.equal(cut.content[0]?.text ?? '', text.slice(0, text.indexOf(stop)));
  });

  it('forces a tool (tool_choice tool) whose input matches the schema', async () => {
    const m = await client.messages.create({
      max_tokens: 100, messages: user('Weather in Oslo?'), tools: [weather],
      tool_choice: { type: 'tool', name: 'get_weather' }, temperature: 1,
    });
    assert.equal(m.stop_reason, 'tool_use');
    const uses = m.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1);
    assert.equal(uses[0].name, 'get_weather');
    assert.ok(uses[0].id.startsWith('toolu_'));
    assert.deepEqual(Object.keys(uses[0].input).sort(), ['celsius', 'city']);
    assert.ok(weather.input_schema.properties.city.enum.includes(uses[0].input.city));
    assert.equal(typeof uses[0].input.celsius, 'boolean');
  });

  it('streams a reply the stream helper collects', async () => {
    const request = { max_tokens: 12, messages: user('Tell me a story'), temperature: 0 };
    const whole = await client.messages.create(request);
    const stream = client.messages.stream(request);
    const events = [];
    let text = '';
    stream.on('streamEvent', (e) => events.push(e.type));
    stream.on('text', (delta) => { text += delta; });
    const final = await stream.finalMessage();
    assert.equal(events[0], 'message_start');
    assert.equal(events.at(-1), 'message_stop');
    assert.ok(events.includes('content_block_delta'));
    assert.equal(final.content[0].text, whole.content[0].text);
    assert.equal(text, whole.content[0].text);
    assert.equal(final.stop_reason, whole.stop_reason);
    assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
    assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
  });

  it('streams a forced tool_use as input_json_delta pieces', async () => {
    const stream = client.messages.stream({
      max_tokens: 100, messages: user('Weather?'), tools: [weather],
      tool_choice: { type: 'any' }, temperature: 0,
    });
    let pieces = 0;
    stream.on('inputJson', () => { pieces += 1; });
    const final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    const use = final.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(Object.keys(use.input).sort(), ['celsius', 'city']);
    assert.ok(pieces > 1, `input in ${pieces} pieces`);
  });

  it('answers a turn after a tool_result', async () => {
    const m = await client.messages.create({
      max_tokens: 8, tools: [weather], tool_choice: { type: 'none' },
      messages: [
        ...user('Weather in Paris?'),
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris', celsius: true } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '22 degrees, sunny' }] },
      ],
    });
    assert.equal(m.content.filter((b) => b.type === 'tool_use').length, 0);
    assert.notEqual(m.stop_reason, 'tool_use');
  });

  it('takes the key as x-api-key and refuses a wrong one', async () => {
    const body = JSON.stringify({ max_tokens: 2, messages: user('hi') });
    const headers = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };
    const right = await fetch(`${server.url}/v1/messages`, { method: 'POST', body, headers: { ...headers, 'x-api-key': 'sesame' } });
    assert.equal(right.status, 200);
    assert.equal((await right.json()).type, 'message');
    const wrong = new Anthropic({ baseURL: server.url, apiKey: 'guess', maxRetries: 0 });
    await assert.rejects(wrong.messages.create({ max_tokens: 2, messages: user('hi') }),
      (e) => e instanceof Anthropic.AuthenticationError && e.error.error.type === 'authentication_error');
  });

  it('refuses bad requests with 400s (and a model not served with a 404) in its own error shape', async () => {
    const refusal = (pattern) => (e) => e instanceof Anthropic.BadRequestError && e.status === 400 &&
      e.error.type === 'error' && e.error.error.type === 'invalid_request_error' && pattern.test(e.error.error.message);
    await assert.rejects(client.messages.create({
      max_tokens: 8, messages: user('x'), tools: [weather], tool_choice: { type: 'tool', name: 'nope' },
    }), refusal(/no tool is named 'nope'/));
    await assert.rejects(client.messages.create({
      max_tokens: 8, messages: user('x'), tools: [{ name: 'f', input_schema: 'none' }],
    }), refusal(/tools\[0\]\.input_schema/));
    await assert.rejects(client.messages.create({
      max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '1' }] }],
    }), refusal(/toolu_9/));
    await assert.rejects(client.messages.create({ model: 'claude-x', max_tokens: 8, messages: user('x') }),
      (e) => e instanceof Anthropic.NotFoundError && e.error.error.type === 'not_found_error');
  });
});

describe('/v1/messages with a think block', () => {
  let server;
  let client;
  before(async () => {
    // Greedy, the tiny model writes only spaces; a fixed seed makes its samples repeatable.
    server = await startServer([...withQwenTemplate(), '--seed', '7']);
    client = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('returns the reasoning as a thinking block, whole and streamed', async () => {
    const request = { max_tokens: 12, messages: user('Think first'), temperature: 1 };
    const whole = await client.messages.create(request);
    assert.equal(whole.content.length, 1);
    assert.equal(whole.content[0].type, 'thinking');
    assert.ok(whole.content[0].thinking.length > 0);
    let thinking = '';
    const stream = client.messages.stream(request);
    stream.on('thinking', (delta) => { thinking += delta; });
    const final = await stream.finalMessage();
    assert.deepEqual(final.content.map((b) => b.type), ['thinking']);
    assert.equal(final.content[0].thinking, whole.content[0].thinking);
    assert.equal(thinking, whole.content[0].thinking);
  });

  it('passes thinking disabled to the template: the reply is text', async () => {
    const m = await client.messages.create({
      max_tokens: 12, messages: user('Answer at once'), temperature: 0, thinking: { type: 'disabled' },
    });
    assert.deepEqual(m.content.map((b) => b.type), ['text']);
    assert.ok(m.content[0].text.length > 0);
  });
});
