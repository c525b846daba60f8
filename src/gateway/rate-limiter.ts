/**
 * Per-key token bucket (RATE_LIMIT_PER_SECOND; 0 turns it off). Per instance: with N instances a
 * key may reach N times the rate, which is a protection limit, not a money one (budgets are exact).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perSecond: number) {}

  take(key: string): boolean {
    if (this.perSecond <= 0) return true;
    const now = Date.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.perSecond, at: now };
    bucket.tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) {
      this.buckets.set(key, bucket);
      return false;
    }
    bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    return true;
  }
}
