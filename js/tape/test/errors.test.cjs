// What replayTest refuses, and what it puts back: missing blackbox or tape, bad options,
// overlapping calls, timeouts; the environment, fetch and node:https after a tape.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { test } = require('node:test');

const { replayTest, TapeError, TapeMismatch, findBlackbox } = require('..');
const { askWeather } = require('../examples/weather-agent.cjs');
const { ANSWER, QUESTION, TAPE, blackbox } = require('./helpers.cjs');

async function rejection(promise) {
  return promise.then(
    () => assert.fail('expected a rejection'),
    (e) => e,
  );
}

test('without blackbox on PATH or in BLACKBOX_BIN, it says what to install', async () => {
  assert.throws(() => findBlackbox(undefined, { PATH: os.tmpdir() }), (err) => {
    assert.ok(err instanceof TapeError);
    assert.equal(err.code, 'BLACKBOX_NOT_FOUND');
    assert.match(err.message, /needs the `blackbox` command, and it is not on PATH; install the blackbox CLI \(the Python package blackbox-mitm/);
    assert.match(err.message, /set BLACKBOX_BIN/);
    return true;
  });
  const err = await rejection(replayTest(TAPE, () => {}, { blackbox: path.join(os.tmpdir(), 'no-such-blackbox') }));
  assert.equal(err.code, 'BLACKBOX_NOT_FOUND');
  assert.match(err.message, /the blackbox option names \S+no-such-blackbox, which is not an executable file/);
});

test('finds blackbox on PATH', () => {
  const dir = path.dirname(process.env.BLACKBOX_BIN);
  assert.equal(findBlackbox(undefined, { PATH: `${os.tmpdir()}${path.delimiter}${dir}` }), path.join(dir, 'blackbox'));
});

test('a tape that does not exist is named, with how to record it', async () => {
  const missing = path.join(os.tmpdir(), 'no-such-tape.json');
  const err = await rejection(replayTest(missing, () => assert.fail('fn must not run')));
  assert.equal(err.code, 'TAPE_USAGE');
  assert.equal(err.message, `tape ${missing} does not exist; record it with \`blackbox record -o ${missing} -- node your-agent.js ...\`, or pass record: 'missing'`);
});

test('a cassette that does not verify is refused by blackbox, and its words are passed on', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tape-test-'));
  const broken = path.join(dir, 'broken.json');
  const trace = JSON.parse(fs.readFileSync(TAPE, 'utf8'));
  trace.steps[0].payload.messages[0].content = 'tampered';
  fs.writeFileSync(broken, JSON.stringify(trace));
  const err = await rejection(replayTest(broken, () => assert.fail('fn must not run')));
  assert.equal(err.code, 'TAPE_START');
  assert.match(err.message, /^blackbox could not start the replay \(exit 2\):\n/);
  assert.match(err.message, /hash/i);
  fs.rmSync(dir, { recursive: true });
});

test('bad options are usage errors, before anything starts', async () => {
  const cases = [
    [{ match: 'loose' }, /match must be 'strict' or 'sequence', not "loose"/],
    [{ pace: -1 }, /pace is 'recorded' or a positive factor/],
    [{ timeout: 'soon' }, /timeout is a number of milliseconds/],
    [{ mask: [42] }, /each mask is a regular expression/],
    [{ hosts: 'llm.internal' }, /hosts is a list of host names, not "llm.internal"/],
    [{ mode: 'strict' }, /unknown option mode; the options are match, mask, pace, timeout/],
  ];
  for (const [options, message] of cases) {
    const err = await rejection(replayTest(TAPE, () => assert.fail('fn must not run'), options));
    assert.equal(err.code, 'TAPE_USAGE');
    assert.match(err.message, message);
  }
  const err = await rejection(replayTest(TAPE, 'not a function'));
  assert.match(err.message, /fn must be a function/);
});

test('overlapping replayTest calls in one process are refused with the reason; the first goes on', async () => {
  let second;
  const answer = await replayTest(TAPE, async () => {
    second = await rejection(replayTest(TAPE, () => assert.fail('the second fn must not run')));
    return askWeather(QUESTION);
  });
  assert.equal(answer, ANSWER);
  assert.equal(second.code, 'TAPE_BUSY');
  assert.match(second.message, /is still running in this process; a tape points the whole process .* must run one at a time/);
  // Once the first is over, the next may start.
  assert.equal(await replayTest(TAPE, () => askWeather(QUESTION)), ANSWER);
});

test('separate processes replay at the same time, each with its own proxy', async () => {
  const script = `
    const { replayTest } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const { askWeather } = require(${JSON.stringify(path.resolve(__dirname, '..', 'examples', 'weather-agent.cjs'))});
    replayTest(${JSON.stringify(TAPE)}, async (tape) => [tape.proxyUrl, await askWeather(${JSON.stringify(QUESTION)})])
      .then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e.message); process.exitCode = 1; });`;
  const run = () =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.once('exit', (code) => resolve({ code, out }));
    });
  const [a, b] = await Promise.all([run(), run()]);
  assert.equal(a.code, 0);
  assert.equal(b.code, 0);
  const [urlA, answerA] = JSON.parse(a.out);
  const [urlB, answerB] = JSON.parse(b.out);
  assert.notEqual(urlA, urlB);
  assert.equal(answerA, ANSWER);
  assert.equal(answerB, ANSWER);
});

test('a test function that never finishes is cut off at the timeout and judged', async () => {
  const err = await rejection(replayTest(TAPE, () => new Promise(() => {}), { timeout: 1500 }));
  assert.ok(err instanceof TapeMismatch);
  assert.equal(err.verdict, 'incomplete');
  assert.equal(err.cause.code, 'TAPE_TIMEOUT');
  assert.match(err.cause.message, /had not finished after 1500 ms \(the timeout option\); the replay was ended/);
});

test('after a tape, the environment, fetch and node:https are as they were', async () => {
  const key = Symbol.for('undici.globalDispatcher.1');
  await fetch('data:,');
  const dispatcher = globalThis[key];
  const agent = https.globalAgent;
  const env = { ...process.env };
  let inside;
  await replayTest(TAPE, (tape) => {
    inside = { proxy: process.env.HTTPS_PROXY, url: tape.proxyUrl, dispatcher: globalThis[key], agent: https.globalAgent };
    return askWeather(QUESTION);
  });
  assert.equal(inside.proxy, inside.url);
  assert.notEqual(inside.dispatcher, dispatcher);
  assert.notEqual(inside.agent, agent);
  assert.deepEqual({ ...process.env }, env);
  assert.equal(globalThis[key], dispatcher);
  assert.equal(https.globalAgent, agent);
});

test('a RegExp mask reaches the CLI as a Python pattern, its i, m and s flags inline', () => {
  const { maskPattern } = require('../lib/tape.cjs');
  assert.equal(maskPattern(/agentId: \w+/), 'agentId: \\w+');
  assert.equal(maskPattern(/billing.*$/gims), '(?ims)billing.*$');
  assert.equal(maskPattern('\\d{4}'), '\\d{4}');
});

test('mask and pace go to the CLI when given; a blackbox without them says so', async () => {
  const help = blackbox(['replay', '--help']).stdout;
  for (const [option, value, flag] of [
    ['mask', ['Paris|Nice'], '--mask'],
    ['pace', 0.01, '--pace'],
  ]) {
    const run = replayTest(TAPE, () => askWeather("What's the weather in Paris and Lyon?"), { [option]: value });
    if (help.includes(flag)) {
      assert.equal(await run, ANSWER, `${flag} is accepted`);
    } else {
      const err = await rejection(run);
      assert.equal(err.code, 'BLACKBOX_TOO_OLD');
      assert.match(err.message, new RegExp(`the \`${option}\` option needs a blackbox whose \`replay\` accepts ${flag}`));
    }
  }
});
