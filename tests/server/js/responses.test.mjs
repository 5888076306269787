// OpenAI's Responses API through the official openai client: plain text, a
// forced function call whose arguments match the schema, a
// function_call_output turn, streamed events in the order OpenAI sends them
// (text and a call), and the 400s of previous_response_id (the server is
// stateless) and of a tool_choice naming no tool; with a template whose
// prompt opens a think block, the reasoning as a reasoning item.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './server.mjs';
import { withQwenTemplate } from './templates.mjs';

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  strict: true,
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] },
      celsius: { type: 'boolean' },
    },
    required: ['city', 'celsius'],
    additionalProperties: false,
  },
};

function assertValid(argumentsText) {
  const args = JSON.parse(argumentsText);
  assert.deepEqual(Object.keys(args).sort(), ['celsius', 'city']);
  assert.ok(weather.parameters.properties.city.enum.includes(args.city), args.city);
  assert.equal(typeof args.celsius, 'boolean');
}

async function collect(stream) {
  const events = [];
  for await (const e of stream) events.push(e);
  return events;
}

// The events of one output item, in order: added, its part, deltas, done.
function assertItemEvents(types, kind) {
  const deltas = kind === 'message' ? 'response.output_text.delta' : 'response.function_call_arguments.delta';
  const order = kind === 'message'
    ? ['response.output_item.added', 'response.content_part.added', deltas, 'response.output_text.done',
      'response.content_part.done', 'response.output_item.done']
    : ['response.output_item.added', deltas, 'response.function_call_arguments.done', 'response.output_item.done'];
  const squeezed = types.filter((t, i) => t !== deltas || types[i - 1] !== deltas);
  assert.deepEqual(squeezed, order);
}

describe('/v1/responses', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer();
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('answers text input with a message item', async () => {
    const r = await client.responses.create({
      input: 'Hello', instructions: 'Be brief.', max_output_tokens: 6, temperature: 0, store: false,
    });
    assert.equal(r.object, 'response');
    assert.ok(r.id.startsWith('resp_'));
    assert.equal(r.status, 'incomplete');
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.instructions, 'Be brief.');
    assert.equal(r.output.length, 1);
    const [message] = r.output;
    assert.equal(message.type, 'message');
    assert.equal(message.role, 'assistant');
    assert.equal(message.content[0].type, 'output_text');
    assert.ok(message.content[0].text.length > 0);
    assert.equal(r.output_text, message.content[0].text);  // the SDK joins it
    assert.equal(r.usage.output_tokens, 6);
    assert.ok(r.usage.input_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + 6);
  });

  it('forces a function call (tool_choice function) whose arguments match the schema', async () => {
    const r = await client.responses.create({
      input: [{ role: 'user', content: 'Weather in Oslo?' }], tools: [weather],
      tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 100, temperature: 1,
    });
    assert.equal(r.status, 'completed');
    const calls = r.output.filter((item) => item.type === 'function_call');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'get_weather');
    assert.ok(calls[0].call_id.startsWith('call_'));
    assertValid(calls[0].arguments);
  });

  it('answers a turn after a function_call_output', async () => {
    const input = [
      { role: 'user', content: [{ type: 'input_text', text: 'Weather in Lima?' }] },
      { type: 'function_call', call_id: 'call_7', name: 'get_weather', arguments: '{"city":"Lima","celsius":true}' },
      { type: 'function_call_output', call_id: 'call_7', output: '{"temp": 21}' },
    ];
    const r = await client.responses.create({
      input, tools: [weather], tool_choice: 'none', max_output_tokens: 4, temperature: 0,
    });
    assert.deepEqual(r.output.map((item) => item.type), ['message']);
    // The result reached the prompt: the same turn without it reads fewer tokens.
    const without = await client.responses.create({
      input: input.slice(0, 2), tools: [weather], tool_choice: 'none', max_output_tokens: 4, temperature: 0,
    });
    assert.ok(r.usage.input_tokens > without.usage.input_tokens);
  });

  it('streams text as the standard events, ending with the whole response', async () => {
    const request = { input: 'Tell me a story', max_output_tokens: 10, temperature: 0 };
    const whole = await client.responses.create(request);
    const events = await collect(await client.responses.create({ ...request, stream: true }));
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
    assert.equal(events[0].response.status, 'in_progress');
    events.forEach((e, i) => assert.equal(e.sequence_number, i));
    assertItemEvents(types.slice(2, -1), 'message');
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    assert.equal(text, whole.output[0].content[0].text);
    const last = events.at(-1);
    assert.equal(last.type, 'response.incomplete');  // cut at max_output_tokens
    assert.equal(last.response.output[0].content[0].text, text);
    assert.equal(last.response.usage.output_tokens, 10);
  });

  it('streams a forced call as argument deltas and ends with response.completed', async () => {
    const events = await collect(await client.responses.create({
      input: 'Weather?', tools: [weather], tool_choice: 'required', max_output_tokens: 100,
      temperature: 0, stream: true,
    }));
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 2), ['response.created', 'response.in_progress']);
    assertItemEvents(types.slice(2, -1), 'function_call');
    assert.ok(types.filter((t) => t === 'response.function_call_arguments.delta').length > 1);
    const args = events.filter((e) => e.type === 'response.function_call_arguments.delta')
      .map((e) => e.delta).join('');
    assertValid(args);
    const done = events.find((e) => e.type === 'response.output_item.done').item;
    assert.equal(done.arguments, args);
    const last = events.at(-1);
    assert.equal(last.type, 'response.completed');
    assert.equal(last.response.status, 'completed');
    assert.deepEqual(last.response.output, [done]);
  });

  it('refuses previous_response_id, an unknown tool_choice and an orphan output with 400s', async () => {
    const refusal = (param, text) => (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
      e.error.param === param && text.test(e.message);
    await assert.rejects(client.responses.create({ input: 'hi', previous_response_id: 'resp_123' }),
      refusal('previous_response_id', /stateless/));
    await assert.rejects(client.responses.create({
      input: 'hi', tools: [weather], tool_choice: { type: 'function', name: 'get_time' },
    }), refusal('tool_choice', /get_time/));
    await assert.rejects(client.responses.create({
      input: [{ type: 'function_call_output', call_id: 'call_9', output: '1' }],
    }), refusal('input[0].call_id', /call_9/));
    await assert.rejects(client.responses.create({
      input: 'hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'array' } }],
    }), refusal('tools[0].parameters', /object/));
  });
});

describe('/v1/responses with a think block', () => {
  let server;
  let client;
  before(async () => {
    // Greedy, the tiny model writes only spaces; a fixed seed makes its samples repeatable.
    server = await startServer([...withQwenTemplate(), '--seed', '7']);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  it('returns the reasoning as a reasoning item, whole and streamed', async () => {
    const request = { input: 'Think first', max_output_tokens: 12, temperature: 1 };
    const whole = await client.responses.create(request);
    assert.deepEqual(whole.output.map((item) => item.type), ['reasoning']);
    const thought = whole.output[0].content[0].text;
    assert.ok(thought.length > 0);
    const events = await collect(await client.responses.create({ ...request, stream: true }));
    const deltas = events.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta);
    assert.equal(deltas.join(''), thought);
    assert.equal(events.at(-1).response.output[0].content[0].text, thought);
  });
});
