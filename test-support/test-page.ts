/** The test page (test-support/page/index.html) as the app build serves it: pass it as `openHarness({ path })`. */
export const TEST_PAGE = '/test-support/page/index.html';
