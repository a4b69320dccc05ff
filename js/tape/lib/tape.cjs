// tape.cjs: replayTest(cassette, fn, options) — one strict replay of a recorded run around one test function.
//
// It starts the replay with the blackbox CLI (blackbox.cjs), routes this process
// through it (route.cjs), calls fn(tape), puts the process back, ends the replay and
// reads the verdict: fn's value when the agent walked the recording exactly,
// otherwise a TapeMismatch whose message is the CLI's report (cause: what fn threw).
//
// The environment a tape sets is process-wide, so one process runs one tape at a
// time: an overlapping call is refused (TapeError TAPE_BUSY). Test files that run in
// parallel workers (vitest, jest, node --test) each get replays of their own.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { fileURLToPath } = require('node:url');

const { TapeError, TapeMismatch } = require('./errors.cjs');
const { findBlackbox, readRunId, startReplay } = require('./blackbox.cjs');
const { activate, applyDelta, envDelta, MAIN } = require('./route.cjs');

const ACTIVE = Symbol.for('@blackbox-mitm/tape.active');
const DEFAULT_TIMEOUT_MS = 120000; // how long fn may run
const START_TIMEOUT_MS = 60000; // how long blackbox may take to start the replay

/** What fn is handed: the running replay. */
class Tape {
  constructor({ cassette, match, runId, replay, delta }) {
    this.cassette = cassette;
    this.match = match;
    this.runId = runId;
    this.proxyUrl = replay.proxyUrl;
    this._delta = delta;
  }

  /** The environment for a child process agent: base (default process.env) plus the tape's variables. */
  env(base) {
    return applyDelta(base || process.env, this._delta);
  }
}

function cassettePath(cassette) {
  if (cassette instanceof URL) return fileURLToPath(cassette);
  if (typeof cassette === 'string' && cassette.startsWith('file:')) return fileURLToPath(cassette);
  if (typeof cassette !== 'string' || cassette === '') {
    throw new TapeError('TAPE_USAGE', `replayTest needs the cassette's path (a string or file: URL), not ${String(cassette)}`);
  }
  return path.resolve(cassette);
}

/** A mask for the CLI (a Python regular expression): a RegExp's i, m and s flags become inline flags. */
function maskPattern(mask) {
  if (!(mask instanceof RegExp)) return mask;
  const flags = [...mask.flags].filter((f) => 'ims'.includes(f)).join('');
  return flags ? `(?${flags})${mask.source}` : mask.source;
}

function checkOptions(options) {
  const known = ['match', 'mask', 'pace', 'timeout', 'blackbox', 'confdir', 'hosts', 'cwd'];
  const unknown = Object.keys(options).filter((k) => !known.includes(k));
  if (unknown.length) {
    throw new TapeError('TAPE_USAGE', `replayTest: unknown option ${unknown.join(', ')}; the options are ${known.join(', ')}`);
  }
  const match = options.match === undefined ? 'strict' : options.match;
  if (match !== 'strict' && match !== 'sequence') {
    throw new TapeError('TAPE_USAGE', `replayTest: match must be 'strict' or 'sequence', not ${JSON.stringify(match)}`);
  }
  const mask = options.mask === undefined ? [] : [].concat(options.mask);
  for (const m of mask) {
    if (typeof m !== 'string' && !(m instanceof RegExp)) {
      throw new TapeError('TAPE_USAGE', `replayTest: each mask is a regular expression (a string or RegExp), not ${String(m)}`);
    }
  }
  const pace = options.pace;
  if (pace !== undefined && pace !== 'recorded' && !(typeof pace === 'number' && pace > 0)) {
    throw new TapeError('TAPE_USAGE', `replayTest: pace is 'recorded' or a positive factor (0.1 = ten times faster), not ${String(pace)}`);
  }
  const hosts = options.hosts === undefined ? [] : options.hosts;
  if (!Array.isArray(hosts) || !hosts.every((h) => typeof h === 'string' && h !== '')) {
    throw new TapeError('TAPE_USAGE', `replayTest: hosts is a list of host names, not ${JSON.stringify(hosts)}`);
  }
  const timeout = options.timeout === undefined ? DEFAULT_TIMEOUT_MS : options.timeout;
  if (!(typeof timeout === 'number' && timeout > 0)) {
    throw new TapeError('TAPE_USAGE', `replayTest: timeout is a number of milliseconds, not ${String(timeout)}`);
  }
  return { ...options, match, hosts, mask: mask.map(maskPattern), timeout };
}

function claim(cassette) {
  const running = MAIN[ACTIVE];
  if (running) {
    throw new TapeError(
      'TAPE_BUSY',
      `replayTest(${cassette}) was called while replayTest(${running}) is still running in this process; ` +
        'a tape points the whole process (its environment, fetch and node:https) at one replay, so tape tests ' +
        'in one process must run one at a time: run them sequentially (no test.concurrent, no { concurrency }) ' +
        'or in separate test files, which the runners give workers of their own',
    );
  }
  MAIN[ACTIVE] = cassette;
  return () => {
    if (MAIN[ACTIVE] === cassette) delete MAIN[ACTIVE];
  };
}

/** fn's outcome, or a TapeError after the deadline (fn cannot be cancelled; the replay is ended under it). */
async function runWithin(fn, tape, timeout) {
  let timer;
  const expired = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ timedOut: true }), timeout);
  });
  const ran = (async () => fn(tape))().then(
    (value) => ({ value }),
    (error) => ({ error, threw: true }),
  );
  const outcome = await Promise.race([ran, expired]);
  clearTimeout(timer);
  if (outcome.timedOut) {
    return {
      threw: true,
      error: new TapeError('TAPE_TIMEOUT', `replayTest: the test function had not finished after ${timeout} ms (the timeout option); the replay was ended`),
    };
  }
  return outcome;
}

/**
 * Run fn(tape) against a strict replay of cassette; resolve to what fn returned.
 * Rejects with TapeMismatch when the agent diverged, overran or stopped early.
 */
async function replayTest(cassette, fn, options = {}) {
  if (typeof fn !== 'function') throw new TapeError('TAPE_USAGE', 'replayTest(cassette, fn): fn must be a function that runs the agent');
  const opts = checkOptions(options || {});
  const file = cassettePath(cassette);
  if (!fs.existsSync(file)) {
    throw new TapeError('TAPE_USAGE', `tape ${file} does not exist; record it with \`blackbox record -o ${file} -- node your-agent.js ...\``);
  }
  const release = claim(file);
  try {
    const bin = findBlackbox(opts.blackbox);
    const launched = { ...process.env };
    const replay = await startReplay(file, { ...opts, bin, env: launched, cwd: opts.cwd || process.cwd(), startTimeout: START_TIMEOUT_MS });
    const delta = envDelta(launched, replay.env);
    let outcome;
    try {
      const route = activate(delta, replay.env);
      try {
        const tape = new Tape({ cassette: file, match: opts.match, runId: readRunId(file), replay, delta });
        outcome = await runWithin(fn, tape, opts.timeout);
      } finally {
        route.restore();
      }
    } catch (err) {
      replay.kill();
      throw err;
    }
    const verdict = await replay.stop();
    if (!verdict.ok) {
      throw new TapeMismatch(verdict.report, { status: verdict.status, cause: outcome.threw ? outcome.error : undefined });
    }
    if (outcome.threw) throw outcome.error;
    return outcome.value;
  } finally {
    release();
  }
}

module.exports = { replayTest, Tape, DEFAULT_TIMEOUT_MS, START_TIMEOUT_MS, maskPattern };
