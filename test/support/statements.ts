/**
 * Vendor statements (decisions §14) in tests: settled tasks the vendor accepted, statements posted
 * through the HTTP edge, their differences and the tasks' nets read back through GraphQL, and an
 * acceptance, each as the admin.
 */
import { Readable } from 'node:stream';
import type { Gateway } from '../../src/bootstrap.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { Decimal } from '../../src/pricing/money.js';
import { acceptedTask } from './builders.js';
import { ADMIN, graphql } from './harness.js';

/** An exact USD charge of `amount` with no lines, as settlement takes it. */
export const charge = (amount: string) => ({
  unit: 'USD' as const,
  exactness: 'EXACT' as const,
  amount: new Decimal(amount),
  lines: [],
  warnings: [],
  needsReview: false,
});

/** A seedream-4.0 task (held 0.04 USD) the vendor accepted as `vendorId`, settled at `amount`. */
export async function settledTask(
  gw: Gateway,
  projectId: string,
  vendorId: number,
  amount = '0.04',
  acceptedAt?: Date,
): Promise<string> {
  const held = await acceptedTask(gw, {
    projectId,
    upstreamTaskId: String(vendorId),
    ...(acceptedAt ? { acceptedAt } : {}),
  });
  await gw.app
    .get(LedgerService)
    .settle({ taskId: held.taskId, status: 'ready', charge: charge(amount), usage: {}, rollup: { images: '1' } });
  return held.taskId;
}

/** POSTs a statement (CSV, as text or a stream) as the admin: the status and the answer. */
export async function postStatement(gw: Gateway, csv: string | Readable, mapping?: unknown) {
  const res = await fetch(
    `${gw.url}/reports/vendor-statements${mapping ? `?mapping=${encodeURIComponent(JSON.stringify(mapping))}` : ''}`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/csv' },
      body: typeof csv === 'string' ? csv : (Readable.toWeb(csv) as ReadableStream),
      ...(typeof csv === 'string' ? {} : { duplex: 'half' }),
    } as RequestInit,
  );
  return {
    status: res.status,
    body: (await res.json()) as {
      id: string;
      created: boolean;
      rows: number;
      repeated: number;
      classes: Array<{ class: string; unit: string; count: number; theirs: string; ours: string }>;
      message?: string;
      code?: number;
    },
  };
}

/** A seedream-4.0 statement in the default columns: [vendor task id, time, amount in USD] a line. */
export const statement = (lines: Array<[number, string, string]>) =>
  `task_id,model,time,amount,unit\n${lines.map(([id, at, amount]) => `${id},seedream-4.0,${at},${amount},USD`).join('\n')}\n`;

/** A statement's differences (every class but matched), in order, each with its state and who closed it why. */
export async function items(gw: Gateway, statementId: string) {
  const res = await graphql(
    gw,
    ADMIN,
    `
      query ($r: ID!) {
        vendorDifferences(reconciliationId: $r) {
          edges {
            node {
              id
              class
              vendorTaskId
              ours
              theirs
              difference
              state
              note
              resolvedBy
            }
          }
        }
      }
    `,
    { r: statementId },
  );
  // No jest `expect` here: test/support is also built for the money model (tsconfig.build.json).
  if (res.body.errors) throw new Error(`vendorDifferences: ${JSON.stringify(res.body.errors)}`);
  return (
    res.body.data.vendorDifferences as {
      edges: Array<{
        node: {
          id: string;
          class: string;
          vendorTaskId: string;
          ours: string;
          theirs: string;
          difference: string | null;
          state: string;
          note: string | null;
          resolvedBy: string | null;
        };
      }>;
    }
  ).edges.map((e) => e.node);
}

/** A task's net, adjustments and review state, by its vendor id. */
export const task = async (gw: Gateway, vendorId: number) =>
  (
    await graphql(
      gw,
      ADMIN,
      `
        query ($t: ID!) {
          task(taskId: $t) {
            net
            adjustments
            needsReview
            reviewReason
          }
        }
      `,
      { t: String(vendorId) },
    )
  ).body.data.task as unknown as {
    net: string;
    adjustments: string;
    needsReview: boolean;
    reviewReason: string | null;
  };

/** acceptVendorDifference as the admin. */
export const accept = (gw: Gateway, id: string) =>
  graphql(
    gw,
    ADMIN,
    `
      mutation ($i: ID!) {
        acceptVendorDifference(id: $i) {
          state
        }
      }
    `,
    { i: id },
  );
