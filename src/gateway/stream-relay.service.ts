/**
 * Relays an upstream `text/event-stream` answer to the client as it arrives (decisions §1)
 * while reading it for the ledger, and settles the task when it ends:
 *
 * - from the stream's usage when it reported any, otherwise at the estimate, flagged for review;
 * - a stream cut off half-way is never free: if the stream named the vendor's task, the task stays
 *   `processing` and the poller settles it from the vendor's task record; if it did not, it is
 *   charged at the estimate and flagged for review.
 *
 * A client that goes away does not stop the relay: the vendor keeps generating (and billing), so
 * the gateway reads the stream to its end and settles all the same.
 */
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { PassThrough, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { CONFIG, type Config } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SettlementService } from '../tasks/settlement.service.js';
import { TaskStore, type TaskForSettlement } from '../tasks/task-store.js';
import { EventStreamReader } from '../upstream/event-stream.js';
import { streamState, type StreamFacts } from '../upstream/vendor-protocol.js';
import type { SecretRedactor } from '../upstream/redact.js';
import type { UpstreamStream } from '../upstream/upstream.client.js';
import { UpstreamService } from '../upstream/upstream.service.js';
import type { GatewayReply } from './gateway-reply.js';

interface RelayHooks {
  /** The first `{ code: 1000, data: { id, taskId } }` event. */
  onAcceptance?(acceptance: NonNullable<StreamFacts['acceptance']>): Promise<unknown>;
  /** Every heartbeat interval while the stream runs. */
  onHeartbeat?(): Promise<unknown>;
  /** After the last byte, before the client's stream is ended; `cut` when the stream broke. */
  onEnd(facts: StreamFacts, cut: Error | undefined): Promise<unknown>;
}

@Injectable()
export class StreamRelayService implements OnApplicationShutdown {
  private readonly logger = new Logger('StreamRelay');
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly tasks: TaskStore,
    private readonly settlement: SettlementService,
    private readonly metrics: MetricsService,
    private readonly upstream: UpstreamService,
  ) {}

  /** A submission the vendor answered with a stream. The task is held and still `submitting`. */
  submission(taskId: string, upstream: UpstreamStream): GatewayReply {
    let named = false;
    return this.relay(upstream, {
      onAcceptance: async (a) => {
        named = await this.tasks.recordAccepted({
          taskId,
          upstreamId: a.id,
          upstreamTaskId: a.taskId,
          responseBody: this.upstream.redactor.redact(a.body),
        });
      },
      // Once named, the task is `processing` and out of the sweep's reach: no more heartbeats needed.
      onHeartbeat: async () => {
        if (!named) await this.tasks.stillStreaming(taskId);
      },
      onEnd: async (facts, cut) => {
        if (cut && named) return; // the poller settles it from the vendor's task record
        const task = await this.tasks.findById(taskId);
        if (!task) return;
        if (cut) {
          const review = `the stream was cut off before its end (${cut.message}) and did not name the vendor's task; charged at the estimate`;
          await this.settlement.apply(task, { status: 'ready', usage: undefined }, review);
          return;
        }
        // A clean end settles: with the stream's terminal status, else as ready with whatever usage came.
        const state = streamState(facts);
        await this.settlement.apply(
          task,
          state && state.status !== 'processing' ? state : { status: 'ready', usage: facts.usage },
        );
      },
    });
  }

  /** A poll the vendor answered with a stream: a terminal state in it settles the task. */
  poll(task: TaskForSettlement, upstream: UpstreamStream): GatewayReply {
    return this.relay(upstream, {
      onEnd: async (facts, cut) => {
        const state = streamState(facts);
        if (!cut && state) await this.settlement.apply(task, state);
      },
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]); // bounded by the upstream body timeout
  }

  private relay(upstream: UpstreamStream, hooks: RelayHooks): GatewayReply {
    const out = new PassThrough();
    const done = this.pump(upstream.stream, out, hooks).finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
    return { status: 200, contentType: upstream.contentType, body: out };
  }

  private async pump(source: Readable, out: PassThrough, hooks: RelayHooks): Promise<void> {
    const reader = new EventStreamReader();
    const relayed = new RedactingRelay(this.upstream.redactor);
    const beat = hooks.onHeartbeat
      ? setInterval(() => void hooks.onHeartbeat!().catch(() => undefined), this.heartbeatMs)
      : undefined;
    let cut: Error | undefined;
    let acceptance: Promise<unknown> | undefined;
    try {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        reader.push(chunk);
        if (!acceptance && reader.facts.acceptance && hooks.onAcceptance) {
          acceptance = hooks.onAcceptance(reader.facts.acceptance);
          // awaited (and reported) after the stream; never an unhandled rejection meanwhile
          acceptance.catch(() => undefined);
        }
        const text = relayed.push(chunk);
        if (text && !out.destroyed && !out.write(text)) await drainedOrClosed(out);
      }
    } catch (error) {
      cut = error as Error;
      this.metrics.upstreamErrors.inc({ kind: 'stream_cut' });
    } finally {
      clearInterval(beat);
    }
    const facts = reader.end();
    try {
      await acceptance;
      await hooks.onEnd(facts, cut);
    } catch (error) {
      // The task keeps its hold (never free); reconcile and the sweep will show it.
      this.logger.error(`settling a relayed stream failed: ${(error as Error).message}`);
    }
    if (out.destroyed) return;
    if (cut) out.destroy(cut);
    else out.end(relayed.end());
  }

  /** Well inside the sweep's grace, so a live stream is never taken for an abandoned one. */
  private get heartbeatMs(): number {
    return Math.max(
      1_000,
      Math.floor(Math.min(this.config.UPSTREAM_TIMEOUT_MS, this.config.SUBMIT_GRACE_MS || 1_000) / 3),
    );
  }
}

/**
 * The vendor's bytes as text, with the vendor key removed (decisions §1). A chunk is passed on at
 * once, except for a tail that could be the start of the key completed by the next chunk (almost
 * always none), so the relay adds no delay.
 */
class RedactingRelay {
  private readonly decoder = new StringDecoder('utf8');
  private carry = '';

  constructor(private readonly redactor: SecretRedactor) {}

  push(chunk: Buffer): string {
    const text = this.redactor.redact(this.carry + this.decoder.write(chunk));
    const keep = this.redactor.pendingTail(text);
    this.carry = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  end(): string {
    const rest = this.redactor.redact(this.carry + this.decoder.end());
    this.carry = '';
    return rest;
  }
}

function drainedOrClosed(stream: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      stream.off('drain', settle);
      stream.off('close', settle);
      resolve();
    };
    stream.once('drain', settle);
    stream.once('close', settle);
  });
}
