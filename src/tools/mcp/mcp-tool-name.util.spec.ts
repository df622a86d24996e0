import { namespacedToolName } from './mcp-tool-name.util';

describe('namespacedToolName', () => {
  it('prefixes the server and keeps safe names', () => {
    expect(namespacedToolName('fs', 'read_file')).toBe('fs__read_file');
    expect(namespacedToolName('everything', 'get-sum')).toBe('everything__get-sum');
  });

  it('replaces characters outside [A-Za-z0-9_-]', () => {
    expect(namespacedToolName('s', 'dup.tool')).toBe('s__dup_tool');
    expect(namespacedToolName('s', 'weird name/ü!')).toBe('s__weird_name___');
    expect(namespacedToolName('s', '...')).toBeUndefined();
  });

  it('caps long names at 64 characters with a hash that keeps them distinct', () => {
    const a = namespacedToolName('server', 'x'.repeat(70))!;
    const b = namespacedToolName('server', 'x'.repeat(71))!;
    expect(a).toHaveLength(64);
    expect(b).toHaveLength(64);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^server__x+_[0-9a-f]{8}$/);
    expect(namespacedToolName('s', 'y'.repeat(61))).toHaveLength(64); // exactly 64: no hash
    expect(namespacedToolName('s', 'y'.repeat(61))).toBe(`s__${'y'.repeat(61)}`);
  });
});
