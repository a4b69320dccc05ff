// A small real agent on @openai/agents (JS) over chat completions, with a zod tool (sent with strict: true).
//
//   node tests/e2e/clients/openai-agents-js/agent.mjs "What's the weather in Paris?"
//
// Unadapted to recording: the SDK's default OpenAI client (OPENAI_API_KEY, https://api.openai.com/v1, Node's
// global fetch, which blackbox routes through its proxy with a --require preload), tracing off (it would export
// to OpenAI's own endpoint), chat completions chosen with the SDK's setOpenAIAPI. Only the final answer goes
// to stdout. Exit 0 on an answer, 1 on an error, 64 on bad usage.
import { Agent, run, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';

const WEATHER = { paris: ['cloudy', 18], lyon: ['rain', 15] };

const getWeather = tool({
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    const [forecast, celsius] = WEATHER[city.trim().toLowerCase()] || ['unknown', 0];
    return JSON.stringify({ city, forecast, celsius });
  },
});

const question = process.argv[2];
if (!question) {
  console.error('usage: node agent.mjs QUESTION');
  process.exit(64);
}
setOpenAIAPI('chat_completions');
setTracingDisabled(true);
const agent = new Agent({ name: 'Weather', instructions: 'You are a weather agent.', model: 'gpt-4.1', tools: [getWeather] });
try {
  const result = await run(agent, question);
  console.log(result.finalOutput);
} catch (err) {
  console.error(`agent error: ${err.message}`);
  process.exit(1);
}
