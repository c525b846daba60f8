/**
 * Who may scrape (decisions §21): the metrics tell spend and traffic, so in production they answer
 * only with `Authorization: Bearer <METRICS_TOKEN>` (unset: refused, saying so); elsewhere open.
 * One rule for /metrics (this instance) and /metrics/books (the books, from the database).
 */
import { bearer, sameSecret } from '../auth/api-keys.js';
import { ApiError } from '../common/api-error.js';
import type { Config } from '../config/config.js';

export function checkMetricsAccess(config: Config, authorization: string | undefined): void {
  if (config.NODE_ENV !== 'production') return;
  const token = config.METRICS_TOKEN;
  if (!token)
    throw ApiError.forbidden(
      '/metrics is closed in production until METRICS_TOKEN is set; then scrape it with Authorization: Bearer <METRICS_TOKEN>',
    );
  const given = bearer(authorization);
  if (!given || !sameSecret(given, token)) throw ApiError.unauthorized('send Authorization: Bearer <METRICS_TOKEN>');
}
