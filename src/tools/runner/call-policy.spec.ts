import { SecretRegistry } from '../../common/secrets/secret-registry';
import type { ToolDefinition } from '../tool-definition';
import { askArgumentPolicy, ToolCallPolicy, type PolicyCall } from './call-policy';

const def = { name: 'echo', parameters: { type: 'object' } } as unknown as ToolDefinition;

function policyWith(secret: string): ToolCallPolicy {
  const secrets = new SecretRegistry();
  secrets.set('TEST', [secret]);
  return new ToolCallPolicy(secrets, (d) => d.name);
}

function call(args: Record<string, unknown>, argumentRefusal: PolicyCall['argumentRefusal'] = null): PolicyCall {
  return { name: 'echo', def, args, ctx: { projectId: 'p', requestId: 'r', signal: new AbortController().signal }, argumentRefusal };
}

describe('ToolCallPolicy.decide (the seam a call passes before it runs)', () => {
  const policy = policyWith('sk-configured-1234567890');

  it('lets an ordinary call run', () => {
    expect(policy.decide(call({ text: 'hello' }))).toBeNull();
  });

  it('refuses arguments carrying a configured secret, without naming the value', () => {
    const refusal = policy.decide(call({ text: 'use sk-configured-1234567890' }));
    expect(refusal?.reason).toBe('configured_secret');
    expect(JSON.stringify(refusal)).not.toContain('sk-configured');
  });

  it("refuses what the caller's argument policy refused; a configured secret is named first", () => {
    const byPolicy = { reason: 'untrusted_secret', why: 'came from a tool' };
    expect(policy.decide(call({ text: 'x' }, byPolicy))?.reason).toBe('untrusted_secret');
    expect(policy.decide(call({ text: 'sk-configured-1234567890' }, byPolicy))?.reason).toBe('configured_secret');
  });

  it('reads a throwing argument policy as a refusal', () => {
    const refusal = askArgumentPolicy(() => {
      throw new Error('broken');
    }, '{}');
    expect(refusal?.reason).toBe('policy_error');
  });
});
