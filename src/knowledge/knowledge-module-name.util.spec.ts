import { ROOT_MODULE, displayNameOf, moduleOfPath } from './knowledge-module-name.util';

describe('moduleOfPath', () => {
  it('is the top-level folder, or the root module for files at the top', () => {
    expect(moduleOfPath('roadmap/2027.md')).toBe('roadmap');
    expect(moduleOfPath('docs/api/rest.md')).toBe('docs');
    expect(moduleOfPath('README.md')).toBe(ROOT_MODULE);
    expect(ROOT_MODULE).toBe('general');
  });
});

describe('displayNameOf', () => {
  it.each([
    ['getting-started', 'Getting Started'],
    ['api', 'API'],
    ['apiReference', 'API Reference'],
    ['release_notes', 'Release Notes'],
    ['general', 'General'],
    ['v2.docs', 'V2 Docs'],
    ['---', '---'],
  ])('%s → %s', (name, shown) => expect(displayNameOf(name)).toBe(shown));
});
