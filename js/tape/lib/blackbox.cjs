// blackbox.cjs: one strict replay of a cassette, served by the `blackbox` CLI.
//
// startReplay() runs `blackbox replay CASSETTE [options] -- node holder.cjs` with the
// kernel's choice of loopback port. The replay is ready when the holder prints the
// environment blackbox gives an agent (see holder.cjs); that environment names the
// proxy, the CA and the Node preload. replay.stop() closes the holder's stdin, so
// the run ends, and reads the verdict: blackbox exits 0 when the agent walked the
// recording exactly, and otherwise prints its report on stderr (the same text as
// the Python side's TapeMismatch) after writing the status as JSON (--report).
//
// The options go to the CLI as they are: --match, --mask (repeatable), --pace,
// --confdir, --host. The CLI reads the project configuration ([tool.blackbox] in
// pyproject.toml, or blackbox.toml) itself, from the working directory up.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { spawn, spawnSync } = require('node:child_process');

const { TapeError } = require('./errors.cjs');

const HOLDER = path.join(__dirname, 'holder.cjs');
const REPORT_HEAD = /^replay of recorded run /m;
const STOP_GRACE_MS = 30000;

const INSTALL_HINT =
  'install the blackbox CLI (the Python package blackbox-mitm: `pip install blackbox-mitm`, ' +
  'or `bash scripts/setup` in its repository, which makes .venv/bin/blackbox) and put it on PATH, ' +
  'or set BLACKBOX_BIN (or the `blackbox` option) to its path';

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The `blackbox` executable: the option, else $BLACKBOX_BIN, else the first on PATH. */
function findBlackbox(explicit, env = process.env) {
  const named = explicit || env.BLACKBOX_BIN;
  if (named) {
    const where = explicit ? 'the blackbox option' : 'BLACKBOX_BIN';
    if (!isExecutable(named)) {
      throw new TapeError('BLACKBOX_NOT_FOUND', `${where} names ${named}, which is not an executable file; ${INSTALL_HINT}`);
    }
    return named;
  }
  const names = process.platform === 'win32' ? ['blackbox.exe', 'blackbox.cmd', 'blackbox'] : ['blackbox'];
  for (const dir of (env.PATH || '').split(path.delimiter).filter(Boolean)) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  throw new TapeError('BLACKBOX_NOT_FOUND', `replayTest needs the \`blackbox\` command, and it is not on PATH; ${INSTALL_HINT}`);
}

/** The run id, from the start of the cassette (the top-level "id" of trace format v2). */
function readRunId(cassette) {
  let data = fs.readFileSync(cassette);
  if (data[0] === 0x1f && data[1] === 0x8b) data = zlib.gunzipSync(data);
  const head = /^\s*\{[^[]*?"id"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(data.subarray(0, 65536).toString('utf8'));
  if (head) return JSON.parse(`"${head[1]}"`);
  try {
    const id = JSON.parse(data.toString('utf8')).id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null; // blackbox says what is wrong with it
  }
}

/**
 * The CLI's arguments. opts.action: 'replay' (the default), 'record' (a fresh recording of the cassette) or
 * 'fork' (a rewind: opts.liveAfter, the child written to opts.output).
 */
function cliArgs(cassette, reportFile, opts) {
  // --flag=value: a value that starts with '-' (a mask, say) stays a value.
  const action = opts.action || 'replay';
  let args;
  if (action === 'record') args = ['record', '-o', cassette, '--overwrite'];
  else if (action === 'fork') args = ['fork', cassette, `--live-after=${opts.liveAfter}`, '-o', opts.output, '--overwrite', `--match=${opts.match}`];
  else args = ['replay', cassette, `--match=${opts.match}`, `--report=${reportFile}`];
  if (opts.confdir) args.push(`--confdir=${opts.confdir}`);
  for (const host of opts.hosts || []) args.push(`--host=${host}`);
  if (action !== 'record') {
    for (const mask of opts.mask || []) args.push(`--mask=${mask}`);
    if (opts.pace !== undefined && opts.pace !== null) args.push(`--pace=${opts.pace}`);
  }
  if (action !== 'replay') for (const spec of opts.mapRemote || []) args.push(`--map-remote=${spec}`);
  args.push('--', process.execPath, HOLDER);
  return args;
}

const helpCache = new Map();

/**
 * Refuse mask/pace when this blackbox's `replay` lacks the flag. `replay` passes
 * unknown options on as the wrapped command, so its help is asked (once per binary).
 */
function checkFlags(opts) {
  const wanted = [];
  if (opts.mask && opts.mask.length) wanted.push('--mask');
  if (opts.pace !== undefined && opts.pace !== null) wanted.push('--pace');
  if (!wanted.length) return;
  if (!helpCache.has(opts.bin)) {
    const help = spawnSync(opts.bin, ['replay', '--help'], { encoding: 'utf8', env: opts.env, cwd: opts.cwd, timeout: 60000 });
    helpCache.set(opts.bin, help.status === 0 ? help.stdout : null);
  }
  const help = helpCache.get(opts.bin);
  for (const flag of wanted) {
    if (help !== null && !new RegExp(`(^|\\s)${flag}[\\s=,]`, 'm').test(help)) {
      const option = flag.slice(2);
      throw new TapeError(
        'BLACKBOX_TOO_OLD',
        `the \`${option}\` option needs a blackbox whose \`replay\` accepts ${flag}, and ${opts.bin} does not; ` +
          `upgrade blackbox-mitm or drop \`${option}\``,
      );
    }
  }
}

function startProblem(stderr, code) {
  const said = stderr.trim();
  return new TapeError('TAPE_START', `blackbox could not start the replay (exit ${code})${said ? `:\n${said}` : ''}`);
}

/**
 * Start the replay; resolve to a running Replay once its proxy is listening.
 * opts: { bin, match, mask, pace, confdir, hosts, env, cwd, startTimeout }
 */
function startReplay(cassette, opts) {
  checkFlags(opts);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blackbox-tape-'));
  const reportFile = path.join(dir, 'status.json');
  const child = spawn(opts.bin, cliArgs(cassette, reportFile, opts), {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const replay = new Replay(child, dir, reportFile);
  return new Promise((resolve, reject) => {
    let stdout = '';
    const fail = (err) => {
      clearTimeout(timer);
      replay.kill();
      reject(err);
    };
    const timer = setTimeout(() => {
      const said = replay.stderr.trim();
      fail(new TapeError('TAPE_TIMEOUT', `blackbox did not start the replay within ${Math.round(opts.startTimeout / 1000)} s${said ? `:\n${said}` : ''}`));
    }, opts.startTimeout);
    child.once('error', (err) => {
      fail(new TapeError('BLACKBOX_NOT_FOUND', `could not run ${opts.bin}: ${err.message}; ${INSTALL_HINT}`, { cause: err }));
    });
    child.once('exit', (code) => {
      if (replay.env === null) fail(startProblem(replay.stderr, code));
    });
    child.stdout.on('data', (chunk) => {
      if (replay.env !== null) return;
      stdout += chunk;
      const end = stdout.indexOf('\n');
      if (end === -1) return;
      try {
        replay.env = JSON.parse(stdout.slice(0, end)).env;
      } catch (err) {
        return fail(new TapeError('TAPE_START', `the replay's holder printed something unexpected: ${stdout.slice(0, 200)}`, { cause: err }));
      }
      clearTimeout(timer);
      resolve(replay);
    });
  });
}

class Replay {
  constructor(child, dir, reportFile) {
    this.child = child;
    this.dir = dir;
    this.reportFile = reportFile;
    this.env = null;
    this.stderr = '';
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      this.stderr += chunk;
    });
    child.stdin.on('error', () => {}); // the replay may already be gone
  }

  get proxyUrl() {
    return this.env.HTTPS_PROXY;
  }

  /** End the run (a recording ends as failed with failed=true); resolve to { ok, report, status, exit }. */
  async stop(failed = false) {
    this.child.stdin.end(failed ? 'failed\n' : undefined);
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), STOP_GRACE_MS);
    });
    let exit = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (exit === null) {
      this.kill();
      exit = await this.exited;
    }
    const status = this.readStatus();
    this.cleanup();
    const at = this.stderr.search(REPORT_HEAD);
    const report = at === -1 ? null : this.stderr.slice(at).replace(/\s+$/, '');
    if (exit.code === 0) return { ok: true, report: null, status, exit };
    if (report !== null) return { ok: false, report, status, exit };
    const said = this.stderr.trim();
    throw new TapeError('TAPE_STOP', `blackbox ended the replay without a verdict (exit ${exit.code ?? exit.signal})${said ? `:\n${said}` : ''}`);
  }

  readStatus() {
    try {
      return JSON.parse(fs.readFileSync(this.reportFile, 'utf8'));
    } catch {
      return null;
    }
  }

  kill() {
    this.child.stdin.destroy(); // the holder sees its stdin close and exits too
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.cleanup();
  }

  cleanup() {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { findBlackbox, readRunId, startReplay, INSTALL_HINT };
