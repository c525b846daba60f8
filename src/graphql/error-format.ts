/**
 * GraphQL's answers to bad input, kept small: graphql-js names an invalid variable with its whole
 * value ("Variable "$a" got invalid value "999…" (140,000 digits)"), so a hostile value would come
 * back whole in the error and in any log of it. The value is clipped to 40 characters; the reason
 * after it is kept.
 */
import mercurius from 'mercurius';

const ECHO = /(got invalid value )("(?:[^"\\]|\\.)*"|[^;]*)/s;

export function clipEcho(message: string): string {
  return message.replace(ECHO, (_all, lead: string, value: string) => `${lead}${value.length > 40 ? `${value.slice(0, 40)}…` : value}`);
}

export const errorFormatter: typeof mercurius.defaultErrorFormatter = (execution, context) => {
  const formatted = mercurius.defaultErrorFormatter(execution, context);
  for (const error of formatted.response.errors ?? []) (error as { message: string }).message = clipEcho(error.message);
  return formatted;
};
