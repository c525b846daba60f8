/**
 * The vendor key must never reach a client or a log (decisions §1). Vendors echo request headers
 * in error messages ("invalid key: Bearer sk-…"), so anything the vendor says is passed through
 * this first: every occurrence of a secret, also JSON- or URL-escaped, becomes `[redacted]`.
 */

export const REDACTED = '[redacted]';

export class SecretRedactor {
  private readonly variants: string[];

  constructor(secrets: ReadonlyArray<string | undefined>) {
    const set = new Set<string>();
    for (const secret of secrets) {
      // Very short values would redact ordinary words; a vendor key is never that short.
      if (!secret || secret.length < 8) continue;
      set.add(secret);
      set.add(JSON.stringify(secret).slice(1, -1));
      set.add(encodeURIComponent(secret));
    }
    // Longest first, so that a variant that contains another is replaced whole.
    this.variants = [...set].sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let out = text;
    for (const v of this.variants) if (out.includes(v)) out = out.split(v).join(REDACTED);
    return out;
  }

  /** Whether `text` holds a secret (the common answer, "no", costs one substring search per variant). */
  holdsSecret(text: string): boolean {
    return this.variants.some((v) => text.includes(v));
  }

  /**
   * How many bytes at the end of `text` could be the start of a secret that the next chunk of a
   * stream completes: only those are held back, so a relayed stream is not delayed otherwise.
   */
  pendingTail(text: string): number {
    let keep = 0;
    for (const v of this.variants) {
      for (let n = Math.min(v.length - 1, text.length); n > keep; n--) {
        if (text.endsWith(v.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    return keep;
  }
}

/** A short, redacted account of a vendor's refusal, for the client: never the vendor's body itself. */
export function upstreamSummary(
  redactor: SecretRedactor,
  status: number,
  body: unknown,
): { upstreamStatus: number; upstreamMessage?: string; upstreamCode?: number } {
  const summary: { upstreamStatus: number; upstreamMessage?: string; upstreamCode?: number } = {
    upstreamStatus: status,
  };
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const { message, code } = body as Record<string, unknown>;
    if (typeof message === 'string' && message.length > 0) {
      const clean = redactor.redact(message);
      summary.upstreamMessage = clean.length > 200 ? `${clean.slice(0, 197)}...` : clean;
    }
    if (typeof code === 'number' && Number.isSafeInteger(code)) summary.upstreamCode = code;
  }
  return summary;
}
