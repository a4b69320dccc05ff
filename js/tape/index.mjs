// The ESM entry of @blackbox-mitm/tape: the same objects as index.cjs (one copy, so
// `instanceof TapeMismatch` holds whichever way a test imports it).
import tape from './index.cjs';

export const { replayTest, Tape, TapeMismatch, TapeError, findBlackbox, DEFAULT_TIMEOUT_MS } = tape;
export default tape;
