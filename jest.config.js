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
  reporters: ['default', '<rootDir>/test/setup/summary-reporter.js'],
};
