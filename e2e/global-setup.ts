/**
 * Playwright's global set-up: the test models (e2e/test-models.ts), and a Chromium. Without a
 * Chromium it prints one line with the remedy and fails the run, instead of every test failing
 * with the same error.
 */
import { findChromium } from '../src/cli/browser.js';
import { BrowserNotFoundError } from '../src/errors.js';
import { ensureTestModels } from './test-models.js';

export default function globalSetup(): void {
  ensureTestModels();
  try {
    findChromium();
  } catch (e) {
    if (!(e instanceof BrowserNotFoundError)) throw e;
    const line = 'No Chromium for the browser tests: set CHROME_PATH, install one (Debian: apt-get install -y chromium), or run `npx playwright install chromium`';
    const err = new Error(line);
    err.stack = line;
    throw err;
  }
}
