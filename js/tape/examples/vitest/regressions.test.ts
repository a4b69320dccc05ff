// Three regressions the tape catches, under vitest. These tests FAIL on purpose: they show
// how vitest reports a TapeMismatch (tests/js checks that message against the Python side's).
import { test } from 'vitest';
import { replayTest } from '@blackbox-mitm/tape';
import OpenAI from 'openai';
import { QUESTION, askWeather } from '../weather-agent.cjs';

const TAPE = new URL('../../test/fixtures/weather.json', import.meta.url);

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
