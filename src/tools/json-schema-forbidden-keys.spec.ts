import { JsonSchemaValidator } from './json-schema.validator';

describe('tool arguments with prototype keys', () => {
  const schema = { type: 'object', properties: { q: { type: 'string' }, opts: { type: 'object' } } };

  it.each(['{"q":"x","__proto__":{"admin":true}}', '{"q":"x","opts":{"constructor":{"prototype":{}}}}', '{"q":"x","opts":{"prototype":1}}'])(
    'refuses %s as invalid arguments the model can repair',
    (json) => {
      const r = new JsonSchemaValidator().validate(schema, JSON.parse(json), 'k');
      expect(r).toMatchObject({ ok: false, reason: 'invalid', errors: [expect.stringMatching(/is not allowed/)] });
    },
  );

  it('accepts the same arguments without them', () => {
    expect(new JsonSchemaValidator().validate(schema, { q: 'x', opts: { a: 1 } }, 'k')).toMatchObject({ ok: true });
  });
});
