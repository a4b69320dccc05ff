// record-modes.cjs: replayTest's record option against a live (fake) provider; run by tests/js/test_js_tape_runners.py.
//
// Not a *.test.cjs file: it needs the provider the Python test starts, named in
// BLACKBOX_TEST_MAP_REMOTE (a JSON list of map_remote specs), and a scratch folder, BLACKBOX_TEST_DIR.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { test } = require('node:test');

const { replayTest, TapeError, TapeMismatch } = require('..');
const { askWeather } = require('../examples/weather-agent.cjs');
const { ANSWER, QUESTION, TAPE } = require('./helpers.cjs');

const mapRemote = JSON.parse(process.env.BLACKBOX_TEST_MAP_REMOTE || '[]');
const DIR = process.env.BLACKBOX_TEST_DIR;
const CHANGED = "What's the weather in Paris and Tokyo?";

function copyOfFixture(name) {
  const file = path.join(DIR, name);
  fs.copyFileSync(TAPE, file);
  return file;
}

const read = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('expected a rejection');
}

test("record: 'missing' records a tape that does not exist, and then replays it", async () => {
  const file = path.join(DIR, 'missing.json');
  assert.equal(await replayTest(file, () => askWeather(QUESTION), { record: 'missing', mapRemote }), ANSWER);
  const run = read(file);
  assert.equal(run.steps.at(-1).payload.event, 'run_completed');
  const bytes = fs.readFileSync(file);
  assert.equal(await replayTest(file, () => askWeather(QUESTION), { record: 'missing', mapRemote }), ANSWER);
  assert.deepEqual(fs.readFileSync(file), bytes, 'an existing tape is replayed, not recorded');
});

test("record: 'divergent' leaves a tape the agent walks byte for byte", async () => {
  const file = copyOfFixture('walked.json');
  const bytes = fs.readFileSync(file);
  assert.equal(await replayTest(file, () => askWeather(QUESTION), { record: 'divergent', mapRemote }), ANSWER);
  assert.deepEqual(fs.readFileSync(file), bytes);
  assert.ok(!fs.existsSync(path.join(DIR, '.history', `walked.${read(file).id}.json`)));
});

test("record: 'divergent' re-records a tape the agent left, the old one kept as its parent", async () => {
  const file = copyOfFixture('left.json');
  const old = read(file);
  const mismatch = await rejection(replayTest(file, () => askWeather(CHANGED)));
  assert.ok(mismatch instanceof TapeMismatch, 'without record, a mismatch');
  const answer = await replayTest(file, () => askWeather(CHANGED), { record: 'divergent', mapRemote });
  assert.match(answer, /Tokyo/);
  const run = read(file);
  assert.equal(run.parentId, old.id);
  assert.notEqual(run.id, old.id);
  assert.equal(run.steps[0].payload.messages[0].content, CHANGED);
  assert.deepEqual(fs.readFileSync(path.join(DIR, '.history', `left.${old.id}.json`)), fs.readFileSync(TAPE));
  assert.equal(await replayTest(file, () => askWeather(CHANGED)), answer, 'the new tape replays with no provider option');
});

test("record: 'all' records an existing tape afresh", async () => {
  const file = copyOfFixture('all.json');
  const old = read(file);
  assert.equal(await replayTest(file, () => askWeather(QUESTION), { record: 'all', mapRemote }), ANSWER);
  assert.notEqual(read(file).id, old.id);
});

test('with CI set nothing is recorded, and a bad record mode is named', async () => {
  const file = copyOfFixture('ci.json');
  const bytes = fs.readFileSync(file);
  process.env.CI = 'true';
  try {
    for (const record of ['divergent', 'all']) {
      const err = await rejection(replayTest(file, () => assert.fail('fn must not run'), { record, mapRemote }));
      assert.ok(err instanceof TapeError && err.code === 'TAPE_USAGE');
      assert.match(err.message, /CI is set/);
    }
    const missing = await rejection(replayTest(path.join(DIR, 'nope.json'), () => assert.fail('fn must not run'), { record: 'missing' }));
    assert.match(missing.message, /CI is set: recording the missing tape/);
    assert.equal(await replayTest(file, () => askWeather(QUESTION), { record: 'missing' }), ANSWER, 'an existing tape replays in CI');
  } finally {
    delete process.env.CI;
  }
  assert.deepEqual(fs.readFileSync(file), bytes);
  const bad = await rejection(replayTest(file, () => assert.fail('fn must not run'), { record: 'yes' }));
  assert.match(bad.message, /record is 'missing', 'divergent', 'all' or absent, not "yes"/);
});
