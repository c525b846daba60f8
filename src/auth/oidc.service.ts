/**
 * Sign-in through the organisation's OpenID Connect provider (decisions §11), with openid-client:
 * the authorization code flow with PKCE, `state` and `nonce`. A sign-in under way is a row of
 * sign_in_attempt (its state, nonce and code verifier) and a short cookie holding its state, so
 * the callback must come back to the browser that started it; the row is taken once, so a
 * replayed callback finds nothing. openid-client checks the state, the nonce, the ID token's
 * signature, issuer, audience and times, and exchanges the code with the verifier.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import * as oidc from 'openid-client';
import { CONFIG, type Config } from '../config/config.js';
import { Database, DATABASE } from '../database/database.js';

/** How long a sign-in may take at the provider. */
const ATTEMPT_MS = 10 * 60_000;

export interface Identity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

export class SignInRefused extends Error {}

@Injectable()
export class OidcService {
  private readonly logger = new Logger('OIDC');
  private configuration?: Promise<oidc.Configuration>;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(DATABASE) private readonly db: Database,
  ) {}

  get enabled(): boolean {
    return Boolean(this.config.OIDC_ISSUER);
  }

  get redirectUri(): string {
    return new URL('/auth/callback', this.config.PUBLIC_URL).toString();
  }

  /** Starts a sign-in: the provider's URL to send the browser to, and the state for its cookie. */
  async start(): Promise<{ url: string; state: string }> {
    const configuration = await this.discover();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    await this.db.query(`DELETE FROM sign_in_attempt WHERE created_at < now() - interval '1 day'`);
    await this.db.query('INSERT INTO sign_in_attempt (state, nonce, code_verifier) VALUES ($1, $2, $3)', [
      state,
      nonce,
      verifier,
    ]);
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.toString(), state };
  }

  /**
   * Finishes a sign-in from the callback's URL: `cookieState` is what the browser that started it
   * kept. Refused (SignInRefused, with a reason a person can read) for a tampered or replayed state,
   * a code the provider refuses, a wrong nonce or a bad ID token.
   */
  async finish(callbackUrl: URL, cookieState: string | undefined): Promise<Identity> {
    const state = callbackUrl.searchParams.get('state');
    if (!state || !cookieState || state !== cookieState)
      throw new SignInRefused('this sign-in was not started from this browser (its state does not match): start again');
    const { rows } = await this.db.query<{ nonce: string; code_verifier: string; fresh: boolean }>(
      `DELETE FROM sign_in_attempt WHERE state = $1 RETURNING nonce, code_verifier, created_at > now() - make_interval(secs => $2::double precision / 1000) AS fresh`,
      [state, ATTEMPT_MS],
    );
    const attempt = rows[0];
    if (!attempt) throw new SignInRefused('this sign-in was already used or never started: start again');
    if (!attempt.fresh) throw new SignInRefused('this sign-in took too long: start again');
    const configuration = await this.discover();
    // The callback as the provider sent it, at the redirect URI it was given (the gateway may sit behind a proxy).
    const current = new URL(this.redirectUri);
    current.search = callbackUrl.search;
    let tokens;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: attempt.code_verifier,
        expectedState: state,
        expectedNonce: attempt.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      this.logger.warn(`a sign-in was refused: ${(error as Error).message}`);
      throw new SignInRefused(`your identity provider's answer was refused (${describe(error as Error)})`);
    }
    const claims = tokens.claims();
    if (!claims) throw new SignInRefused('your identity provider sent no ID token');
    // Many providers put email and name in the ID token; a conforming one may keep them for the
    // UserInfo endpoint (asked with the access token, for the ID token's subject only).
    let profile: Record<string, unknown> = claims;
    if (typeof claims.email !== 'string' && tokens.access_token) {
      try {
        profile = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub)), ...claims };
      } catch (error) {
        throw new SignInRefused(`your identity provider's profile could not be read (${describe(error as Error)})`);
      }
    }
    return {
      issuer: String(claims.iss),
      subject: String(claims.sub),
      email: typeof profile.email === 'string' ? profile.email : null,
      emailVerified: profile.email_verified === true,
      name: typeof profile.name === 'string' ? profile.name : null,
    };
  }

  private discover(): Promise<oidc.Configuration> {
    this.configuration ??= oidc
      .discovery(
        new URL(this.config.OIDC_ISSUER!),
        this.config.OIDC_CLIENT_ID!,
        this.config.OIDC_CLIENT_SECRET!,
        undefined,
        {
          // An http issuer is accepted on loopback only (config.ts checks it): development and tests.
          ...(new URL(this.config.OIDC_ISSUER!).protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
        },
      )
      .catch((error: Error) => {
        this.configuration = undefined; // try again at the next sign-in
        throw new SignInRefused(`the identity provider cannot be reached (${error.message})`);
      });
    return this.configuration;
  }
}

/** A short reason, never a token or a code. */
function describe(error: Error & { code?: string; error?: string }): string {
  return (error.error ?? error.code ?? error.message).replace(/[A-Za-z0-9_-]{24,}/g, '…').slice(0, 120);
}
