import { Webhook } from 'standardwebhooks';
import { signedHeaders } from './webhook-signer';

const secret = (c: string) => `whsec_${Buffer.from(c.repeat(32)).toString('base64')}`;

describe('signedHeaders', () => {
  // now, to the second: receivers refuse timestamps more than 5 minutes away
  const at = new Date(Math.floor(Date.now() / 1000) * 1000);
  const body = '{"type":"run.completed"}';

  it('signs per Standard Webhooks: the package verifies it, and a changed body fails', () => {
    const h = signedHeaders('msg_1', at, body, { current: secret('a'), previous: null });
    expect(h['webhook-timestamp']).toBe(String(at.getTime() / 1000));
    const wh = new Webhook(secret('a'));
    expect(() => wh.verify(body, h)).not.toThrow();
    expect(() => wh.verify(body.replace('completed', 'failed'), h)).toThrow();
  });

  it('during a rotation it carries both signatures, each verifying with its own secret', () => {
    const h = signedHeaders('msg_2', at, body, { current: secret('n'), previous: secret('o') });
    expect(h['webhook-signature'].split(' ')).toHaveLength(2);
    for (const s of [secret('n'), secret('o')]) expect(() => new Webhook(s).verify(body, h)).not.toThrow();
    expect(() => new Webhook(secret('x')).verify(body, h)).toThrow();
  });
});
