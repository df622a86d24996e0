import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The README's code block marked `<!-- readme-example: name … -->`: the examples its tests run as written. */
export function readmeExample(name: string): string {
  const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
  const found = new RegExp(`<!-- readme-example: ${name}\\b[^>]*-->\\n\`\`\`(?:js|ts)\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!found) throw new Error(`README.md has no example marked readme-example: ${name}`);
  return found[1];
}
