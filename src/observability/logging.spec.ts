import { SecretRegistry } from '../common/secrets/secret-registry';
import { maskingDestination, MaskingConsoleLogger } from './logging';

describe('log masking', () => {
  const secrets = new SecretRegistry();
  secrets.set('mcp:fx', ['tok"en\\value-123']);
  secrets.set('LLM_API_KEY', ['sk-plain-secret-0001']);

  it('masks registry values in finished JSON lines, as they are and as JSON escapes them', () => {
    const lines: string[] = [];
    const dest = maskingDestination({ write: (l: string) => lines.push(l) }, secrets);
    dest.write(`${JSON.stringify({ msg: 'stderr: tok"en\\value-123 and sk-plain-secret-0001' })}\n`);
    expect(lines[0]).toBe('{"msg":"stderr: [REDACTED] and [REDACTED]"}\n');
  });

  it('masks them in plain-text lines too', () => {
    const out: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (out.push(String(chunk)), true));
    try {
      new MaskingConsoleLogger(secrets, ['log']).log('connected with sk-plain-secret-0001', 'Mcp');
    } finally {
      spy.mockRestore();
    }
    expect(out.join('')).toContain('connected with [REDACTED]');
    expect(out.join('')).not.toContain('sk-plain-secret-0001');
  });
});
