/**
 * Configuration, validated once at start-up. A bad or missing value stops start-up with one
 * line naming the variable. Every variable is listed in .env.example.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';

const int = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
/** A non-negative exact decimal, kept as its text (money never goes through a float). */
const decimalText = (fallback: string) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,12}(\.\d{1,18})?$/, 'must be a non-negative decimal, e.g. 1 or 0.50')
    .default(fallback);
const optionalUrl = z
  .string()
  .trim()
  .transform((v) => (v === '' ? undefined : v))
  .pipe(z.url().optional())
  .optional();

const postgresUrl = optionalUrl.refine(
  (v) => v === undefined || /^postgres(ql)?:\/\//.test(v),
  'must be a postgresql:// URL',
);

const schema = z
  .object({
    PORT: int(8080, 0).pipe(z.number().max(65535)),
    HOST: z.string().min(1).default('127.0.0.1'),
    DATABASE_URL: postgresUrl,
    REPORTS_DATABASE_URL: postgresUrl,
    DATA_DIR: z.string().min(1).default('./.data'),
    // Where a vendor statement's body waits for its import (up to 1 GiB); unset: the system's temporary directory.
    STATEMENT_SPOOL_DIR: z.string().min(1).optional(),
    UPSTREAM_BASE_URL: optionalUrl,
    UPSTREAM_API_KEY: z.string().optional(),
    ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    UPSTREAM_CONNECT_TIMEOUT_MS: int(2_000, 1),
    UPSTREAM_TIMEOUT_MS: int(30_000, 1),
    POLL_INTERVAL_MS: int(2_000, 10),
    SUBMIT_GRACE_MS: int(30_000, 0),
    RECORD_RETRY_WINDOW_MS: int(5_000, 0),
    POLLER_ENABLED: z
      .enum(['true', 'false'])
      .default('true')
      .transform((v) => v === 'true'),
    // Tasks that do not finish (decisions §10; docs/operations.md): unset, the defaults per kind below.
    TASK_REVIEW_AFTER_MS: z.coerce.number().int().min(1).optional(),
    TASK_NOT_FOUND_AFTER_MS: int(600_000, 0),
    POLL_MAX_PER_SECOND: int(100, 1),
    SIMULATOR_DELAY_MS: int(3_000, 0),
    BODY_LIMIT_BYTES: int(8 * 1024 * 1024, 1024),
    // What a client may hold open (decisions §5; http/connection-guard.ts).
    REQUEST_TIMEOUT_MS: int(30_000, 100),
    MAX_UNAUTHENTICATED_CONNECTIONS_PER_ADDRESS: int(1024, 1),
    // In production /metrics answers only with Authorization: Bearer <METRICS_TOKEN>.
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    /** /metrics/books (decisions §21): the oldest projects with a label of their own; the rest are "(other)". */
    METRICS_MAX_PROJECTS: int(50, 1).pipe(z.number().max(10_000)),
    /** A new series of /metrics/books shows 0 this long (≥ the scrape interval): increase() counts its first amount. */
    METRICS_NEW_SERIES_MS: int(60_000, 0),
    /** Traces over OTLP/HTTP (decisions §21): the SDK's own variables; unset, tracing is off and costs nothing. */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
    OTEL_SERVICE_NAME: z.string().min(1).default('spendgate'),
    OTEL_BSP_SCHEDULE_DELAY: int(5_000, 1),
    RATE_LIMIT_PER_SECOND: int(0, 0),
    DB_POOL_SIZE: int(20, 1),
    READ_POOL_SIZE: int(4, 1),
    READ_STATEMENT_TIMEOUT_MS: int(10_000, 100),
    // Reads at once: half the cores (one on two), so heavy reads never take every core from submissions (decisions §5).
    READ_CONCURRENCY: int(Math.max(1, Math.floor(availableParallelism() / 2)), 1),
    /** Report answers the reads worker keeps while the books they cover are unchanged (MB; 0: none; decisions §22). */
    REPORT_CACHE_MB: z.coerce.number().int().min(0).max(65_536).default(64),
    /** The reads thread's young generation, per semi-space (MB; 0: V8's default, which starts at 1 MB and grows). */
    READS_SEMI_SPACE_MB: z.coerce.number().int().min(0).max(1024).default(64),
    /**
     * spendReport's rows written as JSON directly, not through GraphQL's per-value execution (the same bytes; false:
     * execution).
     */
    GRAPHQL_ANSWER_REPORTS_DIRECTLY: z
      .enum(['true', 'false'])
      .default('true')
      .transform((v) => v === 'true'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    NODE_ENV: z.string().default('development'),
    CREDITS_PER_USD: z
      .string()
      .trim()
      .regex(/^\d+(\.\d+)?$/, 'must be a positive decimal, e.g. 100 (credits per US dollar)')
      .refine((v) => /[1-9]/.test(v), 'must be above 0')
      .optional(),
    VENDOR_NAME: z.string().trim().min(1).max(100).default('Upstream vendor'),
    // People and sign-in (decisions §11; docs/people.md).
    PUBLIC_URL: optionalUrl,
    OIDC_ISSUER: optionalUrl,
    OIDC_CLIENT_ID: z.string().trim().min(1).optional(),
    OIDC_CLIENT_SECRET: z.string().min(1).optional(),
    OIDC_ALLOWED_DOMAINS: z
      .string()
      .trim()
      .optional()
      .transform((v) =>
        v
          ? v
              .split(',')
              .map((d) => d.trim().toLowerCase())
              .filter(Boolean)
          : [],
      ),
    OIDC_DEFAULT_ROLE: z
      .string()
      .trim()
      .regex(
        /^(owner|finance|lead|viewer)(:all)?$/i,
        'must be a role (owner, finance, lead, viewer), optionally with :all (every project)',
      )
      .default('viewer'),
    SESSION_IDLE_MS: int(8 * 3600_000, 60_000),
    AUTH_FAILURES_PER_MINUTE: int(20, 1),
    AUTH_BLOCK_SECONDS: int(300, 1),
    SESSION_MAX_MS: int(24 * 3600_000, 60_000),
    // Alerts (decisions §8): the webhook dispatcher every instance runs.
    WEBHOOKS_ENABLED: z
      .enum(['true', 'false'])
      .default('true')
      .transform((v) => v === 'true'),
    // Outside the sandbox webhooks go to public https addresses only, unless this is true (decisions §11).
    WEBHOOK_ALLOW_PRIVATE_TARGETS: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true'),
    WEBHOOK_TIMEOUT_MS: int(5_000, 100),
    WEBHOOK_CONCURRENCY: int(8, 1),
    WEBHOOK_POLL_MS: int(500, 10),
    /** History (decisions §18): months of partitions kept made ahead of the current one; where archives are written. */
    PARTITIONS_AHEAD: int(2, 0).pipe(z.number().max(24)),
    ARCHIVE_DIR: z.string().min(1).optional(),
    /** Early warning (decisions §15): how often anomalies, forecasts and the digest are checked (0: never). */
    EARLY_WARNING_MS: int(300_000, 0),
    /** An hour's spend is anomalous past this multiple of its baseline's median (and the floor, and 5 MADs). */
    ANOMALY_MULTIPLE: z.coerce.number().min(1.5).max(100).default(3),
    ANOMALY_FLOOR_USD: decimalText('1'),
    ANOMALY_FLOOR_CREDITS: decimalText('1000'),
    /** An hour is evaluated this long after it ends, when its tasks have mostly settled. */
    ANOMALY_GRACE_MS: int(300_000, 0),
    /** Email alerts: smtp://user:pass@host:587 or smtps://…; the sender address. */
    SMTP_URL: z.string().trim().min(1).optional(),
    ALERT_EMAIL_FROM: z
      .string()
      .trim()
      .regex(/^[^@\s<>]+@[^@\s<>]+$/, 'must be an email address')
      .default('spendgate@localhost'),
    /** How often the ledger is sealed in the background (0: never; `spendgate ledger seal` does it by hand). */
    LEDGER_SEAL_MS: int(60_000, 0),
    WEBHOOK_RETRY_BASE_MS: int(5_000, 1),
    WEBHOOK_RETRY_FOR_MS: int(86_400_000, 1),
  })
  .superRefine((env, ctx) => {
    if (env.UPSTREAM_BASE_URL && !env.UPSTREAM_API_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['UPSTREAM_API_KEY'],
        message: 'is required when UPSTREAM_BASE_URL is set',
      });
    }
    if (env.OIDC_ISSUER) {
      for (const name of ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'PUBLIC_URL'] as const) {
        if (!env[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when OIDC_ISSUER is set' });
      }
      // An http issuer only on loopback: development and tests run a real provider there.
      const issuer = new URL(env.OIDC_ISSUER);
      if (issuer.protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname)) {
        ctx.addIssue({
          code: 'custom',
          path: ['OIDC_ISSUER'],
          message: 'must be https (http only on a loopback address)',
        });
      }
    }
    // Outside the sandbox there is no default admin: a public default would be everyone's admin.
    if (env.UPSTREAM_BASE_URL && !env.ADMIN_TOKEN) {
      ctx.addIssue({
        code: 'custom',
        path: ['ADMIN_TOKEN'],
        message: 'is required when UPSTREAM_BASE_URL is set (at least 16 random characters)',
      });
    }
  });

export type Config = z.infer<typeof schema> & {
  /** No UPSTREAM_BASE_URL: the built-in simulator stands in for the vendor. */
  sandbox: boolean;
  /** Where the sandbox's ADMIN_TOKEN is kept when none was configured (it is the same at every start). */
  adminTokenFile?: string;
};

/** How long a task may stay in flight before it is flagged for review, per kind, unless TASK_REVIEW_AFTER_MS says. */
export const TASK_REVIEW_AFTER_DEFAULT_MS = { chat: 30 * 60_000, image: 60 * 60_000, video: 3 * 3600_000 } as const;

export function reviewAfterMs(config: Pick<Config, 'TASK_REVIEW_AFTER_MS'>, kind: string): number {
  return (
    config.TASK_REVIEW_AFTER_MS ??
    TASK_REVIEW_AFTER_DEFAULT_MS[kind as keyof typeof TASK_REVIEW_AFTER_DEFAULT_MS] ??
    TASK_REVIEW_AFTER_DEFAULT_MS.video
  );
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(withTokenFile(env));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`Invalid configuration: ${issue.path.join('.')} ${issue.message}`);
  }
  return { ...parsed.data, sandbox: !parsed.data.UPSTREAM_BASE_URL };
}

/**
 * ADMIN_TOKEN_FILE: the admin token read from a file (a Docker or Kubernetes secret), so it never
 * sits in the environment or a compose file. Both set is a mistake, named.
 */
function withTokenFile(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const file = env.ADMIN_TOKEN_FILE?.trim();
  if (!file) return env;
  if (env.ADMIN_TOKEN)
    throw new ConfigError('Invalid configuration: ADMIN_TOKEN_FILE and ADMIN_TOKEN are both set; keep one');
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch {
    throw new ConfigError(`Invalid configuration: ADMIN_TOKEN_FILE ${file} cannot be read`);
  }
  return { ...env, ADMIN_TOKEN: token };
}

/**
 * The sandbox's admin token when none is configured: kept in DATA_DIR/admin-token (readable by
 * its owner only), made on the first start, the same at every later one.
 */
export function sandboxAdminToken(dataDir: string): { token: string; file: string } {
  const file = path.join(dataDir, 'admin-token');
  return { token: keptToken(file), file };
}

function keptToken(file: string): string {
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept.length >= 16) return kept;
  }
  const token = `sga_${randomBytes(24).toString('base64url')}`;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

export const CONFIG = Symbol('CONFIG');
