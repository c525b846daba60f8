/**
 * Who is calling, for the reads worker (GraphQL, reports, the console): sessions, OpenID Connect,
 * the cookies, `Callers` (which resolvers and REST reads ask for the caller). What each caller may
 * do is permissions.ts and access.ts (plain functions, no module). The base of the rooms above it:
 * signing in is people's (people/sign-in.controller.ts); the audit trail's writer is bound by core.
 */
import { Module } from '@nestjs/common';
import { Callers } from './callers.js';
import { OidcService } from './oidc.service.js';
import { RestCallers } from './rest-caller.js';
import { SessionCookies } from './session-cookies.js';
import { SessionsService } from './sessions.service.js';
import { TargetLookups } from './target-lookups.js';

@Module({
  providers: [SessionsService, OidcService, SessionCookies, Callers, RestCallers, TargetLookups],
  exports: [SessionsService, OidcService, SessionCookies, Callers, RestCallers, TargetLookups],
})
export class AuthModule {}
