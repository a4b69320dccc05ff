// vitest for the example suite: its folder only, and room for a replay to start (a second or two).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['examples/vitest/**/*.test.ts'],
    testTimeout: 60000,
  },
});
