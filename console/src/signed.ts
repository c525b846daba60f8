/**
 * Who is signed in, as every page reads it: the viewer, the project being looked at, and what the
 * viewer may do. Its own module, so that the pages do not import the shell (app.tsx) that imports them.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Viewer } from './viewer';

export interface Signed {
  viewer: Viewer;
  /** The project the pages show: a project key's own; for anyone else, the one picked (null: all they may see). */
  projectId: string | null;
  pickProject(id: string | null): void;
}

export const SignedIn = createContext<Signed>(null as unknown as Signed);
export const useSigned = () => useContext(SignedIn);

/** Whether the caller holds a capability on some project (the API checks the project itself). */
export const may = (viewer: Viewer, capability: string): boolean => viewer.can.includes(capability);
