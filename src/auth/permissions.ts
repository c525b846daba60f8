/**
 * Who may do what (decisions §11), in one table: every GraphQL root field, every REST report and
 * every console page are named here with the capability they need and how that capability is
 * scoped. The GraphQL guard (graphql/operation-guard.ts) refuses a field that has no rule, or a
 * caller whose role lacks the capability everywhere, before any resolver runs; resolvers then
 * check the project their target belongs to with access.ts. test/auth/permissions.test.ts walks the
 * schema and fails when a field has no rule here.
 *
 * | may                                                         | owner | finance | lead (its projects) | viewer |
 * |-------------------------------------------------------------|-------|---------|---------------------|--------|
 * | read spend, budgets, tasks, alerts, exports          `read` | all   | all     | its projects        | grant  |
 * | set/change/delete budgets                         `budgets` | yes   | yes     | its projects        | no     |
 * | issue/rotate/revoke API keys                         `keys` | yes   | no      | its projects        | no     |
 * | webhooks of a project                            `webhooks` | yes   | no      | its projects        | no     |
 * | resolve review items, adjustments             `corrections` | yes   | yes     | its projects        | no     |
 * | close a month, vendor statements, statements, contracts `books` | yes   | yes     | no                  | no     |
 * | publish prices, project policies, create projects   `admin` | yes   | no      | no                  | no     |
 * | people, service accounts, roles                    `people` | yes   | no      | no                  | no     |
 * | read the audit trail                                `audit` | yes   | yes     | its projects' records | no   |
 */

import type { TargetKind } from './target-lookups.js';

export type Role = 'OWNER' | 'FINANCE' | 'LEAD' | 'VIEWER';
export const ROLES: readonly Role[] = ['OWNER', 'FINANCE', 'LEAD', 'VIEWER'];

/** A role and where it holds: `projectIds` omitted or null means every project. */
export interface Grant {
  role: Role;
  projectIds?: string[] | null;
}

export type Capability =
  'read' | 'budgets' | 'keys' | 'webhooks' | 'corrections' | 'books' | 'admin' | 'people' | 'audit';

export const ROLE_CAPABILITIES: Readonly<Record<Role, readonly Capability[]>> = {
  OWNER: ['read', 'budgets', 'keys', 'webhooks', 'corrections', 'books', 'admin', 'people', 'audit'],
  FINANCE: ['read', 'budgets', 'corrections', 'books', 'audit'],
  LEAD: ['read', 'budgets', 'keys', 'webhooks', 'corrections', 'audit'],
  VIEWER: ['read'],
};

/**
 * How a rule's capability is scoped:
 * - `project`: on the project named by the argument `arg` (projectId);
 * - `target`: on the project of the thing the field names by `arg` (a task, a budget, a key, an
 *   endpoint, a delivery), found by the look-up its room registers for that kind (target-lookups.ts);
 * - `list`: a read whose answer is limited to the caller's projects (or refused for others asked for);
 * - `global`: on every project (a grant on all projects);
 * - `self`: the caller's own things (any person or service account; never a project key);
 * - `signed-in`: anyone who is someone (a project key too).
 */
export type Scope = 'project' | 'target' | 'list' | 'global' | 'self' | 'signed-in';

export interface Rule {
  capability: Capability | null;
  scope: Scope;
  /** `project` scope: the argument that names the project; `target` scope: the one that names the thing. */
  arg?: string;
  /** `target` scope: the kind of thing `arg` names, whose project its room's look-up finds. */
  target?: TargetKind;
  /** `project` scope: when `arg` is not given, the field acts on every project (needs the capability on all). */
  absentMeansAll?: boolean;
}

const r = (capability: Capability | null, scope: Scope, arg?: string): Rule => ({
  capability,
  scope,
  ...(arg ? { arg } : {}),
});
const onTarget = (capability: Capability, target: TargetKind, arg: string): Rule => ({
  capability,
  scope: 'target',
  arg,
  target,
});

/** Every GraphQL root field. A field missing here is refused (and fails test/auth/permissions.test.ts). */
export const FIELD_RULES: Readonly<Record<string, Rule>> = {
  // Who is calling, and the price book (public rates of the vendor).
  'Query.viewer': r(null, 'signed-in'),
  'Query.priceBook': r(null, 'signed-in'),
  'Query.priceBookVersions': r(null, 'signed-in'),
  // Reads: the caller's projects.
  'Query.projects': r('read', 'list'),
  'Query.task': r('read', 'list'), // null when missing or not the caller's
  'Query.tasks': r('read', 'list'),
  'Query.taskTotals': r('read', 'list'),
  'Query.budgetStatus': r('read', 'project', 'projectId'),
  'Query.limits': r('read', 'project', 'projectId'),
  'Query.spendReport': r('read', 'list'),
  'Query.convertedSpend': r('read', 'list'),
  'Query.conversionRates': r(null, 'signed-in'),
  'Query.reportingCurrencies': r(null, 'signed-in'),
  'Query.commitments': r('read', 'global'),
  'Query.tagNames': r('read', 'list'),
  'Query.dashboard': r('read', 'list'),
  'Query.webhookEndpoints': r('read', 'list'),
  'Query.webhookDeliveries': r('read', 'list'),
  'Query.auditLog': r('audit', 'list'),
  'Query.people': r('people', 'global'),
  'Query.serviceAccounts': r('people', 'global'),
  'Query.tokens': r(null, 'self'),
  'Query.closedMonths': r('read', 'list'),
  'Query.monthToClose': r('read', 'list'),
  'Query.archivedMonths': r('read', 'list'),
  'Query.statement': r('read', 'project', 'projectId'),
  'Query.statements': r('read', 'list'),
  'Query.budgetsAtRisk': r('read', 'list'),
  'Query.anomalies': r('read', 'list'),
  'Query.vendorReconciliations': r('books', 'global'),
  'Query.vendorReconciliation': r('books', 'global'),
  'Query.vendorDifferences': r('books', 'global'),
  // Changes.
  'Mutation.createProject': r('admin', 'global'),
  'Mutation.setProjectPolicies': r('admin', 'global'),
  'Mutation.publishPrices': r('admin', 'global'),
  'Mutation.publishContract': r('books', 'global'),
  'Mutation.setCreditPrice': r('books', 'global'),
  'Mutation.setFxRate': r('books', 'global'),
  'Mutation.createCommitment': r('books', 'global'),
  'Mutation.issueApiKey': r('keys', 'project', 'projectId'),
  'Mutation.rotateApiKey': onTarget('keys', 'api-key', 'prefix'),
  'Mutation.revokeApiKey': onTarget('keys', 'api-key', 'prefix'),
  'Mutation.setBudget': r('budgets', 'project', 'projectId'),
  'Mutation.updateBudget': onTarget('budgets', 'budget', 'budgetId'),
  'Mutation.deleteBudget': onTarget('budgets', 'budget', 'budgetId'),
  'Mutation.setLimit': r('budgets', 'project', 'projectId'),
  'Mutation.deleteLimit': onTarget('budgets', 'limit', 'limitId'),
  'Mutation.adjustLedger': r('corrections', 'project', 'projectId'),
  'Mutation.resolveTask': onTarget('corrections', 'task', 'taskId'),
  'Mutation.createWebhookEndpoint': { ...r('webhooks', 'project', 'projectId'), absentMeansAll: true },
  'Mutation.setWebhookEndpointEnabled': onTarget('webhooks', 'webhook-endpoint', 'id'),
  'Mutation.deleteWebhookEndpoint': onTarget('webhooks', 'webhook-endpoint', 'id'),
  'Mutation.sendTestWebhook': onTarget('webhooks', 'webhook-endpoint', 'id'),
  'Mutation.redeliverWebhook': onTarget('webhooks', 'webhook-delivery', 'deliveryId'),
  'Mutation.invitePerson': r('people', 'global'),
  'Mutation.setRole': r('people', 'global'),
  'Mutation.disablePerson': r('people', 'global'),
  'Mutation.createServiceAccount': r('people', 'global'),
  'Mutation.createToken': r(null, 'self'),
  'Mutation.revokeToken': r(null, 'self'),
  'Mutation.closeMonth': r('books', 'global'),
  'Mutation.reopenMonth': r('admin', 'global'),
  'Mutation.importVendorStatement': r('books', 'global'),
  'Mutation.acceptVendorDifference': r('books', 'global'),
  'Mutation.disputeVendorDifference': r('books', 'global'),
};

/** The REST reports: the same capabilities as their GraphQL twins. */
export const ROUTE_RULES: Readonly<Record<string, Rule>> = {
  'GET /reports/spend.csv': r('read', 'list'),
  'GET /reports/focus.csv': r('read', 'list'),
  'GET /reports/converted.csv': r('read', 'list'),
  'GET /reports/audit.csv': r('audit', 'list'),
  'GET /reports/statements/:projectId/:month.(csv|pdf)': r('read', 'project', 'projectId'),
  'POST /reports/vendor-statements': r('books', 'global'),
  'GET /reports/vendor-statements/:id/differences.csv': r('books', 'global'),
};

/** The console's pages and the capability each needs to be shown. */
export const PAGE_RULES: Readonly<Record<string, Capability | null>> = {
  overview: 'read',
  budgets: 'read',
  tasks: 'read',
  review: 'read',
  prices: null,
  alerts: 'read',
  people: 'people',
  tokens: null,
  audit: 'audit',
  months: 'read',
  reconciliation: 'books',
};
