// helpers.cjs: what the package's own tests share: the fixture tape, the example agent, the blackbox CLI.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TAPE = path.join(__dirname, 'fixtures', 'weather.json');
const AGENT = path.join(ROOT, 'examples', 'node', 'weather_agent.js');
const QUESTION = "What's the weather in Paris and Lyon?";
const ANSWER = 'Paris: cloudy, 18°C. Lyon: rain, 15°C.';
const RUN_ID = JSON.parse(fs.readFileSync(TAPE, 'utf8')).id;

// The repository's own CLI unless the caller (tests/js, or you) says otherwise.
if (!process.env.BLACKBOX_BIN) {
  const venv = path.join(ROOT, '.venv', 'bin', 'blackbox');
  if (fs.existsSync(venv)) process.env.BLACKBOX_BIN = venv;
}

/** Run the blackbox CLI; { status, stdout, stderr }. */
function blackbox(args, options = {}) {
  const env = { ...process.env, ...(options.env || {}) };
  return spawnSync(process.env.BLACKBOX_BIN || 'blackbox', args, { encoding: 'utf8', env, timeout: 120000 });
}

/** The report the CLI prints for a replay: stderr from its first line on. */
function cliReport(stderr) {
  const at = stderr.search(/^replay of recorded run /m);
  return at === -1 ? null : stderr.slice(at).replace(/\s+$/, '');
}

/** A chat-completions body: what any OpenAI-compatible client sends. */
function chatBody(question = QUESTION) {
  return JSON.stringify({ model: 'gpt-4.1', messages: [{ role: 'user', content: question }] });
}

module.exports = { ROOT, TAPE, AGENT, QUESTION, ANSWER, RUN_ID, blackbox, cliReport, chatBody };
