// Package browsertest holds the web UI's tests against a whole gateway: the pages of the
// modules' party panels, a crawl of every link the pages show, a check that no secret
// reaches a page, a response or a log line, and flows driven in real headless Chromium
// (WHARF_TEST_CHROMIUM names the browser binary, else Chromium is looked for on the
// PATH; without one those tests are skipped). It has no code of its own.
package browsertest
