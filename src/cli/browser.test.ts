import { describe, expect, it } from 'vitest';
import { BrowserNotFoundError } from '../errors.js';
import { resolveChromium, SYSTEM_CHROMIUM } from './browser.js';

const PW = '/root/.cache/ms-playwright/chromium-1/chrome-linux64/chrome';

/** A disk holding only `files`. */
const lookup = (files: string[], env: NodeJS.ProcessEnv = {}, pw: string | undefined = PW) => ({
  env,
  exists: (p: string) => files.includes(p),
  playwrightPath: () => pw,
});

describe('resolveChromium', () => {
  it('takes CHROME_PATH first, even with a system Chromium and Playwright\'s present', () => {
    expect(resolveChromium(lookup(['/x/chrome', '/usr/bin/chromium', PW], { CHROME_PATH: '/x/chrome' }))).toBe('/x/chrome');
  });

  it('takes the system Chromium next, before Playwright\'s, and /usr/bin/chromium before the other names', () => {
    expect(resolveChromium(lookup(['/usr/bin/google-chrome', '/usr/bin/chromium', PW]))).toBe('/usr/bin/chromium');
    expect(resolveChromium(lookup(['/usr/bin/google-chrome', PW]))).toBe('/usr/bin/google-chrome');
  });

  it('goes past a CHROME_PATH that does not exist', () => {
    expect(resolveChromium(lookup(['/usr/bin/chromium'], { CHROME_PATH: '/gone/chrome' }))).toBe('/usr/bin/chromium');
  });

  it('takes Playwright\'s own Chromium when there is no other', () => {
    expect(resolveChromium(lookup([PW]))).toBe(PW);
  });

  it('fails with BrowserNotFoundError naming every path tried, in order', () => {
    const err = (() => {
      try {
        resolveChromium(lookup([], { CHROME_PATH: '/gone/chrome' }));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(BrowserNotFoundError);
    const msg = (err as Error).message;
    const order = ['CHROME_PATH=/gone/chrome', ...SYSTEM_CHROMIUM, PW].map((p) => msg.indexOf(p));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it('fails when Playwright has no build for the platform and nothing else exists', () => {
    expect(() => resolveChromium(lookup([], {}, undefined))).toThrow(BrowserNotFoundError);
  });
});
