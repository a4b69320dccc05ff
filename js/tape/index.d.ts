// Types for @blackbox-mitm/tape (hand-written; the package is plain JavaScript).

/** How recorded answers are matched: `strict` compares every request with the recording; `sequence` serves them in order. */
export type MatchMode = 'strict' | 'sequence';

export interface ReplayTestOptions {
  /** Default `strict`. */
  match?: MatchMode;
  /**
   * Regular expressions whose matches are ignored when comparing (`--mask`, repeatable), read by Python's `re`;
   * a RegExp's i, m and s flags become inline flags. Needs a blackbox whose `replay` has `--mask`.
   */
  mask?: string | RegExp | Array<string | RegExp>;
  /** `recorded` keeps the recorded timing; a number scales it (0.1 = ten times faster). Needs a blackbox whose `replay` has `--pace`. */
  pace?: 'recorded' | number;
  /** Milliseconds fn may run before the replay is ended under it and judged (starting the replay has its own 60 s). Default 120000. */
  timeout?: number;
  /** Path of the `blackbox` executable. Default: $BLACKBOX_BIN, else `blackbox` on PATH. */
  blackbox?: string;
  /** mitmproxy's confdir holding the CA (`--confdir`). Default: ~/.mitmproxy or $BLACKBOX_CONFDIR. */
  confdir?: string;
  /** More OpenAI- or Anthropic-compatible hosts to intercept (`--host`, repeatable). */
  hosts?: string[];
  /** Working directory of the blackbox CLI, where its project configuration is looked for. Default: process.cwd(). */
  cwd?: string;
  /**
   * Record instead of failing: `missing` records a tape that does not exist yet; `divergent` also re-records a tape
   * the agent left (fn runs again against the tape rewound to where it parted, the rest live; the old tape is kept
   * as `.history/<name>.<run id>.json`); `all` records every tape afresh. Refused when the CI variable is set.
   */
  record?: RecordMode;
  /** mitmproxy map_remote specs for the live calls of a recording (`--map-remote`, repeatable). */
  mapRemote?: string[];
}

/** What replayTest may record: see `ReplayTestOptions.record`. */
export type RecordMode = 'missing' | 'divergent' | 'all';

/** The running replay, handed to the test function. */
export declare class Tape {
  /** The cassette's absolute path. */
  readonly cassette: string;
  readonly match: MatchMode;
  /** The recorded run's id (the cassette's top-level `id`), or null if it could not be read. */
  readonly runId: string | null;
  /** The replay proxy, `http://127.0.0.1:PORT`. */
  readonly proxyUrl: string;
  /** The environment for a child process agent: `base` (default process.env) plus the proxy, CA, Node preload and placeholder key variables. */
  env(base?: NodeJS.ProcessEnv | Record<string, string | undefined>): Record<string, string>;
}

/** The replay status the blackbox CLI writes as JSON (`--report`). */
export interface ReplayStatus {
  run: string;
  model_calls: number;
  model_calls_served: number;
  steps: number;
  steps_served: number;
  exhausted_calls: number;
  incomplete: number[];
  divergences: number;
  first_divergence?: Record<string, unknown> | null;
  exit_code?: number;
  [key: string]: unknown;
}

/** The agent left its recorded path. `message` is exactly the report the blackbox CLI prints. */
export declare class TapeMismatch extends Error {
  readonly name: 'TapeMismatch';
  /** `diverged`, `overran` or `incomplete`. */
  readonly verdict: 'diverged' | 'overran' | 'incomplete';
  /** The replay status, or null if the CLI wrote none. */
  readonly status: ReplayStatus | null;
  /** What the test function threw, when it threw (typically because a call was refused). */
  readonly cause?: unknown;
}

export type TapeErrorCode =
  | 'BLACKBOX_NOT_FOUND'
  | 'BLACKBOX_TOO_OLD'
  | 'TAPE_USAGE'
  | 'TAPE_BUSY'
  | 'TAPE_START'
  | 'TAPE_STOP'
  | 'TAPE_TIMEOUT';

/** replayTest could not run the tape: the message says what is wrong and what to do. */
export declare class TapeError extends Error {
  readonly name: 'TapeError';
  readonly code: TapeErrorCode;
}

/**
 * Run `fn(tape)` against a strict replay of `cassette` (a path, relative to the working directory, or a file: URL)
 * and resolve to what it returned. Rejects with TapeMismatch when the agent diverged, overran or stopped early.
 */
export declare function replayTest<T>(cassette: string | URL, fn: (tape: Tape) => T | Promise<T>, options?: ReplayTestOptions): Promise<T>;

/** The `blackbox` executable replayTest would run (`explicit`, else $BLACKBOX_BIN, else PATH); throws TapeError when there is none. */
export declare function findBlackbox(explicit?: string, env?: NodeJS.ProcessEnv): string;

export declare const DEFAULT_TIMEOUT_MS: number;

declare const tape: {
  replayTest: typeof replayTest;
  Tape: typeof Tape;
  TapeMismatch: typeof TapeMismatch;
  TapeError: typeof TapeError;
  findBlackbox: typeof findBlackbox;
  DEFAULT_TIMEOUT_MS: number;
};
export default tape;
