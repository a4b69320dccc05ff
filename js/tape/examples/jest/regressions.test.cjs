// Three regressions the tape catches, under jest. These tests FAIL on purpose: they show
// how jest reports a TapeMismatch (tests/js checks that message against the Python side's).
const path = require('node:path');
const { replayTest } = require('@blackbox-mitm/tape');
const { OpenAI } = require('openai');
const { QUESTION, askWeather } = require('../weather-agent.cjs');

const TAPE = path.join(__dirname, '..', '..', 'test', 'fixtures', 'weather.json');

test('fails on purpose: the prompt changed', async () => {
  await replayTest(TAPE, () => askWeather("What's the weather in Paris and Nice?"));
});

test('fails on purpose: the agent stops after one call', async () => {
  // sequence: the answers in order, without comparing
  await replayTest(TAPE, () => new OpenAI().chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: QUESTION }] }), {
    match: 'sequence',
  });
});

test('fails on purpose: the agent asks for more than the tape holds', async () => {
  await replayTest(TAPE, async () => {
    await askWeather(QUESTION);
    await askWeather(QUESTION);
  });
});
