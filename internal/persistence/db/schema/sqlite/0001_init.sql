-- Wharf core schema, SQLite dialect. Times are UTC text in one fixed-width layout
-- (2006-01-02T15:04:05.000000Z) so that text order is time order.

CREATE TABLE id_counters (
    name    TEXT PRIMARY KEY,
    next_id INTEGER NOT NULL
) STRICT;

INSERT INTO id_counters (name, next_id) VALUES ('message', 1);

CREATE TABLE parties (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    display_name TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (kind, name)
) STRICT;

CREATE INDEX parties_name ON parties (name);

CREATE TABLE plugin_configs (
    name       TEXT PRIMARY KEY,
    type       TEXT NOT NULL,
    enabled    INTEGER NOT NULL,
    config     TEXT NOT NULL,
    secrets    BLOB NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE INDEX plugin_configs_type ON plugin_configs (type, name);

CREATE TABLE routes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    source     TEXT NOT NULL REFERENCES plugin_configs (name),
    from_party TEXT NOT NULL,
    to_party   TEXT NOT NULL,
    target     TEXT NOT NULL REFERENCES plugin_configs (name),
    ordered    INTEGER NOT NULL,
    -- Ordered sessions: the metadata name that keys a delivery's session, empty for the parties.
    session_by TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (source, target, from_party, to_party)
) STRICT;

CREATE INDEX routes_target ON routes (target);
CREATE INDEX routes_from_party ON routes (from_party);
CREATE INDEX routes_to_party ON routes (to_party);

CREATE TABLE messages (
    id                 INTEGER PRIMARY KEY,
    stage              TEXT NOT NULL,
    status             TEXT NOT NULL,
    refusal            TEXT NOT NULL,
    from_party         TEXT NOT NULL,
    to_party           TEXT NOT NULL,
    source             TEXT NOT NULL,
    original_file_name TEXT NOT NULL,
    size               INTEGER NOT NULL,
    sha256             TEXT NOT NULL,
    -- Correlation: no message is without both ids (the store refuses empty ones too).
    correlation_id     TEXT NOT NULL CHECK (correlation_id <> ''),
    origin_event_id    TEXT NOT NULL CHECK (origin_event_id <> ''),
    -- Ordered sessions: the source's metadata, a JSON object of strings.
    metadata           TEXT NOT NULL DEFAULT '{}',
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
) STRICT;

CREATE INDEX messages_created ON messages (created_at, id);
CREATE INDEX messages_status ON messages (status, created_at);
CREATE INDEX messages_from_party ON messages (from_party, created_at);
CREATE INDEX messages_to_party ON messages (to_party, created_at);
CREATE INDEX messages_source ON messages (source, created_at);
CREATE INDEX messages_correlation_id ON messages (correlation_id);
CREATE INDEX messages_origin_event_id ON messages (origin_event_id);

CREATE TABLE payloads (
    message_id INTEGER NOT NULL REFERENCES messages (id),
    stage      TEXT NOT NULL,
    key        TEXT NOT NULL,
    size       INTEGER NOT NULL,
    sha256     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (message_id, stage)
) STRICT;

CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id      INTEGER NOT NULL REFERENCES messages (id),
    -- Correlation: the message's ids, copied at insert, so a delivery is traced alone.
    correlation_id  TEXT NOT NULL CHECK (correlation_id <> ''),
    origin_event_id TEXT NOT NULL CHECK (origin_event_id <> ''),
    target          TEXT NOT NULL,
    state           TEXT NOT NULL,
    -- The state before the last transition, set by every transition statement
    -- (SET previous_state = state, state = …) so that RETURNING can name both ends.
    previous_state  TEXT NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_error      TEXT NOT NULL DEFAULT '',
    wakeups         INTEGER NOT NULL DEFAULT 0,
    next_wakeup_at  TEXT,
    lease_until     TEXT,
    claim_token     TEXT NOT NULL DEFAULT '',
    ack_deadline    TEXT,
    session_key     TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (message_id, target)
) STRICT;

CREATE INDEX deliveries_due ON deliveries (target, state, next_attempt_at);
-- Claims read a target's queued deliveries in id order and stop at their limit, so a
-- claim costs the same whatever the backlog.
CREATE INDEX deliveries_queued ON deliveries (target, id) WHERE state = 'queued';
-- The sweep's three scans read these in order and stop at their limit.
CREATE INDEX deliveries_lease ON deliveries (lease_until, id) WHERE state = 'delivering';
CREATE INDEX deliveries_ack ON deliveries (ack_deadline, id) WHERE state = 'awaiting_ack';
CREATE INDEX deliveries_wakeup ON deliveries (next_wakeup_at, id) WHERE state IN ('queued', 'retrying');
-- Unfinished deliveries of ordered sessions: what a later delivery of a session waits for.
CREATE INDEX deliveries_session ON deliveries (session_key, id)
    WHERE session_key <> '' AND state NOT IN ('delivered', 'skipped');

-- Ordered sessions. One row per session key, created by the first dispatch into it and
-- locked by every dispatch into it (so, within a session, delivery ids follow commit
-- order), blocked_by naming the failed delivery that stops the session while it is
-- blocked; from_party and to_party are those of the latest dispatch, for operators.
CREATE TABLE sessions (
    key        TEXT PRIMARY KEY,
    target     TEXT NOT NULL,
    from_party TEXT NOT NULL,
    to_party   TEXT NOT NULL,
    blocked_by INTEGER,
    blocked_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

-- A settled delivery unblocks the session it blocks: found by blocked_by.
CREATE INDEX sessions_blocked ON sessions (blocked_by) WHERE blocked_by IS NOT NULL;
CREATE INDEX deliveries_parked ON deliveries (session_key, id) WHERE state = 'parked';

CREATE TABLE message_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id  INTEGER NOT NULL REFERENCES messages (id),
    -- Correlation: the message's correlation id, written by the history writer.
    correlation_id  TEXT NOT NULL CHECK (correlation_id <> ''),
    -- Correlation: the message's origin event id, written by the history writer.
    origin_event_id TEXT NOT NULL CHECK (origin_event_id <> ''),
    delivery_id INTEGER REFERENCES deliveries (id),
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    from_state  TEXT NOT NULL DEFAULT '',
    to_state    TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    actor       TEXT NOT NULL,
    -- Downstream status lines: when the reporter (an MDN, a status callback) says it
    -- happened, by its own clock; NULL on every other line.
    reported_at TEXT
) STRICT;

CREATE INDEX message_history_message ON message_history (message_id, id);

CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL UNIQUE,
    hash         TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
) STRICT;

-- Certificates are keyed by the SHA-256 of their DER encoding. sealed_key is the private
-- key (PKCS#8, sealed under the master key), empty when none was imported.
CREATE TABLE certificates (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint   TEXT NOT NULL UNIQUE,
    subject       TEXT NOT NULL,
    issuer        TEXT NOT NULL,
    serial_number TEXT NOT NULL,
    not_before    TEXT NOT NULL,
    not_after     TEXT NOT NULL,
    description   TEXT NOT NULL,
    der           BLOB NOT NULL,
    sealed_key    BLOB NOT NULL,
    created_at    TEXT NOT NULL
) STRICT;

CREATE INDEX certificates_not_after ON certificates (not_after, id);

-- The records (AS2 profiles, receivers, …) that name a certificate; a certificate with a
-- use is not deleted.
CREATE TABLE certificate_uses (
    certificate_id INTEGER NOT NULL REFERENCES certificates (id),
    kind           TEXT NOT NULL,
    name           TEXT NOT NULL,
    PRIMARY KEY (certificate_id, kind, name)
) STRICT;

CREATE INDEX certificate_uses_record ON certificate_uses (kind, name);

-- Accounts of the UI and the REST API. password_hash is an argon2id PHC string and
-- totp_secret the TOTP secret sealed under the master key, both empty until set-up;
-- recovery_hashes is a JSON array of the unused recovery codes' hashes. Every session
-- carries generation, so bumping it ends them all. setup_token_hash is the SHA-256 of a
-- pending set-up link's token ('' when none); the token itself is never stored.
CREATE TABLE users (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT NOT NULL UNIQUE,
    display_name     TEXT NOT NULL,
    role             TEXT NOT NULL,
    password_hash    TEXT NOT NULL,
    totp_secret      BLOB NOT NULL,
    last_totp_step   INTEGER NOT NULL,
    recovery_hashes  TEXT NOT NULL,
    disabled         INTEGER NOT NULL,
    generation       INTEGER NOT NULL,
    setup_token_hash TEXT NOT NULL,
    setup_expires_at TEXT,
    oidc_issuer      TEXT,
    oidc_subject     TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    last_sign_in_at  TEXT,
    UNIQUE (oidc_issuer, oidc_subject),
    CHECK ((oidc_issuer IS NULL) = (oidc_subject IS NULL))
) STRICT;

CREATE UNIQUE INDEX users_setup_token ON users (setup_token_hash) WHERE setup_token_hash <> '';

-- Web UI sessions (sign-in cookies), one row per signed-in browser, so signing out ends a
-- session on the server and not only in the browser that asked. id_hash is the SHA-256
-- (hex) of the random id sealed in the cookie; the id itself is never stored. A row goes
-- when its session is signed out, when the user's sessions all end (generation bump or
-- deletion), and once expires_at has passed (pruned at the next sign-in).
CREATE TABLE ui_sessions (
    id_hash    TEXT PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;

CREATE INDEX ui_sessions_user ON ui_sessions (user_id);
CREATE INDEX ui_sessions_expires ON ui_sessions (expires_at);

-- The audit log: one row per configuration change or operator action, written in the
-- change's transaction, chained by HMAC (see package audit). Rows are never updated or
-- deleted; the triggers refuse both.

CREATE TABLE audit_events (
    id          INTEGER PRIMARY KEY,
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    record_id   TEXT NOT NULL,
    record_name TEXT NOT NULL,
    changes     TEXT NOT NULL,
    prev_hash   BLOB NOT NULL,
    hash        BLOB NOT NULL
) STRICT;

CREATE INDEX audit_events_kind ON audit_events (kind, record_id);
CREATE INDEX audit_events_actor ON audit_events (actor);

-- The chain's head: the last event's id and hash, one row, locked by every writer.
CREATE TABLE audit_head (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    last_id INTEGER NOT NULL,
    hash    BLOB NOT NULL
) STRICT;

INSERT INTO audit_head (one, last_id, hash) VALUES (1, 0, x'');

-- Each trigger stays on one line: schema files are cut into statements at a line's end.
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events BEGIN SELECT RAISE(ABORT, 'audit events are never changed'); END;

CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events BEGIN SELECT RAISE(ABORT, 'audit events are never deleted'); END;

-- OpenID Connect providers users sign in with. The client secret is sealed under the
-- master key (empty for a public client); an issuer is configured once, so a bearer
-- token's issuer names one provider.
CREATE TABLE identity_providers (
    name          TEXT PRIMARY KEY,
    display_name  TEXT NOT NULL,
    issuer_url    TEXT NOT NULL UNIQUE,
    client_id     TEXT NOT NULL,
    client_secret BLOB NOT NULL,
    audience      TEXT NOT NULL,
    scopes        TEXT NOT NULL,
    enabled       INTEGER NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

-- Unknown senders: requests a source refused before it knew who sent
-- them (unknown sender or receiver ids, a bad envelope), counted per source instance,
-- remote address and id pair. The store keeps at most persistence.MaxUnknownSenders
-- rows and evicts the longest unseen first, so a flood cannot grow the table.
CREATE TABLE unknown_senders (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    source      TEXT NOT NULL,
    remote_addr TEXT NOT NULL,
    sender_id   TEXT NOT NULL,
    receiver_id TEXT NOT NULL,
    count       INTEGER NOT NULL,
    last_reason TEXT NOT NULL,
    first_seen  TEXT NOT NULL,
    last_seen   TEXT NOT NULL,
    UNIQUE (source, remote_addr, sender_id, receiver_id)
) STRICT;

CREATE INDEX unknown_senders_last_seen ON unknown_senders (last_seen, id);

-- The secrets key check: a known text sealed under the master key, so a process proves
-- at start that its key file opens what this database holds sealed. One row.
CREATE TABLE secrets_check (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    sealed BLOB NOT NULL
) STRICT;

-- Handoff to in-house systems: the reference a target answered with when it accepted a
-- delivery whose completion comes later (awaiting_ack), and the one target instance an
-- API token may settle deliveries of ('' = the token is not scoped).
ALTER TABLE deliveries ADD COLUMN external_ref TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN scope_target TEXT NOT NULL DEFAULT '';

-- Retry policies by error class: a route's override of its target's retry policy (JSON;
-- NULL keeps the target's), the copy of it each delivery takes at dispatch, and the class
-- of a delivery's last failure while it is retrying or failed ('' otherwise).
ALTER TABLE routes ADD COLUMN retry_policy TEXT;
ALTER TABLE deliveries ADD COLUMN retry_policy TEXT;
ALTER TABLE deliveries ADD COLUMN error_class TEXT NOT NULL DEFAULT '';

-- Traces: the W3C traceparent of the span that dispatched a message ('' when nothing was
-- traced), which every delivery attempt continues, so a message is one trace whichever
-- process attempts it.
ALTER TABLE messages ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';

-- Distributed roles: every process of an installation, as its heartbeat last reported it
-- (id is the process's holder id, kept across its restarts), for the Services page.
CREATE TABLE processes (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    roles        TEXT NOT NULL,
    version      TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
);

-- Partner pause: a partner whose refusal will repeat for every message (or an operator)
-- stops sending to it. One row per paused partner; the deliveries to it through the
-- partner protocols' targets wait as 'paused' until it is resumed, which deletes the row.
-- delivery_id and message_id name the refused delivery that paused it (0 when by hand).
CREATE TABLE partner_pauses (
    partner     TEXT PRIMARY KEY,
    reason      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    delivery_id INTEGER NOT NULL,
    message_id  INTEGER NOT NULL,
    paused_at   TEXT NOT NULL
) STRICT;

CREATE INDEX deliveries_paused ON deliveries (target, id) WHERE state = 'paused';

-- Retention (docs/retention.md). message_retention marks what the pruning job removed of a
-- message whose row stays; party_retention holds a party's own retention days (NULL: the
-- global setting; 0: for ever); daily_counts keeps the message counts of each UTC day of
-- creation for ever, rolled up from messages before anything is pruned; history_archives
-- stays empty here (only PostgreSQL partitions history) but keeps both dialects alike.
CREATE TABLE message_retention (
    message_id            INTEGER PRIMARY KEY REFERENCES messages (id),
    payloads_pruned_at    TEXT,
    history_pruned_before TEXT
) STRICT;

CREATE TABLE party_retention (
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    payload_days INTEGER,
    history_days INTEGER,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (kind, name),
    FOREIGN KEY (kind, name) REFERENCES parties (kind, name) ON DELETE CASCADE ON UPDATE CASCADE
) STRICT;

CREATE TABLE daily_counts (
    day        TEXT NOT NULL,
    from_party TEXT NOT NULL,
    to_party   TEXT NOT NULL,
    status     TEXT NOT NULL,
    count      INTEGER NOT NULL,
    bytes      INTEGER NOT NULL,
    PRIMARY KEY (day, from_party, to_party, status)
) STRICT;

CREATE TABLE history_archives (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    range_start TEXT NOT NULL,
    range_end   TEXT NOT NULL,
    rows        INTEGER NOT NULL,
    key         TEXT NOT NULL,
    created_at  TEXT NOT NULL
) STRICT;

CREATE INDEX history_archives_range ON history_archives (range_end, range_start);

-- History is pruned by its time: the index lets the batched deletes find the oldest rows.
CREATE INDEX message_history_at ON message_history (at);

-- Signed status callbacks: the Standard Webhooks secrets of each target instance (sealed
-- under the master key; several are valid while one is rotated), and one row per callback
-- applied, whose unique (target, webhook_id) makes a callback sent again write nothing.
CREATE TABLE callback_secrets (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    target       TEXT NOT NULL REFERENCES plugin_configs (name) ON DELETE CASCADE,
    sealed       BLOB NOT NULL,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
) STRICT;

CREATE INDEX callback_secrets_target ON callback_secrets (target, id);

CREATE TABLE status_callbacks (
    target      TEXT NOT NULL,
    webhook_id  TEXT NOT NULL,
    delivery_id INTEGER,
    applied_at  TEXT NOT NULL,
    PRIMARY KEY (target, webhook_id)
) STRICT;

-- Erasure (issue 14): when an operator erased the message's content (NULL while it has
-- it). The row stays as an anonymized counter; its payload rows go once their blobs are
-- deleted, and a start finishes the blobs of erased messages a crash left behind.
ALTER TABLE messages ADD COLUMN erased_at TEXT;
CREATE INDEX messages_erased ON messages (erased_at) WHERE erased_at IS NOT NULL;
