/**
 * Nest's code-first schema gives every object field a resolver that reads the property of the
 * same name (`root[field.name]`, its default value when undefined). We set no field middleware,
 * field defaults or renamed fields, so each of those does exactly what GraphQL's default
 * property read does; but a field with a resolver cannot be inlined by graphql-jit, which calls
 * it through a try/catch, an info object and a promise check per value (bench/FINDINGS.md,
 * bench/FINDINGS.md: with the JIT on, these calls were a third of a 9,000-group report's execution).
 * Resolvers written with @ResolveField or @Query are other functions and stay.
 */
import { GraphQLObjectType, type GraphQLSchema } from 'graphql';

/** The name Nest's generated property readers carry (object-type-definition.factory's createFieldResolver). */
const NEST_PROPERTY_READER = 'rootFieldResolver';

export function withPlainFieldReads(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!(type instanceof GraphQLObjectType) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.resolve?.name === NEST_PROPERTY_READER) field.resolve = undefined;
    }
  }
  return schema;
}
