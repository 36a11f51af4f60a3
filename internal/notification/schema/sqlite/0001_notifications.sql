-- Alerts and the notification log, SQLite dialect. Times are UTC text as the core stores
-- them.
--
-- One row per alert heard, keyed by its id, so processes hearing the same alert on the
-- bus record it once. body is the alert as JSON, what the renderers read.
CREATE TABLE alerts (
    id           TEXT PRIMARY KEY,
    raised_at    TEXT NOT NULL,
    severity     TEXT NOT NULL,
    code         TEXT NOT NULL,
    subject_kind TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    subject_name TEXT NOT NULL,
    summary      TEXT NOT NULL,
    dedupe_key   TEXT NOT NULL,
    link         TEXT NOT NULL,
    -- Set for an alert meant for one notifier instance (a test, a rate-limit summary).
    instance     TEXT NOT NULL,
    body         TEXT NOT NULL,
    -- When the cause went away (a resolution heard for dedupe_key); NULL while it lasts.
    resolved_at  TEXT
) STRICT;

CREATE INDEX alerts_raised ON alerts (raised_at, id);
CREATE INDEX alerts_severity ON alerts (severity, raised_at);
CREATE INDEX alerts_dedupe_unresolved ON alerts (dedupe_key) WHERE resolved_at IS NULL;

-- The notification log and queue: one row per alert and notifier instance. state is
-- queued, delivering, retrying, delivered, failed, held (by the rate limit; summary_id
-- names the summary that covered it) or suppressed (by the cooldown). The delivery
-- engine's worker of the instance claims queued and due retrying rows, and delivering
-- rows whose lease ran out.
CREATE TABLE notifications (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    alert_id        TEXT NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
    instance        TEXT NOT NULL,
    kind            TEXT NOT NULL,
    state           TEXT NOT NULL,
    severity        TEXT NOT NULL,
    code            TEXT NOT NULL,
    dedupe_key      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at TEXT,
    lease_until     TEXT,
    claim_token     TEXT NOT NULL,
    last_error      TEXT NOT NULL,
    summary_id      INTEGER,
    UNIQUE (alert_id, instance)
) STRICT;

CREATE INDEX notifications_claim ON notifications (instance, state, id);
CREATE INDEX notifications_dedupe ON notifications (instance, dedupe_key, created_at);
CREATE INDEX notifications_created ON notifications (instance, created_at);
