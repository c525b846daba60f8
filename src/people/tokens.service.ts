/**
 * Access tokens (decisions §11): a person's (`sgp_`) for the API, the CLI and the console's
 * sign-in without OIDC, and a service account's (`sgs_`) for dashboards, scripts and CI. Created
 * with a name and an optional expiry; the secret is returned once and stored as a SHA-256 hash;
 * listed with prefix, name, created, last used and expiry; revocable.
 */
import { Inject, Injectable } from '@nestjs/common';
import { generateKey } from '../auth/api-keys.js';
import { ApiError } from '../common/api-error.js';
import { cleanText } from '../common/text.js';
import { Database, DATABASE } from '../database/database.js';

export interface TokenRow {
  id: string;
  prefix: string;
  name: string;
  personId: string | null;
  serviceAccountId: string | null;
  holder: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export type Holder = { personId: string } | { serviceAccountId: string };

const TOKENS = `SELECT t.id::text, t.prefix, t.name, t.person_id::text AS "personId", t.service_account_id::text AS "serviceAccountId",
  coalesce(p.email, s.name) AS holder, t.created_at AS "createdAt", t.expires_at AS "expiresAt", t.last_used_at AS "lastUsedAt", t.revoked_at AS "revokedAt"
  FROM access_token t LEFT JOIN person p ON p.id = t.person_id LEFT JOIN service_account s ON s.id = t.service_account_id`;

@Injectable()
export class TokensService {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** A new token; returns it with its secret, which is never stored or shown again. */
  async create(holder: Holder, name: string, expiresAt?: Date): Promise<{ token: TokenRow; secret: string }> {
    const clean = cleanText('name', name, 100);
    if (expiresAt && expiresAt.getTime() <= Date.now()) throw ApiError.badRequest('expiresAt: must be in the future');
    const kind = 'personId' in holder ? 'sgp' : 'sgs';
    const { key, prefix, hash } = generateKey(kind);
    const { rows } = await this.db.query<{ id: string }>(
      `INSERT INTO access_token (id, prefix, hash, name, person_id, service_account_id, expires_at) VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6) RETURNING id::text`,
      [
        prefix,
        hash,
        clean,
        'personId' in holder ? holder.personId : null,
        'serviceAccountId' in holder ? holder.serviceAccountId : null,
        expiresAt ?? null,
      ],
    );
    return { token: (await this.get(rows[0]!.id))!, secret: key };
  }

  async get(tokenId: string): Promise<TokenRow | undefined> {
    const { rows } = await this.db.query<TokenRow>(`${TOKENS} WHERE t.id = $1`, [tokenId]);
    return rows[0];
  }

  /** Tokens of one holder, or of everyone (undefined), newest first. */
  async list(holder?: Holder): Promise<TokenRow[]> {
    const { rows } = await this.db.query<TokenRow>(
      `${TOKENS} WHERE ($1::uuid IS NULL OR t.person_id = $1) AND ($2::uuid IS NULL OR t.service_account_id = $2) ORDER BY t.created_at DESC, t.id`,
      [
        holder && 'personId' in holder ? holder.personId : null,
        holder && 'serviceAccountId' in holder ? holder.serviceAccountId : null,
      ],
    );
    return rows;
  }

  async revoke(tokenId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE access_token SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL',
      [tokenId],
    );
    return (rowCount ?? 0) > 0;
  }
}
