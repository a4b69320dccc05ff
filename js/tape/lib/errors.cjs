// errors.cjs: the two errors replayTest throws.
//
// TapeMismatch: the agent left its recorded path (diverged, overran, or stopped
// before making every recorded call). Its message is exactly the report the
// `blackbox` CLI prints (the Python side's render_report); `status` is the replay
// status the CLI wrote as JSON, `verdict` its one-word outcome, and `cause` the
// error the test function threw, when it threw one (typically because a call was
// refused).
//
// TapeError: replayTest could not run the tape at all (blackbox missing, a
// cassette that does not exist or verify, an overlapping call, a timeout). `code`
// names the problem; the message says what to do.
'use strict';

class TapeMismatch extends Error {
  constructor(report, { status = null, cause } = {}) {
    super(report, cause === undefined ? undefined : { cause });
    this.status = status;
    const head = /^replay of recorded run .*?: (\w+) — /.exec(report);
    this.verdict = head ? head[1] : 'diverged';
  }
}

class TapeError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.code = code;
  }
}

// On the prototype, so the stack's first line (captured in the constructor) names the class.
Object.defineProperty(TapeMismatch.prototype, 'name', { value: 'TapeMismatch', configurable: true, writable: true });
Object.defineProperty(TapeError.prototype, 'name', { value: 'TapeError', configurable: true, writable: true });

module.exports = { TapeMismatch, TapeError };
