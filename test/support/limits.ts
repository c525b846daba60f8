/**
 * Limits (decisions §20) in tests: one set through GraphQL as the admin, and a wait that keeps a
 * test's requests inside one UTC minute.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { ADMIN, graphql } from './harness.js';

/** Sets a project's limit (scope PROJECT unless given) and returns its id; fails the test on any error. */
export async function setLimit(
  gw: Gateway,
  projectId: string,
  kind: string,
  amount: number,
  scope?: string,
  scopeValue?: string,
): Promise<string> {
  const res = await graphql(
    gw,
    ADMIN,
    `
      mutation ($p: ID!, $k: LimitKind!, $n: Int!, $s: BudgetScope, $v: String) {
        setLimit(projectId: $p, kind: $k, amount: $n, scope: $s, scopeValue: $v)
      }
    `,
    { p: projectId, k: kind, n: amount, s: scope ?? 'PROJECT', v: scopeValue ?? null },
  );
  // No jest `expect` here: test/support is also built for the money model (tsconfig.build.json).
  if (res.body.errors) throw new Error(`setLimit: ${JSON.stringify(res.body.errors)}`);
  return res.body.data!.setLimit as string;
}

/** Waits until at least `seconds` remain in the current UTC minute (a minute's count must not roll over mid-test). */
export async function awayFromMinuteEnd(seconds = 20): Promise<void> {
  const left = 60 - ((Date.now() / 1000) % 60);
  if (left < seconds) await new Promise((r) => setTimeout(r, left * 1000 + 200));
}
