// jest for the example suite: its folder only, and room for a replay to start (a second or two).
module.exports = {
  rootDir: '../..',
  testMatch: ['<rootDir>/examples/jest/**/*.test.cjs'],
  testEnvironment: 'node',
  testTimeout: 60000,
};
