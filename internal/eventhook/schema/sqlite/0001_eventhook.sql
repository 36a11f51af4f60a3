-- Event webhooks, SQLite dialect. Times are UTC text as the core stores them.
--
-- The outbox cursor: the last message_history id turned into event rows, and since when
-- a missing id has held it back (see events.Contiguous). One row; the pass that moves it
-- holds it locked, so any number of processes share the work and no event is queued
-- twice.
CREATE TABLE event_cursor (
    name      TEXT PRIMARY KEY,
    last_id   INTEGER NOT NULL,
    gap_since TEXT
) STRICT;

INSERT INTO event_cursor (name, last_id) VALUES ('webhooks', 0);

-- The delivery log and queue: one row per event and subscription (instance), its body
-- rendered once so every attempt sends the same bytes. event_id is the history row's
-- id (NULL for a test event). state is queued, delivering, retrying, delivered or
-- failed; the delivery engine's worker of the instance claims them.
CREATE TABLE event_webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    instance        TEXT NOT NULL,
    event_id        INTEGER,
    type            TEXT NOT NULL,
    message_id      INTEGER,
    body            TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at TEXT,
    lease_until     TEXT,
    claim_token     TEXT NOT NULL,
    last_error      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (instance, event_id)
) STRICT;

CREATE INDEX event_webhook_deliveries_claim ON event_webhook_deliveries (instance, state, id);
CREATE INDEX event_webhook_deliveries_created ON event_webhook_deliveries (created_at);

-- A subscription's health: failing since the first failure after its last success, and
-- disabled once that lasted its disable_after (until an operator enables it again).
CREATE TABLE event_webhook_health (
    instance        TEXT PRIMARY KEY,
    failing_since   TEXT,
    last_success_at TEXT,
    disabled_at     TEXT
) STRICT;
