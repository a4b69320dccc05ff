// tape.cjs: replayTest(cassette, fn, options) — one strict replay of a recorded run around one test function.
//
// It starts the replay with the blackbox CLI (blackbox.cjs), routes this process
// through it (route.cjs), calls fn(tape), puts the process back, ends the replay and
// reads the verdict: fn's value when the agent walked the recording exactly,
// otherwise a TapeMismatch whose message is the CLI's report (cause: what fn threw).
//
// record: 'missing' records a tape that does not exist yet (`blackbox record`), 'all' records every
// tape afresh, and 'divergent' also re-records one the agent left: fn runs a second time against a
// rewind of the tape (`blackbox fork --live-after N`: the recorded calls before the one the agent did
// not make as recorded are replayed, the rest go live), the new run takes the tape's place and the
// old one is kept as .history/<name>.<run id>.json beside it. With CI set, a tape is never recorded.
//
// The environment a tape sets is process-wide, so one process runs one tape at a
// time: an overlapping call is refused (TapeError TAPE_BUSY). Test files that run in
// parallel workers (vitest, jest, node --test) each get replays of their own.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
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
  const known = ['match', 'mask', 'pace', 'timeout', 'blackbox', 'confdir', 'hosts', 'cwd', 'record', 'mapRemote'];
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
  if (options.record !== undefined && !RECORD_MODES.includes(options.record)) {
    throw new TapeError('TAPE_USAGE', `replayTest: record is ${RECORD_MODES.map((m) => `'${m}'`).join(', ')} or absent, not ${JSON.stringify(options.record)}`);
  }
  const mapRemote = options.mapRemote === undefined ? [] : options.mapRemote;
  if (!Array.isArray(mapRemote) || !mapRemote.every((m) => typeof m === 'string' && m !== '')) {
    throw new TapeError('TAPE_USAGE', `replayTest: mapRemote is a list of mitmproxy map_remote specs, not ${JSON.stringify(mapRemote)}`);
  }
  return { ...options, match, hosts, mapRemote, mask: mask.map(maskPattern), timeout };
}

const RECORD_MODES = ['missing', 'divergent', 'all'];

/** What this call records: null (a replay), 'record' (a fresh recording) or 'divergent'; refused with CI set. */
function recordPlan(file, record, env) {
  const exists = fs.existsSync(file);
  if (!exists && !record) {
    throw new TapeError(
      'TAPE_USAGE',
      `tape ${file} does not exist; record it with \`blackbox record -o ${file} -- node your-agent.js ...\`, or pass record: 'missing'`,
    );
  }
  const plan = record === 'all' || !exists ? (record ? 'record' : null) : record === 'divergent' ? 'divergent' : null;
  if (plan && env.CI) {
    const what = plan === 'divergent' ? 'the tapes an agent left' : exists ? 'every tape' : `the missing tape ${file}`;
    const verb = exists ? 're-recording' : 'recording';
    throw new TapeError('TAPE_USAGE', `replayTest: CI is set: ${verb} ${what} in CI is refused; record on a developer machine (record: '${record}')`);
  }
  return plan;
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

/** One run of fn under the CLI (opts.action: replay, record or fork); { outcome, verdict }. */
async function runOnce(file, fn, opts) {
  const launched = { ...process.env };
  const replay = await startReplay(file, { ...opts, env: launched, cwd: opts.cwd || process.cwd(), startTimeout: START_TIMEOUT_MS });
  const delta = envDelta(launched, replay.env);
  let outcome;
  try {
    const route = activate(delta, replay.env);
    try {
      const tape = new Tape({ cassette: file, match: opts.match, runId: fs.existsSync(file) ? readRunId(file) : null, replay, delta });
      outcome = await runWithin(fn, tape, opts.timeout);
    } finally {
      route.restore();
    }
  } catch (err) {
    replay.kill();
    throw err;
  }
  if ((opts.action || 'replay') === 'replay') return { outcome, verdict: await replay.stop() };
  try {
    return { outcome, verdict: await replay.stop(Boolean(outcome.threw)) };
  } catch (err) {
    if (err instanceof TapeError) return { outcome, verdict: { ok: false, report: err.message, status: null } };
    throw err;
  }
}

/** The --live-after step of a rewind from the first recorded call the agent did not make as recorded (-1: all live). */
function rewindPoint(file, status) {
  const steps = readTrace(file).steps;
  const first = status && status.first_divergence;
  const incomplete = ((status && status.incomplete) || []).filter(Number.isInteger);
  let parted = steps.length;
  if (first && Number.isInteger(first.step)) parted = first.step;
  else if (incomplete.length) parted = Math.min(...incomplete);
  let point = -1;
  for (const step of steps) if (step.type === 'model_output' && step.index < parted) point = Math.max(point, step.index);
  return point;
}

function splitName(file) {
  const name = path.basename(file);
  const at = name.indexOf('.json');
  return at === -1 ? { base: name, ext: '' } : { base: name.slice(0, at), ext: name.slice(at) };
}

function readTrace(file) {
  const { ext } = splitName(file);
  if (ext !== '.json' && ext !== '.json.gz') {
    throw new TapeError('TAPE_USAGE', `replayTest: record: 'divergent' re-records a .json or .json.gz tape, not ${file}`);
  }
  let data = fs.readFileSync(file);
  if (ext === '.json.gz') data = zlib.gunzipSync(data);
  return JSON.parse(data.toString('utf8'));
}

/** The new run in the tape's place (gzipped as it was); the old tape kept in .history/ beside it. */
function install(file, staged, runId) {
  const { base, ext } = splitName(file);
  const history = path.join(path.dirname(file), '.history');
  fs.mkdirSync(history, { recursive: true });
  const kept = path.join(history, `${base}.${runId}${ext}`);
  const data = fs.readFileSync(staged);
  const next = `${staged}.next`;
  fs.writeFileSync(next, ext === '.json.gz' ? zlib.gzipSync(data) : data);
  fs.renameSync(file, kept);
  fs.renameSync(next, file);
  fs.rmSync(staged, { force: true });
  return kept;
}

/** record: 'divergent' after a mismatch: fn again against the tape rewound to where the agent parted. */
async function rerecord(file, fn, opts, first) {
  const liveAfter = rewindPoint(file, first.verdict.status);
  const runId = readRunId(file);
  const { base } = splitName(file);
  const output = path.join(path.dirname(file), `.${base}.update.json`);
  let second;
  try {
    second = await runOnce(file, fn, { ...opts, action: 'fork', liveAfter, output });
  } catch (err) {
    fs.rmSync(output, { force: true });
    throw err;
  }
  if (second.outcome.threw || !second.verdict.ok || !fs.existsSync(output)) {
    fs.rmSync(output, { force: true });
    if (second.outcome.threw) throw second.outcome.error;
    throw new TapeError('TAPE_STOP', `replayTest: tape ${file} was not re-recorded: ${second.verdict.report || 'the rewound run wrote no tape'}`);
  }
  install(file, output, runId);
  return second.outcome.value;
}

/**
 * Run fn(tape) against a strict replay of cassette; resolve to what fn returned.
 * Rejects with TapeMismatch when the agent diverged, overran or stopped early
 * (unless record: 'divergent' re-records it).
 */
async function replayTest(cassette, fn, options = {}) {
  if (typeof fn !== 'function') throw new TapeError('TAPE_USAGE', 'replayTest(cassette, fn): fn must be a function that runs the agent');
  const opts = checkOptions(options || {});
  const file = cassettePath(cassette);
  const plan = recordPlan(file, opts.record, process.env);
  const release = claim(file);
  try {
    const run = { ...opts, bin: findBlackbox(opts.blackbox), action: plan === 'record' ? 'record' : 'replay' };
    const first = await runOnce(file, fn, run);
    if (plan === 'record') {
      if (first.outcome.threw) throw first.outcome.error;
      if (!first.verdict.ok) throw new TapeError('TAPE_STOP', `replayTest: tape ${file} was not recorded: ${first.verdict.report}`);
      return first.outcome.value;
    }
    if (!first.verdict.ok) {
      if (plan === 'divergent') return await rerecord(file, fn, run, first);
      throw new TapeMismatch(first.verdict.report, { status: first.verdict.status, cause: first.outcome.threw ? first.outcome.error : undefined });
    }
    if (first.outcome.threw) throw first.outcome.error;
    return first.outcome.value;
  } finally {
    release();
  }
}

module.exports = { replayTest, Tape, DEFAULT_TIMEOUT_MS, START_TIMEOUT_MS, maskPattern, rewindPoint };
