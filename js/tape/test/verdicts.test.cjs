// The verdicts: a run that walks the tape resolves; one that diverges, stops early or overruns
// rejects with TapeMismatch carrying the CLI's own report, and what the agent threw as its cause.
'use strict';

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { test } = require('node:test');

const { replayTest, TapeMismatch } = require('..');
const { askWeather } = require('../examples/weather-agent.cjs');
const { AGENT, ANSWER, QUESTION, RUN_ID, TAPE, blackbox, chatBody, cliReport } = require('./helpers.cjs');

function runNode(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test('an agent that walks the recording gets its recorded answers, and replayTest returns what fn returned', async () => {
  const answer = await replayTest(TAPE, () => askWeather(QUESTION));
  assert.equal(answer, ANSWER);
});

test('the tape names its run, its proxy and the environment for a child process', async () => {
  await replayTest(TAPE, async (tape) => {
    assert.equal(tape.runId, RUN_ID);
    assert.equal(tape.cassette, TAPE);
    assert.match(tape.proxyUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    const env = tape.env({ PATH: process.env.PATH });
    assert.equal(env.HTTPS_PROXY, tape.proxyUrl);
    assert.equal(env.PATH, process.env.PATH);
    assert.match(env.NODE_OPTIONS, /--require \S*node_preload\.cjs/);
    assert.ok(env.NODE_EXTRA_CA_CERTS && env.SSL_CERT_FILE, 'the CA variables are set');
    const run = await runNode([AGENT, QUESTION], tape.env());
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), ANSWER);
  });
});

test('a diverging agent fails with the same report the blackbox CLI prints, and the refused call as its cause', async () => {
  const question = "What's the weather in Paris and Nice?";
  const err = await replayTest(TAPE, () => askWeather(question)).then(
    () => assert.fail('the replay should have failed'),
    (e) => e,
  );
  assert.ok(err instanceof TapeMismatch && err instanceof Error);
  assert.equal(err.name, 'TapeMismatch');
  assert.equal(err.verdict, 'diverged');
  assert.equal(err.status.run, RUN_ID);
  assert.equal(err.status.divergences, 1);
  assert.match(err.message, /message 0 \(user\): content differs at character 32/);
  assert.match(err.cause.message, /the weather agent exited 1: weather_agent: API error: 400 the agent diverged/);

  const cli = blackbox(['replay', TAPE, '--', process.execPath, AGENT, question]);
  assert.equal(cli.status, 1, cli.stderr);
  assert.equal(err.message, cliReport(cli.stderr));
});

test('an agent that stops early fails as incomplete, even though fn itself succeeded', async () => {
  // sequence: answers in order without comparing; one call of the two, then stop.
  const err = await replayTest(
    TAPE,
    async () => {
      const res = await fetch('https://api.openai.com/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
        body: chatBody('anything'),
      });
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.deepEqual(
        body.choices[0].message.tool_calls.map((c) => c.function.name),
        ['get_weather', 'get_weather'],
      );
    },
    { match: 'sequence' },
  ).then(
    () => assert.fail('the replay should have failed'),
    (e) => e,
  );
  assert.equal(err.verdict, 'incomplete');
  assert.equal(err.cause, undefined);
  assert.equal(
    err.message,
    [
      `replay of recorded run ${RUN_ID}: incomplete — the agent stopped before making every recorded model call`,
      '  model calls served: 1 of 2 (2 of 8 steps)',
      '  exhausted calls: 0',
      '  incomplete: 1 recorded call never asked for (model_input step 6)',
      '  divergences: 0',
    ].join('\n'),
  );
});

test('an agent that makes more calls than the tape holds fails as overran, with its error as the cause', async () => {
  const err = await replayTest(TAPE, async () => {
    await askWeather(QUESTION);
    await askWeather(QUESTION);
  }).then(
    () => assert.fail('the replay should have failed'),
    (e) => e,
  );
  assert.equal(err.verdict, 'overran');
  assert.equal(err.status.exhausted_calls, 1);
  assert.match(err.message, /^replay of recorded run \S+: overran — the agent made more model calls than the recording holds\n/);
  assert.match(err.cause.message, /it overran its recording/);
});

test('node:https requests are routed and trust the replay CA too', async () => {
  const https = require('node:https');
  const before = https.globalAgent;
  const answers = await replayTest(
    TAPE,
    async () => {
      const post = () =>
        new Promise((resolve, reject) => {
          const req = https.request(
            'https://api.openai.com/v1/chat/completions',
            { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer x' } },
            (res) => {
              let data = '';
              res.on('data', (d) => (data += d));
              res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(data) }));
            },
          );
          req.once('error', reject);
          req.end(chatBody());
        });
      return [await post(), await post()];
    },
    { match: 'sequence' },
  );
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200],
  );
  assert.equal(answers[1].body.choices[0].message.content, ANSWER);
  assert.equal(https.globalAgent, before, 'the global agent is put back');
});
