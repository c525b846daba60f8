/**
 * People and service accounts (decisions §11): invited by an owner, granted a role on every
 * project or on named ones, disabled (their tokens and sessions stop at once: both are read with
 * their holder on every request). Who may do this is decided by the resolvers with auth/access.ts;
 * every change is audited there (audit/changes.service.ts).
 */
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { requireUuid } from '../common/ids.js';
import { cleanText } from '../common/text.js';
import { Database, DATABASE } from '../database/database.js';
import { ROLES, type Grant, type Role } from '../auth/permissions.js';

export interface PersonRow {
  id: string;
  email: string;
  displayName: string | null;
  role: Role;
  allProjects: boolean;
  projectIds: string[];
  state: 'invited' | 'active' | 'disabled';
  signsInWith: string | null;
  invitedBy: string | null;
  createdAt: Date;
  lastSignInAt: Date | null;
}

export interface ServiceAccountRow {
  id: string;
  name: string;
  role: Role;
  allProjects: boolean;
  projectIds: string[];
  createdBy: string | null;
  createdAt: Date;
  disabledAt: Date | null;
}

const PERSON = `SELECT id::text, email, display_name AS "displayName", role::text AS role, all_projects AS "allProjects", project_ids::text[] AS "projectIds",
  state::text AS state, CASE WHEN oidc_subject IS NOT NULL THEN oidc_issuer END AS "signsInWith", invited_by AS "invitedBy",
  created_at AS "createdAt", last_sign_in_at AS "lastSignInAt" FROM person`;
const SERVICE = `SELECT id::text, name, role::text AS role, all_projects AS "allProjects", project_ids::text[] AS "projectIds", created_by AS "createdBy",
  created_at AS "createdAt", disabled_at AS "disabledAt" FROM service_account`;

@Injectable()
export class PeopleService {
  constructor(@Inject(DATABASE) private readonly db: Database) {}

  /** The id of the person with this address who is not disabled. */
  async activePersonId(email: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ id: string }>(
      `SELECT id::text FROM person WHERE email = $1 AND state <> 'disabled'`,
      [normalEmail(email)],
    );
    return rows[0]?.id;
  }

  /** The id of the service account of this name that is not disabled. */
  async activeServiceAccountId(name: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ id: string }>(
      'SELECT id::text FROM service_account WHERE name = $1 AND disabled_at IS NULL',
      [name],
    );
    return rows[0]?.id;
  }

  async invite(email: string, grant: Grant, invitedBy: string): Promise<PersonRow> {
    const address = normalEmail(email);
    const { all, ids } = await this.checkGrant(grant);
    const { rows } = await this.db.query<{ id: string }>(
      `INSERT INTO person (id, email, role, all_projects, project_ids, invited_by) VALUES (gen_random_uuid(), $1, $2::"Role", $3, $4::uuid[], $5)
       ON CONFLICT (email) DO NOTHING RETURNING id::text`,
      [address, grant.role, all, ids, invitedBy],
    );
    if (!rows[0]) throw ApiError.conflict(`email: ${address} was already invited`);
    return (await this.person(rows[0].id))!;
  }

  async setRole(personId: string, grant: Grant): Promise<PersonRow> {
    requireUuid('personId', personId);
    const { all, ids } = await this.checkGrant(grant);
    const { rowCount } = await this.db.query(
      'UPDATE person SET role = $2::"Role", all_projects = $3, project_ids = $4::uuid[] WHERE id = $1',
      [personId, grant.role, all, ids],
    );
    if (!rowCount) throw ApiError.notFound(`person ${personId} not found`);
    return (await this.person(personId))!;
  }

  /** Disables a person: their tokens and sessions stop working on every instance at once. */
  async disable(personId: string): Promise<PersonRow> {
    requireUuid('personId', personId);
    const { rowCount } = await this.db.query(
      `UPDATE person SET state = 'disabled', disabled_at = now() WHERE id = $1`,
      [personId],
    );
    if (!rowCount) throw ApiError.notFound(`person ${personId} not found`);
    await this.db.query('UPDATE session SET ended_at = now() WHERE person_id = $1 AND ended_at IS NULL', [personId]);
    return (await this.person(personId))!;
  }

  async person(personId: string): Promise<PersonRow | undefined> {
    const { rows } = await this.db.query<PersonRow>(`${PERSON} WHERE id = $1`, [personId]);
    return rows[0];
  }

  async people(): Promise<PersonRow[]> {
    return (await this.db.query<PersonRow>(`${PERSON} ORDER BY email`)).rows;
  }

  async createServiceAccount(name: string, grant: Grant, createdBy: string): Promise<ServiceAccountRow> {
    const clean = cleanText('name', name, 100);
    const { all, ids } = await this.checkGrant(grant);
    const { rows } = await this.db.query<{ id: string }>(
      `INSERT INTO service_account (id, name, role, all_projects, project_ids, created_by) VALUES (gen_random_uuid(), $1, $2::"Role", $3, $4::uuid[], $5)
       ON CONFLICT (name) DO NOTHING RETURNING id::text`,
      [clean, grant.role, all, ids, createdBy],
    );
    if (!rows[0]) throw ApiError.conflict(`name: a service account named "${clean}" exists`);
    return (await this.serviceAccount(rows[0].id))!;
  }

  async serviceAccount(id: string): Promise<ServiceAccountRow | undefined> {
    const { rows } = await this.db.query<ServiceAccountRow>(`${SERVICE} WHERE id = $1`, [id]);
    return rows[0];
  }

  async serviceAccounts(): Promise<ServiceAccountRow[]> {
    return (await this.db.query<ServiceAccountRow>(`${SERVICE} ORDER BY name`)).rows;
  }

  /**
   * Who an OIDC sign-in is (decisions §11): the person already bound to this identity; or the one
   * invited under this (verified) email, now bound to it; or, when the email's domain is allowed, a
   * new person with the default grant. Undefined: not let in, with why.
   */
  async admit(
    identity: { issuer: string; subject: string; email: string | null; emailVerified: boolean; name: string | null },
    allowedDomains: string[],
    defaultGrant: Grant,
  ): Promise<{ person: PersonRow } | { refused: string }> {
    const bound = await this.db.query<PersonRow>(`${PERSON} WHERE oidc_issuer = $1 AND oidc_subject = $2`, [
      identity.issuer,
      identity.subject,
    ]);
    if (bound.rows[0])
      return bound.rows[0].state === 'disabled'
        ? { refused: 'your access to spendgate was disabled' }
        : { person: await this.signedIn(bound.rows[0].id, identity.name) };
    if (!identity.email || !identity.emailVerified)
      return { refused: 'your identity provider did not give a verified email address' };
    const email = identity.email.toLowerCase();
    const invited = await this.db.query<PersonRow>(`${PERSON} WHERE email = $1`, [email]);
    const person = invited.rows[0];
    if (person) {
      if (person.state === 'disabled') return { refused: 'your access to spendgate was disabled' };
      if (person.signsInWith) return { refused: `${email} already signs in with another identity` };
      await this.db.query('UPDATE person SET oidc_issuer = $2, oidc_subject = $3 WHERE id = $1', [
        person.id,
        identity.issuer,
        identity.subject,
      ]);
      return { person: await this.signedIn(person.id, identity.name) };
    }
    const domain = email.split('@')[1] ?? '';
    if (!allowedDomains.includes(domain))
      return { refused: `${email} was not invited to spendgate: ask an owner to invite you` };
    const { all, ids } = await this.checkGrant(defaultGrant);
    const { rows } = await this.db.query<{ id: string }>(
      `INSERT INTO person (id, email, role, all_projects, project_ids, oidc_issuer, oidc_subject, invited_by)
       VALUES (gen_random_uuid(), $1, $2::"Role", $3, $4::uuid[], $5, $6, 'OIDC_ALLOWED_DOMAINS') RETURNING id::text`,
      [email, defaultGrant.role, all, ids, identity.issuer, identity.subject],
    );
    return { person: await this.signedIn(rows[0]!.id, identity.name) };
  }

  /** A person signing in with an access token, activated if they were only invited. */
  async signedIn(personId: string, displayName?: string | null): Promise<PersonRow> {
    await this.db.query(
      `UPDATE person SET state = CASE WHEN state = 'invited' THEN 'active'::"PersonState" ELSE state END, last_sign_in_at = now(),
              display_name = coalesce($2, display_name) WHERE id = $1`,
      [personId, displayName ? displayName.slice(0, 200) : null],
    );
    return (await this.person(personId))!;
  }

  /** A grant's projects exist; an owner's role holds everywhere. */
  private async checkGrant(grant: Grant): Promise<{ all: boolean; ids: string[] }> {
    if (!ROLES.includes(grant.role)) throw ApiError.badRequest(`role: is one of ${ROLES.join(', ')}`);
    if (grant.role === 'OWNER' || grant.projectIds === undefined || grant.projectIds === null)
      return { all: true, ids: [] };
    for (const id of grant.projectIds) requireUuid('projectIds', id);
    const ids = [...new Set(grant.projectIds)];
    if (ids.length) {
      const { rows } = await this.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM project WHERE id = ANY($1::uuid[])',
        [ids],
      );
      if (rows[0]!.n !== ids.length) throw ApiError.badRequest('projectIds: not every project exists');
    }
    return { all: false, ids };
  }
}

export function normalEmail(email: string): string {
  const address = email.trim().toLowerCase();
  if (address.length > 254 || !/^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/.test(address))
    throw ApiError.badRequest('email: is not an email address');
  return address;
}
