import type { Request } from 'express';

export type KeyRole = 'admin' | 'user';

/** Who a request acts for: the key it carried (or the local user when no key is configured). */
export interface Principal {
  keyId: string;
  name: string;
  /** project ids the key may use, or '*' for all */
  projects: '*' | string[];
  role: KeyRole;
}

/** With no key configured at all: single-user local mode, every project, admin. */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({ keyId: 'local', name: 'local', projects: '*', role: 'admin' }) as Principal;

/**
 * Looks up a presented key. Provided by the keys module (database keys); the guard adds the
 * API_KEYS admin keys itself. `anyKeys()` decides between keyed and local mode.
 */
export interface KeyResolver {
  resolve(token: string): Promise<Principal | null>;
  anyKeys(): Promise<boolean>;
}
export const KEY_RESOLVER = Symbol('KEY_RESOLVER');

const PRINCIPAL = Symbol('orion.principal');

export function setPrincipal(req: Request, p: Principal): void {
  (req as unknown as Record<symbol, Principal>)[PRINCIPAL] = p;
}

/** The request's principal; the local principal when the guard did not run (unit tests). */
export function principalOf(req: Request): Principal {
  return (req as unknown as Record<symbol, Principal | undefined>)[PRINCIPAL] ?? LOCAL_PRINCIPAL;
}

export function canUseProject(p: Principal, projectId: string | null | undefined): boolean {
  if (p.projects === '*') return true;
  return projectId != null && p.projects.includes(projectId);
}
