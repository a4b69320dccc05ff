// The Node example agent against its recording, under vitest: every test here passes.
import { spawnSync } from 'node:child_process';
import { expect, test } from 'vitest';
import { replayTest, TapeMismatch } from '@blackbox-mitm/tape';
import { AGENT, QUESTION, askWeather } from '../weather-agent.cjs';

const TAPE = new URL('../../test/fixtures/weather.json', import.meta.url);

test('the weather agent follows its recording', async () => {
  // every model call is answered from the tape: no network, no key
  const answer = await replayTest(TAPE, () => askWeather(QUESTION));
  expect(answer).toBe('Paris: cloudy, 18°C. Lyon: rain, 15°C.');
});

test('a subprocess agent gets the tape through env()', async () => {
  await replayTest(TAPE, (tape) => {
    const run = spawnSync(process.execPath, [AGENT, QUESTION], { env: tape.env(), encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^Paris: cloudy/);
  });
});

test('a changed prompt is caught, and the report names the place', async () => {
  const run = replayTest(TAPE, () => askWeather("What's the weather in Paris and Nice?"));
  await expect(run).rejects.toBeInstanceOf(TapeMismatch);
  await expect(run).rejects.toThrow(
    [
      "the agent diverged from recorded run weather-0b34e55a at step 0:",
      '  message 0 (user): content differs at character 32',
      '    recorded: "What\'s the weather in Paris and Lyon?"',
      '    got:      "What\'s the weather in Paris and Nice?"',
    ].join('\n'),
  );
  // the agent's own error, from the refused call, is the cause
  await expect(run).rejects.toHaveProperty('cause.message', expect.stringContaining('API error: 400'));
});
