/**
 * A real OpenID Connect provider on loopback for sign-in tests: node-oidc-provider with its
 * development login page (any login name, any password), one confidential client for the
 * gateway, and accounts by login name. Nothing about it is mocked: discovery, the authorization
 * endpoint, PKCE, codes that work once, signed ID tokens, UserInfo.
 */
import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import { freePort } from '../../src/database/embedded.js';

export interface IdentityProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export const ACCOUNTS: Record<string, { email: string; email_verified: boolean; name: string }> = {
  ann: { email: 'ann@example.com', email_verified: true, name: 'Ann Analyst' },
  eve: { email: 'eve@elsewhere.example', email_verified: true, name: 'Eve Outsider' },
  olga: { email: 'olga@example.com', email_verified: true, name: 'Olga Owner' },
};

export async function identityProvider(gatewayUrl: string): Promise<IdentityProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = 'spendgate';
  const clientSecret = 'a-client-secret-for-tests-only-7d1f0b';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [`${gatewayUrl}/auth/callback`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['cookie-key-for-tests-only-0123456789'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, sub) {
      const account = ACCOUNTS[sub];
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...account }) };
    },
  });
  // oidc-provider refuses http issuers outside of development unless proxies are declared; loopback is fine.
  provider.on('server_error', (_ctx, error) =>
    process.stderr.write(`identity provider: ${(error as Error).message}\n`),
  );
  const server: Server = provider.listen(port, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return {
    issuer,
    clientId,
    clientSecret,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
