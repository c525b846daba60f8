/** People, service accounts and their tokens over GraphQL (the services are shared: core.module.ts). */
import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { PeopleResolver } from './people.resolver.js';

@Module({ imports: [AuthModule], providers: [PeopleResolver] })
export class PeopleModule {}
