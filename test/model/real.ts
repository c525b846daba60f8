/**
 * The tester's hands on the real system: HTTP to either instance (every answer checked: no 5xx
 * unless the operation expects one), GraphQL as the admin, and the figures a closed month shows.
 */
import { Decimal } from 'decimal.js';
import type { System } from './system.js';
import { ADMIN } from './system.js';

export interface Answer {
  status: number;
  body: unknown;
  text: string;
}

export class Real {
  readonly admin = ADMIN;
  /** whose bearer token GraphQL calls carry: the admin's, or a role's while a command acts as it */
  token = ADMIN;
  constructor(readonly sys: System) {}

  gatewayEnv(): NodeJS.ProcessEnv {
    return this.sys.gatewayEnv();
  }

  url(at: number): string {
    return this.sys.gateways[at % this.sys.gateways.length]!.url;
  }

  /** Everything a reader sees of a month: spendReport by project, model and day, and the spend CSV. */
  async figures(month: string): Promise<string> {
    const [from, to] = monthRange(month);
    const report = await gql(
      this,
      `query($f: DateTime!, $t: DateTime!) { spendReport(from: $f, to: $t, groupBy: ["project", "model", "day"]) { keys tasks totals { unit amount } } }`,
      { f: from, t: to },
    );
    const csv = await call(this, 1, 'GET', `/reports/spend.csv?from=${from}&to=${to}&groupBy=project,model,day`, {
      key: ADMIN,
    });
    return JSON.stringify(report.data) + csv.text;
  }

  /** After a fault: until both instances answer a read again. */
  async untilReady(): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const ok = await Promise.all(
        this.sys.gateways.map((g) =>
          fetch(`${g.url}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          ),
        ),
      );
      if (ok.every(Boolean)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the gateways did not answer ready within 20 s of the fault');
  }
}

const ANSWER_WITHIN_MS = 60_000;

export function monthRange(month: string): [string, string] {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return [new Date(Date.UTC(y, m - 1, 1)).toISOString(), new Date(Date.UTC(y, m, 1)).toISOString()];
}

/** An HTTP call to instance `at`: a 5xx is a defect unless `allowed` names it. */
export async function call(
  real: Real,
  at: number,
  method: string,
  path: string,
  init: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  allowed: number[] = [],
): Promise<Answer> {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  let body = init.raw;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  // An answer that never comes is a defect too: named here, not left to the suite's timeout.
  const signal = AbortSignal.timeout(ANSWER_WITHIN_MS);
  const res = await fetch(`${real.url(at)}${path}`, { method, headers, body, signal }).catch((error: Error) => {
    if (error.name !== 'TimeoutError') throw error;
    throw new Error(`${method} ${path} on gw${at}: no answer within ${ANSWER_WITHIN_MS / 1000} s`);
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (res.status >= 500 && !allowed.includes(res.status))
    throw new Error(`${method} ${path} on gw${at}: ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, body: parsed, text };
}

/** The simulator's knobs (decisions as the vendor's: faults, streams), set for what follows. */
export async function simulatorKnobs(real: Real, knobs: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${real.sys.simUrl}/__sim/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(knobs),
  });
  if (res.status !== 200) throw new Error(`the simulator refused its knobs ${JSON.stringify(knobs)}: ${res.status}`);
}

export function expectStatus(answer: Answer, status: number, what: string): void {
  if (answer.status !== status)
    throw new Error(`${what}: expected ${status}, got ${answer.status} ${answer.text.slice(0, 300)}`);
}

/** An amount the product shows (null or absent: none) against the model's, exactly: the disagreement, or null. */
export function amountDisagreement(
  what: string,
  actual: string | Decimal | null | undefined,
  expected: Decimal | null,
): string | null {
  const a = actual === null || actual === undefined ? null : new Decimal(actual.toString());
  if ((a === null) === (expected === null) && (!a || !expected || a.eq(expected))) return null;
  return `${what}: the product says ${a?.toFixed() ?? 'null'}, the model ${expected?.toFixed() ?? 'null'}`;
}

export interface GraphqlAnswer {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; path?: Array<string | number>; extensions?: { code?: string; status?: number } }>;
}

export async function gql(
  real: Real,
  query: string,
  variables: Record<string, unknown> = {},
  at = 0,
): Promise<GraphqlAnswer> {
  const res = await call(real, at, 'POST', '/graphql', { key: real.token, body: { query, variables } });
  return res.body as GraphqlAnswer;
}
