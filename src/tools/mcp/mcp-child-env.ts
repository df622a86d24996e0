/**
 * The environment of a stdio MCP server: an allow-list of harmless variables from Orion's own
 * environment plus the server's `env` from the config, nothing else. Orion's secrets (LLM_API_KEY,
 * API_KEYS, DATABASE_URL) and everything else, proxies and NODE_OPTIONS included, stay behind;
 * a server that needs one gets it explicitly through its `env` (see mcp-config.ts).
 *
 * The list follows the SDK's getDefaultEnvironment() (itself sudo's default env_keep), plus the
 * locale, time zone and temp-dir variables most tools expect, plus Windows' system variables.
 */
const INHERITED = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  // Windows
  'APPDATA',
  'HOMEDRIVE',
  'HOMEPATH',
  'LOCALAPPDATA',
  'PROCESSOR_ARCHITECTURE',
  'PROGRAMFILES',
  'SYSTEMDRIVE',
  'SYSTEMROOT',
  'USERNAME',
  'USERPROFILE',
  'COMSPEC',
  'PATHEXT',
] as const;

const INHERITED_PREFIX = /^LC_[A-Z]+$/;

export function mcpChildEnvironment(
  serverEnv: Record<string, string>,
  parentEnv: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(parentEnv)) {
    if (value === undefined || value.startsWith('()')) continue; // exported shell functions
    if ((INHERITED as readonly string[]).includes(key) || INHERITED_PREFIX.test(key)) env[key] = value;
  }
  return { ...env, ...serverEnv };
}
