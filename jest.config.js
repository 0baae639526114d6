const { availableParallelism } = require('node:os');
const { pathsToModuleNameMapper } = require('ts-jest');
const { compilerOptions } = require('./tsconfig.json');

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // jose 6 ships only ES modules; Jest on Node 20 loads CommonJS, so its files are transpiled.
    '^.+/node_modules/jose/.+\\.js$': [
      'ts-jest',
      { tsconfig: { allowJs: true, module: 'commonjs' }, diagnostics: false },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  // `retrysafe/*` (what app/ and lambdas/ import, as an app of its own does) is the package's sources here,
  // as tsconfig.json's `paths` say: one copy of every module, whoever imports it.
  moduleNameMapper: pathsToModuleNameMapper(compilerOptions.paths, { prefix: '<rootDir>/' }),
  // One DynamoDB Local for the whole run: started before the first suite, stopped after the last.
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  setupFiles: ['<rootDir>/test/setup/env.ts'],
  testTimeout: 30_000,
  // Jest's default, one worker fewer than the cores, is one on CI's two: every suite in band, while much
  // of a suite's time is spent waiting on DynamoDB Local, a child process or a lock's end. Suites share
  // nothing but the store (each has its own tenants or tables), so two run side by side there.
  maxWorkers: Math.max(2, availableParallelism() - 1),
  reporters: ['default', '<rootDir>/test/setup/summary-reporter.js'],
};
