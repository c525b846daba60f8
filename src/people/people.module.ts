/**
 * People, service accounts and their tokens over GraphQL, and signing in to the console (the services are shared:
 * core/core.module.ts).
 */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { PeopleResolver } from './people.resolver.js';
import { SignInController } from './sign-in.controller.js';

@Module({ imports: [AuthModule], providers: [PeopleResolver], controllers: [SignInController] })
export class PeopleModule {}
