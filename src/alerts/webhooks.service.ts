/**
 * Webhook endpoints and their deliveries (decisions §8): the rows the GraphQL API reads and
 * changes. The dispatcher (webhook-dispatcher.ts) sends; this only records what operators ask.
 */
import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { bigintId, requireUuid } from '../common/ids.js';
import { requirePageSize } from '../common/paging.js';
import { DATABASE, type Database } from '../database/database.js';
import { EVENT_TYPES, TEST_EVENT, type WebhookFormat } from './webhook-message.js';
import { checkTargetUrl, TargetRefused, targetsGuarded } from './webhook-target.js';
import { CONFIG, type Config } from '../config/config.js';

export interface EndpointRow {
  id: string;
  url: string;
  projectId: string | null;
  events: string[];
  format: WebhookFormat;
  enabled: boolean;
  createdAt: Date;
}

export interface DeliveryRow {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
  payload: string;
  /** Every attempt, oldest first. */
  log: AttemptRow[];
}

export interface AttemptRow {
  attempt: number;
  at: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

const ENDPOINT_COLUMNS = `id::text, url, project_id::text AS "projectId", events, format::text, enabled, created_at AS "createdAt"`;
export const MAX_DELIVERIES_PAGE = 200;

@Injectable()
export class WebhooksService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** A new endpoint and its signing secret: the only time the secret is shown. */
  async create(input: {
    url: string;
    events?: string[] | null;
    projectId?: string | null;
    format: WebhookFormat;
  }): Promise<{ endpoint: EndpointRow; secret: string }> {
    const url = input.format === 'EMAIL' ? checkMailto(input.url) : checkUrl(input.url, targetsGuarded(this.config));
    if (input.format !== 'EMAIL' && /^mailto:/i.test(input.url))
      throw ApiError.badRequest('url: a mailto: address is an endpoint of format EMAIL');
    const events = [...new Set(input.events ?? [])];
    const unknown = events.find((e) => !(EVENT_TYPES as readonly string[]).includes(e));
    if (unknown !== undefined)
      throw ApiError.badRequest(`events: "${unknown.slice(0, 60)}" is not one of ${EVENT_TYPES.join(', ')}`);
    if (input.projectId != null) {
      requireUuid('projectId', input.projectId);
      const { rows } = await this.db.query('SELECT 1 FROM project WHERE id = $1', [input.projectId]);
      if (!rows[0]) throw ApiError.notFound('projectId: no such project');
    }
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const { rows } = await this.db.query<EndpointRow>(
      `INSERT INTO webhook_endpoint (id, url, project_id, events, format, secret) VALUES (gen_random_uuid(), $1, $2, $3, $4::"WebhookFormat", $5)
       RETURNING ${ENDPOINT_COLUMNS}`,
      [url, input.projectId ?? null, events, input.format, secret],
    );
    return { endpoint: rows[0]!, secret };
  }

  /** Endpoints, all or those of the projects named (an endpoint of every project is then not listed). */
  async list(projectIds?: string[]): Promise<EndpointRow[]> {
    const { rows } = await this.db.query<EndpointRow>(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoint WHERE deleted_at IS NULL AND ($1::uuid[] IS NULL OR project_id = ANY($1)) ORDER BY created_at, id`,
      [projectIds ?? null],
    );
    return rows;
  }

  /** An endpoint's project (null: every project's), or undefined when there is no such endpoint. */
  async projectOfEndpoint(id: string): Promise<string | null | undefined> {
    requireUuid('id', id);
    const { rows } = await this.db.query<{ project_id: string | null }>(
      'SELECT project_id::text FROM webhook_endpoint WHERE id = $1 AND deleted_at IS NULL',
      [id],
    );
    return rows[0] ? rows[0].project_id : undefined;
  }

  /** A delivery's endpoint's project, or undefined. */
  async projectOfDelivery(deliveryId: string): Promise<string | null | undefined> {
    if (!bigintId(deliveryId)) throw ApiError.badRequest('deliveryId: is not a delivery id');
    const { rows } = await this.db.query<{ project_id: string | null }>(
      'SELECT w.project_id::text FROM webhook_delivery d JOIN webhook_endpoint w ON w.id = d.endpoint_id WHERE d.id = $1',
      [deliveryId],
    );
    return rows[0] ? rows[0].project_id : undefined;
  }

  /** Disabled or deleted: its pending deliveries fail at their next attempt, new events skip it. */
  async setEnabled(id: string, enabled: boolean): Promise<EndpointRow> {
    requireUuid('id', id);
    const { rows } = await this.db.query<EndpointRow>(
      `UPDATE webhook_endpoint SET enabled = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING ${ENDPOINT_COLUMNS}`,
      [id, enabled],
    );
    if (!rows[0]) throw ApiError.notFound('no such webhook endpoint');
    return rows[0];
  }

  /**
   * Queues a webhook.test event for this endpoint only (its delivery shows in the log like any other); the event's id.
   */
  async sendTest(id: string, sentBy: string): Promise<string> {
    requireUuid('id', id);
    const { rows } = await this.db.query<{ project_id: string | null; name: string | null; enabled: boolean }>(
      'SELECT e.project_id::text, p.name, e.enabled FROM webhook_endpoint e LEFT JOIN project p ON p.id = e.project_id WHERE e.id = $1 AND e.deleted_at IS NULL',
      [id],
    );
    const endpoint = rows[0];
    if (!endpoint) throw ApiError.notFound('no such webhook endpoint');
    if (!endpoint.enabled) throw ApiError.badRequest('the endpoint is disabled: enable it before sending a test event');
    const cause = `${TEST_EVENT}:${id}:${randomBytes(8).toString('hex')}`;
    const data = {
      project: { id: endpoint.project_id, name: endpoint.name ?? 'every project' },
      endpointId: id,
      sentBy,
    };
    await this.db.query('SELECT spendgate_emit($1, $2, $3, $4::jsonb)', [
      TEST_EVENT,
      endpoint.project_id,
      cause,
      JSON.stringify(data),
    ]);
    const event = await this.db.query<{ id: string }>('SELECT id FROM outbox_event WHERE cause = $1', [cause]);
    return event.rows[0]!.id;
  }

  async delete(id: string): Promise<boolean> {
    requireUuid('id', id);
    const { rowCount } = await this.db.query(
      'UPDATE webhook_endpoint SET deleted_at = now(), enabled = false WHERE id = $1 AND deleted_at IS NULL',
      [id],
    );
    if (!rowCount) throw ApiError.notFound('no such webhook endpoint');
    return true;
  }

  /** Newest first; `after` is the last id of the previous page. */
  async deliveries(q: {
    endpointId?: string | null;
    status?: string | null;
    first: number;
    after?: string | null;
    projectIds?: string[];
  }): Promise<{ rows: DeliveryRow[]; hasNextPage: boolean }> {
    if (q.endpointId != null) requireUuid('endpointId', q.endpointId);
    requirePageSize(q.first, MAX_DELIVERIES_PAGE);
    if (q.after != null && !/^\d{1,18}$/.test(q.after))
      throw ApiError.badRequest('after: is not a cursor of this list');
    const { rows } = await this.db.query<Omit<DeliveryRow, 'log'>>(
      `SELECT d.id::text, d.event_id AS "eventId", e.type AS "eventType", d.endpoint_id::text AS "endpointId", d.status::text, d.attempts,
              CASE WHEN d.status = 'PENDING' THEN d.next_attempt_at END AS "nextAttemptAt", d.last_status_code AS "lastStatusCode",
              d.last_error AS "lastError", d.delivered_at AS "deliveredAt", d.created_at AS "createdAt", e.payload
       FROM webhook_delivery d JOIN outbox_event e ON e.id = d.event_id
       WHERE ($1::uuid IS NULL OR d.endpoint_id = $1) AND ($2::"DeliveryStatus" IS NULL OR d.status = $2) AND ($3::bigint IS NULL OR d.id < $3)
         AND ($5::uuid[] IS NULL OR d.endpoint_id IN (SELECT w.id FROM webhook_endpoint w WHERE w.project_id = ANY($5)))
       ORDER BY d.id DESC LIMIT $4`,
      [q.endpointId ?? null, q.status ?? null, q.after ?? null, q.first + 1, q.projectIds ?? null],
    );
    const page = rows.slice(0, q.first);
    const log = await this.attempts(page.map((d) => d.id));
    return { rows: page.map((d) => ({ ...d, log: log.get(d.id) ?? [] })), hasNextPage: rows.length > q.first };
  }

  /** The attempt logs of a page of deliveries, in one query. */
  private async attempts(deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
    const { rows } = await this.db.query<AttemptRow & { deliveryId: string }>(
      `SELECT delivery_id::text AS "deliveryId", attempt, at, status_code AS "statusCode", latency_ms AS "latencyMs", error
       FROM webhook_attempt WHERE delivery_id = ANY($1::bigint[]) ORDER BY delivery_id, id`,
      [deliveryIds],
    );
    const byDelivery = new Map<string, AttemptRow[]>();
    for (const { deliveryId, ...attempt } of rows)
      byDelivery.set(deliveryId, [...(byDelivery.get(deliveryId) ?? []), attempt]);
    return byDelivery;
  }

  /** Sends it again now, with the same event id (webhook-id), whatever it came to before. */
  async redeliver(deliveryId: string): Promise<boolean> {
    if (!bigintId(deliveryId)) throw ApiError.badRequest('deliveryId: is not a delivery id');
    const { rows } = await this.db.query<{ live: boolean }>(
      `UPDATE webhook_delivery d SET status = 'PENDING', next_attempt_at = now()
       FROM webhook_endpoint w WHERE d.id = $1 AND w.id = d.endpoint_id RETURNING (w.enabled AND w.deleted_at IS NULL) AS live`,
      [deliveryId],
    );
    if (!rows[0]) throw ApiError.notFound('no such delivery');
    if (!rows[0].live) throw ApiError.conflict('its endpoint is disabled or deleted: enable it first');
    return true;
  }
}

/** An EMAIL endpoint's address: `mailto:` and one plain address (no name, no second recipient, no header). */
function checkMailto(raw: string): string {
  const match = /^mailto:([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63})$/i.exec(raw.trim());
  if (!match) throw ApiError.badRequest('url: an EMAIL endpoint is mailto:someone@example.com (one address)');
  return `mailto:${match[1]!.toLowerCase()}`;
}

/** The URL as given, checked (webhook-target.ts): guarded outside the sandbox unless private targets are allowed. */
function checkUrl(raw: string, guarded: boolean): string {
  if (raw.length > 2048) throw ApiError.badRequest('url: at most 2048 characters');
  try {
    return checkTargetUrl(raw, guarded);
  } catch (error) {
    if (error instanceof TargetRefused) throw ApiError.badRequest(error.message);
    throw error;
  }
}
