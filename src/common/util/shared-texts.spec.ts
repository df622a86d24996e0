import { SharedTexts } from './shared-texts';

describe('SharedTexts', () => {
  it('keeps one copy per distinct text, up to its bound, forgetting the oldest first', () => {
    const shared = new SharedTexts(2);
    const built = (s: string) => [s.slice(0, 1), s.slice(1)].join('');
    expect(shared.share(built('prompt a'))).toBe('prompt a');
    expect(shared.share(built('prompt a'))).toBe('prompt a');
    expect(shared.size).toBe(1);
    shared.share('prompt b');
    shared.share('prompt c');
    expect(shared.size).toBe(2);
    // 'prompt a' was the oldest: forgotten, so sharing it again adds it back and drops 'prompt b'
    shared.share('prompt a');
    expect(shared.size).toBe(2);
    shared.share('prompt c');
    expect(shared.size).toBe(2);
  });
});
