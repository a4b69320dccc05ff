// Type-checked by test/types.test.cjs (tsc --noEmit): how an ESM TypeScript test uses the package, and what the types refuse.
import { replayTest, Tape, TapeError, TapeMismatch, type ReplayStatus } from '@blackbox-mitm/tape';

const answer: Promise<string> = replayTest(new URL('./tape.json', import.meta.url), async (tape: Tape) => {
  const env: Record<string, string> = tape.env();
  const url: string = tape.proxyUrl;
  const run: string | null = tape.runId;
  return `${url} ${run} ${env.HTTPS_PROXY}`;
});

void replayTest('tape.json', () => 42, { match: 'sequence', mask: [/\d{4}-\d\d-\d\d/, 'agentId: \\w+'], pace: 'recorded', timeout: 5000 });
void replayTest('tape.json', () => undefined, { pace: 0.1, blackbox: '/usr/local/bin/blackbox', hosts: ['llm.internal'] });

answer.catch((err: unknown) => {
  if (err instanceof TapeMismatch) {
    const verdict: 'diverged' | 'overran' | 'incomplete' = err.verdict;
    const status: ReplayStatus | null = err.status;
    console.log(verdict, status?.model_calls_served, err.message, err.cause);
  } else if (err instanceof TapeError) {
    const code: string = err.code;
    console.log(code);
  }
});

// @ts-expect-error: match is strict or sequence
void replayTest('tape.json', () => 1, { match: 'loose' });
// @ts-expect-error: pace is 'recorded' or a number
void replayTest('tape.json', () => 1, { pace: 'fast' });
// @ts-expect-error: fn is required
void replayTest('tape.json');
// @ts-expect-error: the Python name of the option is not this one's
void replayTest('tape.json', () => 1, { mode: 'strict' });
