-- What the AS2 sender sent and the receipt it got, SQLite dialect. Times are UTC text as
-- the core stores them.
--
-- One row per AS2 Message-ID we made: a delivery keeps its Message-ID across retries and
-- gets another row only when it is sent anew (an operator's redeliver after delivered or
-- failed); its newest row is the one in use. Deliveries and messages are named by id, not
-- referenced, so the core's tables carry no module's constraints.
CREATE TABLE as2_outbound (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id          INTEGER NOT NULL,
    message_id           INTEGER NOT NULL,
    as2_message_id       TEXT NOT NULL UNIQUE,
    organization         TEXT NOT NULL,
    partner              TEXT NOT NULL,
    as2_from             TEXT NOT NULL,
    as2_to               TEXT NOT NULL,
    -- How it was protected and which receipt was asked for.
    compressed           INTEGER NOT NULL,
    signing_algorithm    TEXT NOT NULL,
    encryption_algorithm TEXT NOT NULL,
    key_transport        TEXT NOT NULL,
    mdn_mode             TEXT NOT NULL,
    signed_mdn           INTEGER NOT NULL,
    mic_algorithm        TEXT NOT NULL,
    -- The MICs a correct receipt returns, one "<base64>, <algorithm>" per line; the
    -- fallbacks serve a partner that was asked for no particular algorithm.
    expected_mics        TEXT NOT NULL,
    fallback_mics        TEXT NOT NULL,
    -- The POSTs made with this Message-ID and what the last one came to.
    attempts             INTEGER NOT NULL,
    first_sent_at        TEXT NOT NULL,
    last_sent_at         TEXT NOT NULL,
    outcome              TEXT NOT NULL,
    outcome_reason       TEXT NOT NULL,
    ack_deadline         TEXT,
    http_status          INTEGER NOT NULL,
    partner_software     TEXT NOT NULL,
    -- The first authentic MDN; mdn_verdict is '' until one came.
    mdn_verdict          TEXT NOT NULL,
    mdn_received_at      TEXT,
    mdn_transport        TEXT NOT NULL,
    mdn_message_id       TEXT NOT NULL,
    mdn_disposition      TEXT NOT NULL,
    mdn_signed           INTEGER NOT NULL,
    mdn_signer           TEXT NOT NULL,
    mdn_signature_digest TEXT NOT NULL,
    mdn_mic              TEXT NOT NULL,
    mdn_mic_matched      INTEGER NOT NULL,
    mdn_reporting_ua     TEXT NOT NULL,
    -- Set on the one row whose MDN is the message's receipt payload stage.
    receipt_stored       INTEGER NOT NULL,
    -- Receipts and MICs (issue 12): what the verdict noted besides accepting the MDN,
    -- e.g. a signed receipt without a MIC for a message we did not sign.
    mdn_note             TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX as2_outbound_delivery ON as2_outbound (delivery_id, id);
CREATE INDEX as2_outbound_message ON as2_outbound (message_id, id);
-- One receipt per message: two MDNs of one message arriving at once cannot both claim it.
CREATE UNIQUE INDEX as2_outbound_receipt ON as2_outbound (message_id) WHERE receipt_stored = 1;
