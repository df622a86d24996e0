import { InitialSchema1763800000000 } from './1763800000000-initial-schema';

/** Every migration, oldest first. Add new ones at the end. */
export const MIGRATIONS = [InitialSchema1763800000000];
