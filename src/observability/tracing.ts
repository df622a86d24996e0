import { trace } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import type { IncomingMessage } from 'node:http';

/**
 * OpenTelemetry for the process, configured by the standard OTEL_* variables (endpoint,
 * headers, protocol, service name, sampler, resource attributes): the SDK reads them itself.
 * Started only when an OTLP endpoint is set, before Nest and Express load (main.ts), so the
 * HTTP instrumentation sees every incoming request (model calls go through undici's request API,
 * which it does not see: no client spans for them).
 */
let sdk: NodeSDK | undefined;
let instrumentations: HttpInstrumentation[] = [];

/** The instrumentation's default redactions (not exported by the package), kept when adding ours. */
const LIBRARY_REDACTED_QUERY_PARAMS = ['sig', 'Signature', 'AWSAccessKeyId', 'X-Goog-Signature', 'X-Amz-Signature', 'X-Amz-Credential', 'X-Amz-Security-Token'];

/** Scrapes and probes arrive every few seconds; a span for each would bury the turns. */
const UNTRACED = /^\/(metrics|api\/health)(\/|\?|$)/;

export function startTracing(env: NodeJS.ProcessEnv = process.env): boolean {
  if (sdk) return true;
  if (String(env.OTEL_SDK_DISABLED).toLowerCase() === 'true') return false;
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return false;
  instrumentations = [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED.test(req.url ?? ''),
      // the run-events stream takes `?access_token=<key>` (EventSource cannot send a header): never
      // in a span. The rest is the library's own default list, which an explicit list replaces.
      redactedQueryParamsServer: [...LIBRARY_REDACTED_QUERY_PARAMS, 'access_token'],
    }),
  ];
  sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: 'orion' }),
    instrumentations,
  });
  sdk.start();
  return true;
}

/** Whether this process exports traces (the turn spans are made only then). */
export function tracingEnabled(): boolean {
  return sdk !== undefined;
}

/** Sends what is buffered; the SDK keeps running. */
export async function flushTracing(): Promise<void> {
  type Flushable = { forceFlush?: () => Promise<void>; getDelegate?: () => Flushable };
  const provider = trace.getTracerProvider() as Flushable;
  await (provider.getDelegate?.() ?? provider).forceFlush?.();
}

/**
 * The started instrumentations. Jest replaces Node's module loader, so the instrumentations'
 * require hook never sees `http` there; the tests apply these instrumentations' own patches to
 * the loaded module instead (node dist/main.js needs nothing of the kind).
 */
export function startedInstrumentations(): readonly HttpInstrumentation[] {
  return instrumentations;
}

export async function stopTracing(): Promise<void> {
  const s = sdk;
  sdk = undefined;
  instrumentations = [];
  await s?.shutdown();
}
