import { durationOrOff, formatDuration, isDurationOrOff, MAX_DURATION_MS, parseDuration } from './duration';

describe('durations', () => {
  it('reads a whole number and a unit', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('12h')).toBe(43_200_000);
    expect(parseDuration('30d')).toBe(2_592_000_000);
    expect(parseDuration('2w')).toBe(1_209_600_000);
    expect(parseDuration(' 3s ')).toBe(3000);
  });

  it('refuses a bare number, a fraction, a sum, a negative or an unknown unit', () => {
    for (const bad of ['90', '1.5h', '1h30m', '-5s', '5 s', '5y', 's', '', '5S']) expect(parseDuration(bad)).toBeUndefined();
  });

  it('refuses more than ten years', () => {
    expect(parseDuration(`${MAX_DURATION_MS / 86_400_000}d`)).toBe(MAX_DURATION_MS);
    expect(parseDuration(`${MAX_DURATION_MS / 86_400_000 + 1}d`)).toBeUndefined();
  });

  it('turns off with 0, off, forever, never or nothing', () => {
    for (const off of ['0', 'off', 'OFF', 'forever', 'never', '', undefined, null]) expect(durationOrOff(off)).toBeNull();
    expect(durationOrOff('90s')).toBe(90_000);
    expect(() => durationOrOff('0s')).toThrow(/not a duration/);
    expect(() => durationOrOff('ninety')).toThrow(/not a duration/);
  });

  it('validates for the schema and the admin route', () => {
    expect(isDurationOrOff('30d')).toBe(true);
    expect(isDurationOrOff('off')).toBe(true);
    expect(isDurationOrOff('30')).toBe(false);
    expect(isDurationOrOff(30)).toBe(false);
  });

  it('formats with the largest unit that divides the value', () => {
    expect(formatDuration(90_000)).toBe('90s');
    expect(formatDuration(2_592_000_000)).toBe('30d');
    expect(formatDuration(1500)).toBe('1500ms');
    expect(formatDuration(43_200_000)).toBe('12h');
  });
});
