// Nest 12 and PGlite are ESM-only or load ESM lazily; Jest 30 on Node 20 cannot require() ESM,
// so they are transpiled by swc inside Jest (Jest's ESM support is still experimental).
const swc = ['@swc/jest', {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2023',
    keepClassNames: true,
  },
  module: { type: 'commonjs' },
}];

module.exports = {
  testEnvironment: 'node',
  rootDir: __dirname,
  testRegex: '.*\\.(spec|e2e-spec|medium-spec|browser-spec)\\.ts$',
  transform: { '^.+\\.(t|j|mj|cj)s$': swc },
  transformIgnorePatterns: [
    '/node_modules/(?!(@nestjs|@electric-sql|@modelcontextprotocol|file-type|strtok3|token-types|@tokenizer|@borewit|uint8array-extras|canonicalize|pkce-challenge|@opentelemetry|jose)/)',
  ],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
  maxWorkers: 2,
  // the summary of skipped cases and why (PostgreSQL-only, Chromium) after the default output
  reporters: ['default', '<rootDir>/test/support/skip-summary-reporter.js'],
};
