// A small real Node agent on Amazon Bedrock: the official @anthropic-ai/bedrock-sdk with a local get_weather tool.
//
//   node tests/e2e/clients/bedrock-sdk/bedrock_agent.js "What's the weather in Paris and Lyon?" [--stream] [--model M]
//   node tests/e2e/clients/bedrock-sdk/bedrock_agent.js "What's the weather in Paris and Lyon?" --runs whole,stream [--model M]
//
// Unadapted to recording: a default `new AnthropicBedrock()` (AWS_REGION, AWS credentials
// signed with SigV4, or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK; the default host
// https://bedrock-runtime.{region}.amazonaws.com). `--stream` asks invoke-with-response-stream,
// whose AWS event-stream framing the SDK parses itself. Only the final answer goes to stdout.
// `--runs whole,stream` runs the agent once for each mode, one after another in this process (a new
// client each), each answer after a `--- run N ---` line, stopping at the first run that fails.
// Exit status: 0 on a final answer, 1 on an API error, 2 when the model never finishes.
'use strict';

const { AnthropicBedrock } = require('@anthropic-ai/bedrock-sdk');

const MODEL = 'us.anthropic.claude-sonnet-4-6-v1:0';
const WEATHER = { paris: { forecast: 'cloudy', celsius: 18 }, lyon: { forecast: 'rain', celsius: 15 } };
const TOOLS = [
  {
    name: 'get_weather',
    description: 'Current weather for a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

function getWeather(city) {
  return JSON.stringify({ city, ...(WEATHER[String(city).toLowerCase()] || { error: 'unknown city' }) });
}

async function ask(client, model, messages, stream) {
  const params = { model, max_tokens: 512, system: 'Use get_weather for every city.', messages, tools: TOOLS };
  if (!stream) return client.messages.create(params);
  return client.messages.stream(params).finalMessage();
}

async function run(question, stream, model) {
  const client = new AnthropicBedrock();
  const messages = [{ role: 'user', content: question }];
  for (let round = 0; round < 6; round++) {
    const message = await ask(client, model, messages, stream);
    const uses = message.content.filter((b) => b.type === 'tool_use');
    if (message.stop_reason !== 'tool_use' || uses.length === 0) {
      return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    }
    messages.push({ role: 'assistant', content: message.content });
    messages.push({
      role: 'user',
      content: uses.map((u) => {
        process.stderr.write(`tool ${u.name}(${JSON.stringify(u.input)})\n`);
        return { type: 'tool_result', tool_use_id: u.id, content: getWeather(u.input.city) };
      }),
    });
  }
  return null;
}

async function runOnce(question, stream, model) {
  try {
    const answer = await run(question, stream, model);
    if (answer === null) {
      process.stderr.write('bedrock_agent: the model never finished\n');
      return 2;
    }
    process.stdout.write(answer + '\n');
    return 0;
  } catch (err) {
    process.stderr.write(`bedrock_agent: API error: ${err && err.message ? err.message : err}\n`);
    return 1;
  }
}

async function main() {
  const args = process.argv.slice(2);
  const valued = ['--model', '--runs'].map((flag) => args.indexOf(flag)).filter((at) => at >= 0);
  const value = (flag, fallback) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : fallback);
  const model = value('--model', MODEL);
  const question = args.filter((a, i) => !a.startsWith('--') && !valued.includes(i - 1))[0];
  const runs = args.includes('--runs') ? value('--runs').split(',') : [args.includes('--stream') ? 'stream' : 'whole'];
  for (const [i, mode] of runs.entries()) {
    if (args.includes('--runs')) process.stdout.write(`--- run ${i + 1} ---\n`);
    const code = await runOnce(question, mode === 'stream', model);
    if (code !== 0) return code;
  }
  return 0;
}

main().then((code) => process.exit(code));
