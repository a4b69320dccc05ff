// The Node example agent against its recording, under node:test (node --test examples/node-test/).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { replayTest, TapeMismatch } from '@blackbox-mitm/tape';
import agent from '../weather-agent.cjs';

const { AGENT, QUESTION, askWeather } = agent;
const TAPE = new URL('../../test/fixtures/weather.json', import.meta.url);

test('the weather agent follows its recording', async () => {
  const answer = await replayTest(TAPE, () => askWeather(QUESTION));
  assert.equal(answer, 'Paris: cloudy, 18°C. Lyon: rain, 15°C.');
});

test('a subprocess agent gets the tape through env()', async () => {
  await replayTest(TAPE, (tape) => {
    const run = spawnSync(process.execPath, [AGENT, QUESTION], { env: tape.env(), encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^Paris: cloudy/);
  });
});

test('a changed prompt is caught, and the report names the place', async () => {
  await assert.rejects(replayTest(TAPE, () => askWeather("What's the weather in Paris and Nice?")), (err) => {
    assert.ok(err instanceof TapeMismatch);
    assert.match(err.message, /message 0 \(user\): content differs at character 32/);
    assert.match(err.cause.message, /API error: 400/);
    return true;
  });
});
