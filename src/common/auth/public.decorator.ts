import { SetMetadata } from '@nestjs/common';

/** Route metadata read by the ApiKeyGuard and the OpenAPI builder: one source for both. */
export const IS_PUBLIC = 'orion:public';
export const QUERY_TOKEN = 'orion:queryToken';

/** The route (or every route of the controller) needs no key: the page, its assets, health probes. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

/**
 * The route also takes the key as `?access_token=`: only for GET stream routes, which a
 * browser's EventSource opens without headers. Everywhere else a query-string key is refused,
 * because it ends up in proxy and access logs.
 */
export const QueryTokenAllowed = (): MethodDecorator => SetMetadata(QUERY_TOKEN, true);
