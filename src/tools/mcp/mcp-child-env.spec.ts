import { mcpChildEnvironment } from './mcp-child-env';

describe('mcpChildEnvironment', () => {
  const parent = {
    PATH: '/usr/bin',
    HOME: '/home/orion',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TMPDIR: '/tmp',
    LLM_API_KEY: 'sk-secret',
    API_KEYS: 'k1,k2',
    DATABASE_URL: 'postgres://u:p@h/db',
    NODE_OPTIONS: '--require /tmp/hook.js',
    HTTPS_PROXY: 'http://user:pass@proxy:3128',
    BASH_FUNC_x: '() { echo hi; }',
    SHELL: '() { evil; }',
  };

  it('passes only allow-listed variables plus the server env', () => {
    expect(mcpChildEnvironment({ GITHUB_TOKEN: 'ghp_x', LANG: 'de_DE.UTF-8' }, parent)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/orion',
      LANG: 'de_DE.UTF-8',
      LC_ALL: 'C.UTF-8',
      TMPDIR: '/tmp',
      GITHUB_TOKEN: 'ghp_x',
    });
  });
});
