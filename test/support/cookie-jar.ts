/**
 * A browser's cookie handling, as far as the console's sign-in needs it in tests that speak HTTP
 * directly: cookies set by answers are kept by name and sent back; a cleared cookie is dropped.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>();
  /** The Set-Cookie lines of the last answer, for asserting their attributes. */
  lastSetCookie: string[] = [];

  take(response: Response): void {
    this.lastSetCookie = response.headers.getSetCookie();
    for (const line of this.lastSetCookie) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0\b/i.test(line))
        this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** fetch with this jar's cookies, keeping what the answer sets. */
  async fetch(url: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Response> {
    const response = await fetch(url, {
      ...init,
      headers: { ...(init.headers ?? {}), ...(this.cookies.size ? { cookie: this.header() } : {}) },
      redirect: 'manual',
    });
    this.take(response);
    return response;
  }
}
