// Reads the Vitest and Playwright JSON reports and prints "N passed, N failed" (both runners).
// A missing report counts as one failure, so a runner that never ran cannot look green.
import { readFileSync, existsSync } from 'node:fs';

let passed = 0;
let failed = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.log(`${file}: missing (the runner did not finish, or the build before it (which type-checks) failed: see the log above)`);
    failed += 1;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  if (typeof r.numPassedTests === 'number') {
    // Vitest. numFailedTestSuites also counts every describe block around a failed test, so only
    // files that failed without a failed test (they did not load, or a hook threw) are added.
    const broken = (r.testResults ?? []).filter(
      (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
    ).length;
    passed += r.numPassedTests;
    failed += r.numFailedTests + broken;
    console.log(`${file}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${broken} files failed outside their tests`);
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
