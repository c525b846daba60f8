/**
 * What changed that an in-memory cache remembers: the price book, a project's policies, the API
 * keys. A change made in the reads worker (an admin mutation) must reach the main thread's caches
 * before the mutation answers, not after their few seconds of life: this bus carries it. Local
 * listeners hear every event; `relayTo` sends the worker's events to the main thread
 * (reads-thread.ts), which replays them on its own bus with `receive` and acknowledges once its
 * listeners are done. Other instances still learn within their caches' TTL.
 */
import { Injectable } from '@nestjs/common';

export type CacheEvent =
  { kind: 'price-book' } | { kind: 'project-policies'; projectId: string } | { kind: 'api-keys' };

type Listener = (event: CacheEvent) => void | Promise<void>;

@Injectable()
export class CacheEvents {
  private readonly listeners = new Set<Listener>();
  private relay?: (event: CacheEvent) => Promise<void>;

  on(listener: Listener): void {
    this.listeners.add(listener);
  }

  /** Something changed here: this thread's caches, then the main thread's (when relayed), are told. */
  async emit(event: CacheEvent): Promise<void> {
    await this.receive(event);
    await this.relayOnly(event);
  }

  /** Only the other thread: for a change this thread has already applied. */
  async relayOnly(event: CacheEvent): Promise<void> {
    await this.relay?.(event);
  }

  /** An event from another thread: this thread's caches only. */
  async receive(event: CacheEvent): Promise<void> {
    await Promise.all([...this.listeners].map((listener) => listener(event)));
  }

  relayTo(send: (event: CacheEvent) => Promise<void>): void {
    this.relay = send;
  }
}
