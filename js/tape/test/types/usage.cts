// Type-checked by test/types.test.cjs: the same package from a CommonJS TypeScript file.
import tape = require('@blackbox-mitm/tape');

const result: Promise<number> = tape.replayTest('tape.json', (t) => t.proxyUrl.length);
void result;
const err = new Error('x');
const isMismatch: boolean = err instanceof tape.TapeMismatch;
void isMismatch;
