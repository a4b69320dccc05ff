// A small real Node agent: a chat-completions tool loop over the official `openai` npm package with a local get_weather tool.
//
//   node examples/node/weather_agent.js "What's the weather in Paris and Lyon?" [--stream]
//
// Unadapted to recording: a default `new OpenAI()` (OPENAI_API_KEY, the real
// https://api.openai.com/v1, Node's global fetch). Node 20's fetch ignores
// HTTPS_PROXY, so blackbox loads its preload (blackbox_mitm/proxy/node_preload.cjs)
// with NODE_OPTIONS=--require. Only the final answer goes to stdout; progress goes
// to stderr. Exit status: 0 on a final answer, 1 on an API error, 2 when the model
// never finishes, 64 on bad usage.
'use strict';

const { OpenAI } = require('openai');

const MODEL = 'gpt-4.1';
const MAX_ROUNDS = 8;
const WEATHER = {
  paris: { forecast: 'cloudy', celsius: 18 },
  lyon: { forecast: 'rain', celsius: 15 },
  london: { forecast: 'fog', celsius: 12 },
  tokyo: { forecast: 'clear', celsius: 26 },
  berlin: { forecast: 'windy', celsius: 14 },
};
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
];

function getWeather(city) {
  const result = WEATHER[String(city).trim().toLowerCase()] || { error: `no weather data for ${city}` };
  return JSON.stringify({ city, ...result });
}

function runTool(name, args) {
  if (name !== 'get_weather') return JSON.stringify({ error: `unknown tool ${name}` });
  try {
    return getWeather(JSON.parse(args || '{}').city ?? '');
  } catch {
    return JSON.stringify({ error: 'arguments are not JSON' });
  }
}

async function ask(client, messages, stream) {
  if (!stream) {
    const completion = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    return completion.choices[0].message;
  }
  const runner = client.chat.completions.stream({ model: MODEL, messages, tools: TOOLS });
  runner.on('content', (delta) => process.stderr.write(delta));
  const completion = await runner.finalChatCompletion();
  process.stderr.write('\n');
  return completion.choices[0].message;
}

async function run(question, stream) {
  const client = new OpenAI();
  const messages = [
    { role: 'system', content: 'You are a weather assistant. Use get_weather for every city you are asked about.' },
    { role: 'user', content: question },
  ];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const message = await ask(client, messages, stream);
    if (!message.tool_calls || message.tool_calls.length === 0) {
      return message.content ?? message.refusal ?? '';
    }
    const calls = message.tool_calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
    messages.push({ role: 'assistant', content: message.content ?? null, tool_calls: calls });
    for (const call of calls) {
      const result = runTool(call.function.name, call.function.arguments);
      process.stderr.write(`tool ${call.function.name}(${call.function.arguments}) -> ${result}\n`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  const err = new Error(`no final answer after ${MAX_ROUNDS} model calls`);
  err.noFinalAnswer = true;
  throw err;
}

async function main(argv) {
  const stream = argv.includes('--stream');
  const positional = argv.filter((a) => a !== '--stream');
  if (positional.length !== 1) {
    process.stderr.write('usage: node weather_agent.js "question" [--stream]\n');
    return 64;
  }
  try {
    const answer = await run(positional[0], stream);
    process.stdout.write(answer + '\n');
    return 0;
  } catch (err) {
    if (err && err.noFinalAnswer) {
      process.stderr.write(`weather_agent: ${err.message}\n`);
      return 2;
    }
    // fetch failures hide the useful part (ECONNREFUSED, a refused CONNECT, a TLS error) in the cause chain.
    const reasons = [];
    for (let e = err; e && reasons.length < 5; e = e.cause) reasons.push(e.message || String(e));
    process.stderr.write(`weather_agent: API error: ${reasons.join(': ')}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
