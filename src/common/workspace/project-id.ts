/** A project id becomes a folder name under WORKSPACE_ROOT, so it is one safe path segment. */
export const PROJECT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const PROJECT_ID_MESSAGE = 'projectId must be 1-64 characters of A-Z, a-z, 0-9, _ or -';
