"""The person's browser: one persistent Chromium profile per person (logins survive tasks,
days and restarts), driven through Playwright for one task at a time, behind the sentinel."""
