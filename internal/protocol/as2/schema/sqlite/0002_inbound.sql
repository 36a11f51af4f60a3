-- AS2 inbound messages and the asynchronous MDNs owed for them, SQLite dialect. Times are
-- UTC text as the core stores them. Parties and messages are named, not referenced, so
-- the core's tables carry no module's constraints.

-- One row per AS2 message taken from a partner. The row is reserved (state 'reserved',
-- claim_token naming the request that owns it) before the message is stored, so a
-- second copy of the same (as2_from, as2_message_id) or of the same signature meets the
-- unique constraints; it becomes 'answered', naming the message and holding its MDN, in
-- one transaction once the message is stored (the MDN, written before, is stored with
-- the message as its receipt stage, from which an interrupted request's row is
-- completed). Messages refused for their content leave no row here (see as2_refusals).
CREATE TABLE as2_inbound (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    instance            TEXT NOT NULL,
    as2_from            TEXT NOT NULL,
    as2_to              TEXT NOT NULL,
    as2_message_id      TEXT NOT NULL,
    as2_version         TEXT NOT NULL,
    partner             TEXT NOT NULL,
    organization        TEXT NOT NULL,
    -- Hex SHA-256 identifying the signature act (see cms.SignerInfo.ReplayDigest);
    -- NULL for an unsigned message.
    signature_digest    TEXT UNIQUE,
    state               TEXT NOT NULL,
    claim_token         TEXT NOT NULL,
    -- The gateway message once stored.
    message_id          INTEGER,
    file_name           TEXT NOT NULL,
    -- 1 when the partner named the file, so the duplicate file name policy applies.
    file_name_sent      INTEGER NOT NULL,
    layers              TEXT NOT NULL,
    cipher              TEXT NOT NULL,
    key_transport       TEXT NOT NULL,
    signature_algorithm TEXT NOT NULL,
    signature_scheme    TEXT NOT NULL,
    mic                 TEXT NOT NULL,
    mic_algorithm       TEXT NOT NULL,
    disposition         TEXT NOT NULL,
    -- What the partner asked for: none, sync or async (to mdn_url), signed or not, and
    -- the digest our MDN signature uses.
    mdn_mode            TEXT NOT NULL,
    mdn_signed          INTEGER NOT NULL,
    mdn_url             TEXT NOT NULL,
    mdn_sign_digest     TEXT NOT NULL,
    -- The MDN as answered, kept so a duplicate gets it again byte for byte.
    mdn_message_id      TEXT NOT NULL,
    mdn_content_type    TEXT NOT NULL,
    mdn_body            BLOB,
    partner_software    TEXT NOT NULL,
    ediint_features     TEXT NOT NULL,
    -- How parts outside the standard were read (cms tolerances), one note a line.
    tolerances          TEXT NOT NULL,
    -- Duplicates by content (the partner profile's duplicate_content): the document's
    -- hex SHA-256, and for a document the partner sent before within the window
    -- 'warned' (delivered again, flagged) or 'refused' (not delivered again: message_id
    -- names the first message), with duplicate_of the as2_inbound row of the first copy.
    content_sha256      TEXT NOT NULL,
    duplicate_content   TEXT NOT NULL,
    duplicate_of        INTEGER,
    received_at         TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    -- Receipts and MICs (issue 12): how our MDN's MIC algorithm was chosen.
    mic_rule            TEXT NOT NULL DEFAULT '',
    UNIQUE (as2_from, as2_message_id)
) STRICT;

CREATE INDEX as2_inbound_message ON as2_inbound (message_id);
CREATE INDEX as2_inbound_file_name ON as2_inbound (partner, file_name, received_at);
CREATE INDEX as2_inbound_reserved ON as2_inbound (instance, state, updated_at);
CREATE INDEX as2_inbound_content ON as2_inbound (partner, content_sha256, received_at);

-- Asynchronous MDNs to send, retried with back-off until sent or out of attempts.
-- inbound_id is NULL for the error MDN of a message that was refused and not kept.
CREATE TABLE as2_mdn_jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    instance        TEXT NOT NULL,
    inbound_id      INTEGER REFERENCES as2_inbound (id),
    url             TEXT NOT NULL,
    as2_from        TEXT NOT NULL,
    as2_to          TEXT NOT NULL,
    mdn_message_id  TEXT NOT NULL,
    content_type    TEXT NOT NULL,
    body            BLOB NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at TEXT NOT NULL,
    last_error      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    -- The claim of the worker sending the job: it renews next_attempt_at while it posts,
    -- and records the outcome only while the token is still its own.
    claim_token     TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX as2_mdn_jobs_due ON as2_mdn_jobs (instance, state, next_attempt_at);
CREATE INDEX as2_mdn_jobs_inbound ON as2_mdn_jobs (inbound_id);

-- Messages a partner sent that were refused for their content (after both AS2 ids named
-- profiles): each names the gateway message kept of it (status refused, with the
-- request's headers, its raw body up to refused_body_max_mib and the MDN we answered as
-- stages). A resend of the same (as2_from, as2_message_id) that is refused again counts
-- here and adds a history line to that message rather than another message, so a
-- partner retrying a refused message does not multiply rows.
CREATE TABLE as2_refusals (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    instance       TEXT NOT NULL,
    as2_from       TEXT NOT NULL,
    as2_to         TEXT NOT NULL,
    as2_message_id TEXT NOT NULL,
    partner        TEXT NOT NULL,
    organization   TEXT NOT NULL,
    message_id     INTEGER NOT NULL,
    disposition    TEXT NOT NULL,
    reason         TEXT NOT NULL,
    mdn_mode       TEXT NOT NULL,
    mdn_message_id TEXT NOT NULL,
    -- The body's size as received (-1 when it was not read) and how much of it is kept.
    body_size      INTEGER NOT NULL,
    body_kept      INTEGER NOT NULL,
    count          INTEGER NOT NULL,
    first_at       TEXT NOT NULL,
    last_at        TEXT NOT NULL,
    UNIQUE (as2_from, as2_message_id)
) STRICT;

CREATE INDEX as2_refusals_message ON as2_refusals (message_id);

-- The refused-body budget: body_withheld says why a refusal's raw body was not kept ('' when
-- it was); the index serves the sum of a partner's kept bodies over the last 24 hours.
ALTER TABLE as2_refusals ADD COLUMN body_withheld TEXT NOT NULL DEFAULT '';
CREATE INDEX as2_refusals_partner_recent ON as2_refusals (partner, first_at);

-- The message list's search by AS2 Message-ID (issue 15): the unique keys above lead with
-- as2_from, which the search does not know.
CREATE INDEX as2_inbound_as2_message_id ON as2_inbound (as2_message_id);
CREATE INDEX as2_refusals_as2_message_id ON as2_refusals (as2_message_id);
