/**
 * Signing in and who is calling, for the reads worker (GraphQL, reports, the console's sign-in):
 * sessions, OpenID Connect, the cookies, and `Principals`, which resolvers ask for the caller.
 * What each caller may do is permissions.ts and access.ts (plain functions, no module).
 */
import { Module } from '@nestjs/common';
import { Principals } from '../graphql/graphql-auth.js';
import { AuthController } from './auth.controller.js';
import { OidcService } from './oidc.service.js';
import { RestCallers } from './rest-caller.js';
import { SessionCookies } from './session-cookies.js';
import { SessionsService } from './sessions.service.js';

@Module({
  providers: [SessionsService, OidcService, SessionCookies, Principals, RestCallers],
  controllers: [AuthController],
  exports: [SessionsService, Principals, RestCallers],
})
export class AuthModule {}
