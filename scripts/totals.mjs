// Reads the Vitest and Playwright JSON reports and prints "N passed, N failed" (both runners).
// A missing report counts as one failure, so a runner that never ran cannot look green.
import { readFileSync, existsSync } from 'node:fs';

let passed = 0;
let failed = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.log(`${file}: missing (runner did not finish)`);
    failed += 1;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  if (typeof r.numPassedTests === 'number') {
    // Vitest
    passed += r.numPassedTests;
    failed += r.numFailedTests + (r.numFailedTestSuites ?? 0);
    console.log(`${file}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numFailedTestSuites ?? 0} suites failed`);
  } else if (r.stats) {
    // Playwright
    const p = r.stats.expected + r.stats.flaky;
    const f = r.stats.unexpected + (r.errors?.length ?? 0);
    passed += p;
    failed += f;
    console.log(`${file}: ${p} passed, ${f} failed, ${r.stats.skipped} skipped`);
  } else {
    console.log(`${file}: unreadable report`);
    failed += 1;
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
