import type { INestApplicationContext } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { IS_PUBLIC } from './public.decorator';

export interface MappedRoute {
  method: string;
  /** Express form: /api/chat/runs/:requestId */
  path: string;
  isPublic: boolean;
}

/**
 * Every route the controllers map, read from the same decorator metadata the router and the
 * ApiKeyGuard use. The OpenAPI builder marks public operations from it and the route test walks
 * it, so the three cannot disagree about which routes need a key.
 */
export function mappedRoutes(app: INestApplicationContext): MappedRoute[] {
  const discovery = new DiscoveryService(app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const out: MappedRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const type = wrapper.metatype as (new (...a: unknown[]) => unknown) | undefined;
    if (!type) continue;
    const classPaths = [Reflect.getMetadata(PATH_METADATA, type) ?? ''].flat() as string[];
    const classPublic = Reflect.getMetadata(IS_PUBLIC, type) === true;
    for (const name of scanner.getAllMethodNames(type.prototype)) {
      const handler = type.prototype[name] as object;
      const methodPath = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      if (methodPath === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod] ?? 'GET';
      const isPublic = classPublic || Reflect.getMetadata(IS_PUBLIC, handler) === true;
      for (const c of classPaths) for (const m of [methodPath].flat()) out.push({ method, path: joinPath(c, m), isPublic });
    }
  }
  return out;
}

function joinPath(...parts: string[]): string {
  const p = parts.map((s) => s.replace(/^\/+|\/+$/g, '')).filter(Boolean).join('/');
  return `/${p}`;
}

/** `/api/chat/runs/:requestId` → `/api/chat/runs/{requestId}` (OpenAPI's form). */
export function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
