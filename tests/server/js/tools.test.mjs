// Tool calls and reasoning through the official openai client: forced calls
// (tool_choice required or a named function) whose arguments a random-weight
// model writes valid against the schema, streamed call deltas, a tool-result
// turn, the 400s of bad tool requests, and a think block read as
// reasoning_content. The synth model's template has no tool format (the JSON
// convention); a second server runs a Qwen-style template with <tool_call>
// tags and a think block its prompt opens.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './server.mjs';
import { withQwenTemplate } from './templates.mjs';

const user = (content) => [{ role: 'user', content }];
const greedy = { temperature: 0, presence_penalty: 2, max_tokens: 200 };

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] },
        celsius: { type: 'boolean' },
        note: { type: 'string', maxLength: 8 },
      },
      required: ['city', 'celsius', 'note'],
    },
  },
};
const clock = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] },
  },
};

// Checks arguments against the schemas above (enum, boolean, maxLength, required).
function assertValid(tool, argumentsText) {
  const args = JSON.parse(argumentsText);
  const { properties, required } = tool.function.parameters;
  assert.deepEqual(Object.keys(args).sort(), [...required].sort());
  for (const [key, value] of Object.entries(args)) {
    const p = properties[key];
    if (p.enum) assert.ok(p.enum.includes(value), `${key}: ${value}`);
    if (p.type === 'boolean') assert.equal(typeof value, 'boolean');
    if (p.maxLength !== undefined) assert.ok(typeof value === 'string' && value.length <= p.maxLength);
  }
}

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

// Joins streamed call deltas as a client does, checking that each call's
// first delta carries its id and name and later ones only arguments.
function joinCalls(chunks) {
  const calls = [];
  for (const c of chunks) {
    for (const d of c.choices[0]?.delta?.tool_calls ?? []) {
      if (d.index === calls.length) {
        assert.ok(d.id?.startsWith('call_'));
        assert.equal(d.type, 'function');
        calls.push({ id: d.id, name: d.function.name, arguments: d.function.arguments ?? '' });
      } else {
        assert.ok(d.index < calls.length);
        assert.equal(d.id, undefined);
        assert.equal(d.function.name, undefined);
        calls[d.index].arguments += d.function.arguments;
      }
    }
  }
  return calls;
}

// A server for the describe block this is called in, started with extraArgs()
// before its tests and stopped after them; the object holds it and its client.
function serve(extraArgs) {
  const served = {};
  before(async () => {
    served.server = await startServer(extraArgs());
    served.client = new OpenAI({ baseURL: `${served.server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    assert.equal(await served.server.stop(), 0);
  });
  return served;
}

function suite(name, extraArgs) {
  describe(name, () => {
    const served = serve(extraArgs);

    it('forces a call that matches the schema (tool_choice required)', async () => {
      for (const seed of [1, 2, 3]) {
        const r = await served.client.chat.completions.create({
          messages: user('What is the weather?'), tools: [weather], tool_choice: 'required', seed, ...greedy, temperature: 1,
        });
        const { message, finish_reason } = r.choices[0];
        assert.equal(finish_reason, 'tool_calls');
        assert.equal(message.tool_calls.length, 1);
        assert.equal(message.tool_calls[0].type, 'function');
        assert.equal(message.tool_calls[0].function.name, 'get_weather');
        assertValid(weather, message.tool_calls[0].function.arguments);
      }
    });

    it('calls the function tool_choice names', async () => {
      const r = await served.client.chat.completions.create({
        messages: user('What time is it?'), tools: [weather, clock],
        tool_choice: { type: 'function', function: { name: 'get_time' } }, ...greedy,
      });
      const call = r.choices[0].message.tool_calls[0];
      assert.equal(call.function.name, 'get_time');
      assertValid(clock, call.function.arguments);
    });

    it('streams a call: one index, id and name once, arguments in pieces', async () => {
      const request = {
        messages: user('Weather in Oslo?'), tools: [weather], tool_choice: 'required', ...greedy,
      };
      const whole = await served.client.chat.completions.create(request);
      const chunks = await collect(await served.client.chat.completions.create({ ...request, stream: true }));
      const calls = joinCalls(chunks);
      assert.equal(calls.length, 1);
      assert.equal(calls[0].name, 'get_weather');
      const pieces = chunks.filter((c) => c.choices[0]?.delta?.tool_calls?.some((d) => d.function.arguments));
      assert.ok(pieces.length > 3, `arguments in ${pieces.length} pieces`);
      assertValid(weather, calls[0].arguments);
      assert.equal(calls[0].arguments, whole.choices[0].message.tool_calls[0].function.arguments);
      assert.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');
    });

    it('answers a turn after a tool result', async () => {
      const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "celsius": true, "note": ""}' } };
      const messages = [
        ...user('Weather in Paris?'),
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: '22 degrees, sunny' },
      ];
      const r = await served.client.chat.completions.create({ messages, tools: [weather], tool_choice: 'none', max_tokens: 8 });
      assert.equal(typeof r.choices[0].message.content, 'string');
      assert.equal(r.choices[0].message.tool_calls, undefined);
      const rendered = await (await fetch(`${served.server.url}/apply-template`, {
        method: 'POST', body: JSON.stringify({ messages, tools: [weather] }),
      })).json();
      assert.ok(rendered.prompt.includes('22 degrees, sunny'), rendered.prompt);
      assert.ok(rendered.prompt.includes('"name": "get_weather", "arguments": {"city": "Paris"'), rendered.prompt);
    });

    it('refuses bad tool requests with 400s that name the field', async () => {
      await assert.rejects(served.client.chat.completions.create({
        messages: user('x'), tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } },
      }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice' && /no tool is named 'nope'/.test(e.message));
      await assert.rejects(served.client.chat.completions.create({
        messages: user('x'), tools: [{ type: 'function', function: { name: 'f', parameters: 'none' } }],
      }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools[0].function.parameters');
      await assert.rejects(served.client.chat.completions.create({
        messages: [...user('x'), { role: 'tool', tool_call_id: 'call_9', content: '1' }], tools: [weather],
      }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages[1]');
      await assert.rejects(served.client.chat.completions.create({
        messages: user('x'), tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string', pattern: 'a+' } } } } }],
        tool_choice: 'required',
      }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools');
    });
  });
}

suite('tools with the JSON convention (a template without tools)', () => []);
suite('tools with <tool_call> tags', withQwenTemplate);

describe('reasoning', () => {
  const served = serve(withQwenTemplate);

  it('puts the think block in reasoning_content, whole and streamed', async () => {
    const request = { messages: user('Think first'), ...greedy, max_tokens: 12 };
    const whole = await served.client.chat.completions.create(request);
    const { message } = whole.choices[0];
    assert.ok(message.reasoning_content.length > 0);
    assert.equal(message.content, '');
    const chunks = await collect(await served.client.chat.completions.create({ ...request, stream: true }));
    const streamed = chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join('');
    assert.equal(streamed, message.reasoning_content);
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), '');
  });

  it('passes chat_template_kwargs to the template: enable_thinking false gives content', async () => {
    const whole = await served.client.chat.completions.create({
      messages: user('Answer at once'), ...greedy, max_tokens: 12, chat_template_kwargs: { enable_thinking: false },
    });
    const { message } = whole.choices[0];
    assert.ok(message.content.length > 0);
    assert.equal(message.reasoning_content, undefined);
  });
});
