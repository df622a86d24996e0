/** Exhaustiveness check for discriminated unions: a new member is a compile error here. */
export function assertUnreachable(x: never, what = 'value'): never {
  throw new Error(`Unexpected ${what}: ${JSON.stringify(x)}`);
}
