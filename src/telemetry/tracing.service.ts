/**
 * OpenTelemetry traces (decisions §21), with the official SDK, sent over OTLP/HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Off, nothing is
 * loaded and `start` answers undefined: the code paths call `step(undefined, …)`, which runs the
 * work and nothing else.
 *
 * Spans are parented explicitly (one Trace per submission or settlement), not through an async
 * context manager: the gateway has two traced operations and they pass their Trace along.
 * Attributes are chosen, never copied from a request: a model, token counts, the cost and its unit,
 * ids; never a prompt's text, a key, a header or an error's message (which may quote input).
 */
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { CONFIG, type Config } from '../config/config.js';

export interface Trace {
  readonly root: Span;
  readonly tracer: Tracer;
}

@Injectable()
export class TracingService implements OnApplicationShutdown {
  private provider: { getTracer(name: string): Tracer; shutdown(): Promise<void> } | undefined;
  private tracer: Tracer | undefined;
  private loading: Promise<void> | undefined;

  /** An endpoint is configured (tracing may still be loading). */
  readonly enabled: boolean;

  constructor(@Inject(CONFIG) private readonly config: Config) {
    this.enabled = this.endpoint !== undefined;
  }

  /** Loads the SDK once (off: never). Called at start-up by the main thread. */
  async init(): Promise<void> {
    if (!this.enabled) return;
    this.loading ??= this.load();
    await this.loading;
  }

  /** A new trace's root span, or undefined when tracing is off (or not loaded): `attributes` is then never called. */
  start(name: string, attributes: () => Attributes, kind: SpanKind = SpanKind.SERVER): Trace | undefined {
    const tracer = this.tracer;
    if (!tracer) return undefined;
    return { root: tracer.startSpan(name, { kind, attributes: attributes() }), tracer };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.provider?.shutdown(); // exports what is buffered
  }

  private get endpoint(): string | undefined {
    const traces = this.config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const base = this.config.OTEL_EXPORTER_OTLP_ENDPOINT;
    return traces ?? (base ? `${base.replace(/\/$/, '')}/v1/traces` : undefined);
  }

  private async load(): Promise<void> {
    const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
      await Promise.all([
        import('@opentelemetry/sdk-trace'),
        import('@opentelemetry/exporter-trace-otlp-http'),
        import('@opentelemetry/resources'),
      ]);
    const exporter = new OTLPTraceExporter({ url: this.endpoint });
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': this.config.OTEL_SERVICE_NAME }),
      spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: this.config.OTEL_BSP_SCHEDULE_DELAY })],
    });
    this.provider = provider;
    this.tracer = provider.getTracer('spendgate');
  }
}

/** Runs `work` as a child span of `t` (named `name`); without a trace, just runs it. */
export function step<T>(t: Trace | undefined, name: string, work: () => T, attributes?: Attributes): T {
  if (!t) return work();
  const span = t.tracer.startSpan(name, { attributes }, trace.setSpan(ROOT_CONTEXT, t.root));
  let result: T;
  try {
    result = work();
  } catch (error) {
    failed(span, error);
    span.end();
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failed(span, error);
        span.end();
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

/** Ends a trace's root span, marked failed with the error's HTTP status and code (never its message). */
export function finish(t: Trace | undefined, error?: unknown): void {
  if (!t) return;
  if (error !== undefined) failed(t.root, error);
  t.root.end();
}

function failed(span: Span, error: unknown): void {
  const e = error as { status?: number; code?: number; name?: string };
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttributes({
    'error.type': e.code !== undefined ? String(e.code) : (e.name ?? 'Error'),
    ...(e.status !== undefined ? { 'http.response.status_code': e.status } : {}),
  });
}
