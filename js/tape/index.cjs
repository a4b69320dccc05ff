// @blackbox-mitm/tape: tape tests for Node and TypeScript agents (node:test, vitest, jest).
//
//   const { replayTest } = require('@blackbox-mitm/tape');
//   test('the agent follows its recording', () =>
//     replayTest('tapes/weather.json', async (tape) => { await runAgent(); }));
//
// replayTest replays the cassette strictly with the `blackbox` CLI while fn runs and
// throws TapeMismatch (the CLI's report as its message) when the agent left the path.
'use strict';

const { replayTest, Tape, DEFAULT_TIMEOUT_MS } = require('./lib/tape.cjs');
const { TapeMismatch, TapeError } = require('./lib/errors.cjs');
const { findBlackbox } = require('./lib/blackbox.cjs');

module.exports = { replayTest, Tape, TapeMismatch, TapeError, findBlackbox, DEFAULT_TIMEOUT_MS };
