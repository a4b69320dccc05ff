// weather-agent.cjs: the repository's Node example agent, run inside the test's own process.
//
// examples/node/weather_agent.js is a command-line program (the one the fixture
// cassette was recorded from). askWeather(question) evaluates that file, unchanged,
// in this process with the question as its argument, and resolves to what it prints
// on stdout, the final answer; it rejects with what it printed on stderr when it exits
// non-zero. Its model calls go through this process's own fetch, the official
// `openai` package's default, which is what replayTest routes. In your own suite you
// would import your agent's function instead.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');
const vm = require('node:vm');

const AGENT = path.resolve(__dirname, '..', '..', '..', 'examples', 'node', 'weather_agent.js');
const QUESTION = "What's the weather in Paris and Lyon?";

function askWeather(question, ...flags) {
  const source = fs.readFileSync(AGENT, 'utf8');
  const program = new vm.Script(`(function (exports, require, module, __filename, __dirname, process) {${source}\n})`, {
    filename: AGENT,
  }).runInThisContext();
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const shim = Object.create(process, {
      argv: { value: [process.execPath, AGENT, question, ...flags] },
      stdout: { value: { write: (text) => ((stdout += text), true) } },
      stderr: { value: { write: (text) => ((stderr += text), true) } },
      exitCode: {
        set(code) {
          if (code === 0) resolve(stdout.trim());
          else reject(new Error(`the weather agent exited ${code}: ${stderr.slice(Math.max(0, stderr.lastIndexOf('weather_agent: '))).trim()}`));
        },
      },
    });
    const module = { exports: {} };
    program(module.exports, createRequire(AGENT), module, AGENT, path.dirname(AGENT), shim);
  });
}

module.exports = { askWeather, AGENT, QUESTION };
