// A small real Node agent: a Gemini function-calling loop over the official `@google/genai` npm package.
//
//   node examples/node/gemini_agent.js "What's the weather in Paris and Lyon?" [--stream]
//
// Unadapted to recording: a default `new GoogleGenAI({})` (the key from
// GEMINI_API_KEY / GOOGLE_API_KEY, the real https://generativelanguage.googleapis.com,
// Node's global fetch, which blackbox's preload routes through HTTPS_PROXY). It
// runs get_weather locally for each function call and sends the results back
// until the model answers in text. Only the answer goes to stdout. Exit status:
// 0 on an answer, 1 on an API error, 2 when the model never finishes, 64 on bad usage.
'use strict';

const { GoogleGenAI } = require('@google/genai');

const MODEL = 'gemini-2.5-flash';
const MAX_ROUNDS = 8;
const WEATHER = { paris: { forecast: 'cloudy', celsius: 18 }, lyon: { forecast: 'rain', celsius: 15 }, oslo: { forecast: 'snow', celsius: -3 } };
const CONFIG = {
  systemInstruction: 'Answer briefly.',
  tools: [
    {
      functionDeclarations: [
        {
          name: 'get_weather',
          description: 'Current weather for a city.',
          parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    },
  ],
};

function getWeather({ city }) {
  return { city, ...(WEATHER[String(city).toLowerCase()] || { forecast: 'unknown', celsius: null }) };
}

// One model call, streamed or not, as { content, calls, text }.
async function ask(ai, contents, stream) {
  if (!stream) {
    const response = await ai.models.generateContent({ model: MODEL, contents, config: CONFIG });
    return { content: response.candidates[0].content, calls: response.functionCalls || [], text: response.text || '' };
  }
  const parts = [];
  let text = '';
  for await (const chunk of await ai.models.generateContentStream({ model: MODEL, contents, config: CONFIG })) {
    parts.push(...(chunk.candidates?.[0]?.content?.parts || []));
    text += chunk.text || '';
  }
  const calls = parts.filter((p) => p.functionCall).map((p) => p.functionCall);
  return { content: { role: 'model', parts }, calls, text };
}

async function main() {
  const args = process.argv.slice(2);
  const stream = args.includes('--stream');
  const question = args.filter((a) => a !== '--stream')[0];
  if (!question) {
    process.stderr.write('usage: node gemini_agent.js QUESTION [--stream]\n');
    return 64;
  }
  const ai = new GoogleGenAI({});
  const contents = [{ role: 'user', parts: [{ text: question }] }];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const { content, calls, text } = await ask(ai, contents, stream);
    if (calls.length === 0) {
      process.stdout.write(`${text}\n`);
      return 0;
    }
    contents.push(content);
    const results = calls.map((call) => {
      process.stderr.write(`tool: get_weather(${JSON.stringify(call.args)})\n`);
      return { functionResponse: { id: call.id, name: call.name, response: getWeather(call.args || {}) } };
    });
    contents.push({ role: 'user', parts: results });
  }
  return 2;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`API error: ${err && err.message}\n`);
    process.exit(1);
  },
);
