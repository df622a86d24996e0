import type { SecretRegistry } from '../../common/secrets/secret-registry';
import { deepMap, WALK } from '../../common/util/deep-map.util';
import { JsonSchemaValidator, secretPropertyNames } from '../json-schema.validator';
import type { ArgumentRefusal, ToolDefinition, ToolExecutionContext } from '../tool-definition';

const NO_SECRET_KEYS: ReadonlySet<string> = new Set();

/** Why a call is not made: a short code for traces and a sentence for the model (never the value). */
export interface Refusal {
  reason: string;
  why: string;
}

/** What the policy decides on: a call whose arguments validated, and what the caller's argument policy said. */
export interface PolicyCall {
  name: string;
  def: ToolDefinition;
  /** the validated arguments, defaults applied */
  args: Record<string, unknown>;
  ctx: ToolExecutionContext;
  /** the caller's argument policy, asked before the call was traced (see `askArgumentPolicy`) */
  argumentRefusal: ArgumentRefusal | null;
}

/**
 * Which calls may run and which values in them are secret. The secret paths: `x-secret`
 * properties of a tool's schema (masked wherever arguments are shown), configured secrets in
 * the arguments (refused), values the caller's argument policy names (refused and masked), and
 * configured secrets a tool echoes in its result (masked by the call record).
 *
 * `decide` is the one place a call is allowed or refused before it runs; approvals land there.
 */
export class ToolCallPolicy {
  /** `x-secret` names per schema version (secretKeysOf) */
  private readonly secretKeys = new Map<string, ReadonlySet<string>>();

  constructor(
    private readonly secrets: SecretRegistry,
    /** the validator's cache key of a definition (the registry's hash) */
    private readonly keyOf: (def: ToolDefinition) => string,
  ) {}

  /** Refused, or null to let the call run. */
  decide(call: PolicyCall): Refusal | null {
    // a configured secret never leaves through a tool, whatever put it into the arguments
    if (this.secrets.foundIn(JSON.stringify(call.args))) return { reason: 'configured_secret', why: 'its arguments carry a configured secret' };
    if (call.argumentRefusal) return { reason: call.argumentRefusal.reason, why: call.argumentRefusal.why };
    return null;
  }

  /**
   * The `x-secret` property names of a tool's schema, found once per schema version: the same
   * key as the validator's compiled schema (the registry's hash of the definition), so the
   * names always belong to the schema the arguments are validated against. Asked several times
   * per call (the trace, the shown arguments, each progress event), a walk of the schema each.
   */
  secretKeysOf(def: ToolDefinition | undefined): ReadonlySet<string> {
    if (!def) return NO_SECRET_KEYS;
    const key = this.keyOf(def);
    let names = this.secretKeys.get(key);
    if (!names) {
      if (this.secretKeys.size >= JsonSchemaValidator.MAX_CACHED) this.secretKeys.clear();
      names = secretPropertyNames(def.parameters);
      this.secretKeys.set(key, names);
    }
    return names;
  }
}

/** The caller's argument policy; one that throws refuses (a broken policy must not let calls through). */
export function askArgumentPolicy(policy: ToolExecutionContext['argumentPolicy'], argsJson: string): ArgumentRefusal | null {
  if (!policy) return null;
  try {
    return policy(argsJson);
  } catch {
    return { reason: 'policy_error', why: 'the argument policy could not decide' };
  }
}

/** String values of `x-secret` properties, so a tool echoing them is masked in traces too. */
export function collectSecretValues(args: Record<string, unknown>, keys: ReadonlySet<string>): string[] {
  if (keys.size === 0) return [];
  const out: string[] = [];
  deepMap(args, {
    maxDepth: 20,
    tooDeep: () => undefined,
    member: (k, x) => {
      if (!keys.has(k) || typeof x !== 'string' || x.length < 4) return WALK;
      out.push(x);
      return x;
    },
  });
  return out;
}
