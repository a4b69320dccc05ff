// A small real Node agent over the official `openai` npm package's Responses API, with a local get_weather tool.
//
//   node examples/node/responses_agent.js "What's the weather in Paris and Lyon?" [--stream]
//
// Unadapted to recording: a default `new OpenAI()` (OPENAI_API_KEY, https://api.openai.com/v1,
// Node's global fetch, which blackbox routes through its proxy with a --require preload).
// It keeps the whole history itself (output items echoed back with the tool outputs);
// --stream reads each turn through `client.responses.stream(...)`. Only the final answer
// goes to stdout; progress to stderr. Exit 0 on an answer, 1 on an API error, 2 when the
// model never finishes, 64 on bad usage.
'use strict';

const { OpenAI } = require('openai');

const MODEL = 'gpt-4.1';
const WEATHER = { paris: ['cloudy', 18], lyon: ['rain', 15], london: ['fog', 12], tokyo: ['clear', 26] };
const TOOLS = [
  {
    type: 'function',
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
    strict: true,
  },
];

function getWeather(args) {
  let city = '';
  try {
    city = String(JSON.parse(args || '{}').city ?? '');
  } catch {
    return JSON.stringify({ error: 'arguments are not JSON' });
  }
  const [forecast, celsius] = WEATHER[city.trim().toLowerCase()] || ['unknown', 0];
  return JSON.stringify({ city, forecast, celsius });
}

function textOf(response) {
  // The message items' output_text parts (a streamed final response has no output_text helper field).
  return response.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content)
    .filter((part) => part.type === 'output_text')
    .map((part) => part.text)
    .join('');
}

async function ask(client, input, stream) {
  const params = { model: MODEL, instructions: 'You are a weather agent.', input, tools: TOOLS };
  if (!stream) return client.responses.create(params);
  const runner = client.responses.stream(params);
  runner.on('response.output_text.delta', (event) => process.stderr.write(event.delta));
  return runner.finalResponse();
}

async function main() {
  const args = process.argv.slice(2);
  const stream = args.includes('--stream');
  const question = args.find((a) => !a.startsWith('--'));
  if (!question) {
    console.error('usage: node responses_agent.js "question" [--stream]');
    return 64;
  }
  const client = new OpenAI({ maxRetries: 0 });
  const input = [{ role: 'user', content: question }];
  for (let round = 0; round < 6; round++) {
    const response = await ask(client, input, stream);
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) {
      console.log(`answer: ${textOf(response)}`);
      return 0;
    }
    input.push(...response.output);
    for (const call of calls) {
      console.error(`tool ${call.name}(${call.arguments})`);
      input.push({ type: 'function_call_output', call_id: call.call_id, output: getWeather(call.arguments) });
    }
  }
  console.error('the model never finished');
  return 2;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`API error: ${err && err.message ? err.message : err}`);
    process.exit(1);
  },
);
