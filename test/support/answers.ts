/**
 * The shapes tests read from the running service: the vendor paths' answers (the vendor's task, or
 * the gateway's refusal), GraphQL answers with the schema's root fields, and SQL rows. Fields a
 * given answer lacks read as undefined at run time; the assertions say which answer was expected.
 */

/** What the gateway answers on the vendor's paths: the vendor's body (200) or a refusal. */
export interface GatewayAnswer {
  code: number;
  message: string;
  data: VendorTask;
  details: RefusalDetails;
  status?: string;
  [field: string]: unknown;
}

export interface VendorTask {
  id: string;
  taskId: number;
  type: string;
  model: string;
  status: string;
  output?: unknown;
  usage?: unknown;
}

export interface RefusalDetails {
  problems: Array<{ field: string; reason: string }>;
  moreProblems?: number;
  upstreamStatus?: number;
  upstreamMessage?: string;
  upstreamTaskId?: string;
  gatewayTaskId: string;
  /** A 402: the budget that refused, its scope, and what remains. */
  budgetId?: string;
  scope?: string;
  scopeValue?: string | null;
  user?: string | null;
  remaining?: string;
  [field: string]: unknown;
}

export interface GraphqlError {
  message: string;
  extensions?: { code?: string; status?: number; [field: string]: unknown };
}

export interface GraphqlAnswer<T> {
  data: T;
  errors?: GraphqlError[];
}

export interface Money {
  unit: string;
  amount: string;
}

export interface ChargeResult {
  unit: string;
  amount: string;
  exactness: string;
  tier: string | null;
  lines: Array<{
    component: string;
    quantity: string;
    rate: string;
    per: string;
    amount: string;
    listRate?: string | null;
    listAmount?: string | null;
  }>;
  warnings: string[];
}

export interface TaskResult {
  taskId: string;
  projectId: string;
  model: string;
  status: string;
  priceBookVersion: number;
  acceptedAt: string;
  exactness: string;
  held: string;
  needsReview: boolean;
  reviewReason: string | null;
  overrun: string | null;
  estimate: ChargeResult;
  charge: ChargeResult;
  resolution: { outcome: string; reason: string; resolvedAt: string } | null;
  ledgerEntries: Array<{ id: string; kind: string; unit: string; amount: string; reason: string | null }>;
  [field: string]: unknown;
}

export interface BudgetResult {
  budgetId: string;
  projectId: string;
  unit: string;
  period: string;
  hard: boolean;
  limit: string;
  spent: string;
  held: string;
  remaining: string;
  percentUsed: string;
  projectedSpend: string | null;
  modelScope?: 'MODEL' | 'FAMILY' | 'KIND' | null;
  modelValue?: string | null;
  users?: { edges: Array<{ node: { user: string; spent: string; held: string; remaining?: string } }> };
  [field: string]: unknown;
}

export interface SpendRowResult {
  keys: string[];
  totals: Money[];
  tasks: number;
  unpricedTasks: number;
  [field: string]: unknown;
}

export interface Ranked {
  key: string;
  unit: string;
  amount: string;
  tasks: number;
}

/** The schema's root fields, as the tests query them (an aliased query names its own type). */
/** A converted figure (decisions §19): labelled, naming the versions of the rates. */
export interface ConvertedTotalResult {
  currency: string;
  amount: string | null;
  label: string;
  missing: string[];
  creditPriceVersions: number[];
  fxRateVersions: number[];
}

export interface GraphqlData {
  task: TaskResult;
  tasks: {
    edges: Array<{ cursor: string; node: TaskResult }>;
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
  projects: Array<{ id: string; name: string; chatHoldMultiplier: string; [field: string]: unknown }>;
  budgetStatus: BudgetResult[];
  spendReport: SpendRowResult[];
  dashboard: {
    today: Money[];
    monthToDate: Money[];
    topModels: Ranked[];
    topProjects: Ranked[];
    budgetsAbove80: Array<Record<string, string>>;
  };
  priceBook: { version: number; rates: Array<Record<string, string>> } | null;
  priceBookVersions: Array<{ version: number; effectiveAt: string }>;
  createProject: string;
  issueApiKey: string;
  setBudget: string;
  updateBudget: boolean;
  deleteBudget: boolean;
  setLimit: string;
  deleteLimit: boolean;
  limits: Array<{
    id?: string;
    kind: string;
    amount: number;
    scope?: string;
    scopeValue?: string | null;
    use?: Array<{ subject: string; used: number }>;
  }>;
  setProjectPolicies: boolean;
  adjustLedger: string;
  publishPrices: number;
  publishContract: number;
  resolveTask: TaskResult;
  __schema: { queryType: { name: string }; types?: Array<{ name: string; fields: Array<{ name: string }> | null }> };
  rotateApiKey: string;
  viewer: {
    kind: string;
    role: string | null;
    email: string | null;
    name: string | null;
    pages: string[];
    can: string[];
    [field: string]: unknown;
  };
  auditLog: {
    edges: Array<{ cursor: string; node: AuditRecordResult }>;
    pageInfo: { hasNextPage: boolean; endCursor: string };
  };
  invitePerson: { id: string; [field: string]: unknown };
  disablePerson: { id: string; state: string; [field: string]: unknown };
  createServiceAccount: { id: string };
  createToken: { secret: string; token: { id: string } };
  closeMonth: { month: string; carriedTasks: number; statements: number; closedBy: string };
  statement: {
    totals: Money[];
    entries: number;
    ledgerDigest: string;
    version: number;
    earlierVersions: number[];
    lines: Array<{ section: string }>;
    converted?: ConvertedTotalResult;
  };
  convertedSpend: ConvertedTotalResult & {
    rows: Array<{ keys: string[]; unit: string; amount: string; tasks?: number; converted: string | null }>;
  };
  conversionRates: Array<{ version: number; month: string; rate: string; publishedBy: string }>;
  setCreditPrice: number;
  setFxRate: number;
  commitments: Array<{ name: string; unit: string; amount: string; months: Array<Record<string, string>> }>;
  createCommitment: { id: string; name: string };
  [field: string]: unknown;
}

export interface AuditRecordResult {
  seq: string;
  actor: string;
  action: string;
  target: string;
  projectId: string | null;
  hash: string;
  [field: string]: unknown;
}

/** A row read back with SQL in a test: columns by name, as the driver types them (pg's QueryResultRow). */
export type { QueryResultRow as Row } from 'pg';
