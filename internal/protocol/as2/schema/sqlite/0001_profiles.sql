-- AS2 trading profiles, SQLite dialect. Times are UTC text as the core stores them.
-- Certificates are named by id; the core's certificate_uses rows (kinds
-- as2_local_profile and as2_remote_profile) keep a named certificate from being deleted.
-- Parties are named, not referenced, so the core's tables carry no module's constraints.

-- An organization's AS2 identity. A certificate id of 0 means none.
CREATE TABLE as2_local_profiles (
    organization                       TEXT PRIMARY KEY,
    as2_id                             TEXT NOT NULL UNIQUE,
    signing_certificate_id             INTEGER NOT NULL,
    decryption_certificate_id          INTEGER NOT NULL,
    previous_decryption_certificate_id INTEGER,
    mdn_notification_to                TEXT NOT NULL,
    max_message_size_mib               INTEGER NOT NULL,
    -- Our signatures: a separate certificate for MDNs (NULL: the signing certificate)
    -- and whether the intermediates chaining ours to a root go into each signature.
    mdn_signing_certificate_id         INTEGER,
    include_chain                      INTEGER NOT NULL,
    created_at                         TEXT NOT NULL,
    updated_at                         TEXT NOT NULL
) STRICT;

-- A partner's AS2 profile. The list columns (certificate ids, hosts) and retry are JSON.
CREATE TABLE as2_remote_profiles (
    partner                         TEXT PRIMARY KEY,
    as2_id                          TEXT NOT NULL UNIQUE,
    endpoint_url                    TEXT NOT NULL,
    partner_certificate_ids         TEXT NOT NULL,
    our_signing_certificate_id      INTEGER,
    our_decryption_certificate_id   INTEGER,
    compress                        INTEGER NOT NULL,
    signing_algorithm               TEXT NOT NULL,
    encryption_algorithm            TEXT NOT NULL,
    key_transport                   TEXT NOT NULL,
    mdn_mode                        TEXT NOT NULL,
    signed_mdn                      INTEGER NOT NULL,
    mdn_mic_algorithm               TEXT NOT NULL,
    async_mdn_url                   TEXT NOT NULL,
    require_signed                  INTEGER NOT NULL,
    require_encrypted               INTEGER NOT NULL,
    allow_sha1                      INTEGER NOT NULL,
    mic_preference                  TEXT NOT NULL,
    async_mdn_hosts                 TEXT NOT NULL,
    duplicate_filename              TEXT NOT NULL,
    duplicate_filename_window_hours INTEGER NOT NULL,
    connect_timeout_seconds         INTEGER NOT NULL,
    request_timeout_seconds         INTEGER NOT NULL,
    receipt_timeout_minutes         INTEGER NOT NULL,
    retry                           TEXT NOT NULL,
    tls_trust_certificate_ids       TEXT NOT NULL,
    max_message_size_mib            INTEGER NOT NULL,
    -- Where compression sits when the message is also signed.
    compression_order               TEXT NOT NULL,
    -- RFC 6211 algorithm protection attribute on our signatures for this partner.
    algorithm_protection            INTEGER NOT NULL,
    -- How the endpoint's TLS is trusted: system, profile (tls_trust_certificate_ids
    -- alone) or pinned (the server certificate's SHA-256, lower-case hex).
    tls_trust                       TEXT NOT NULL,
    tls_pinned_sha256               TEXT NOT NULL,
    -- Issue 12, AES-GCM acknowledgement and duplicates by content (see profile.Remote).
    gcm_confirmed                   INTEGER NOT NULL,
    duplicate_content               TEXT NOT NULL,
    duplicate_content_window_hours  INTEGER NOT NULL,
    -- Correlation: the partner's header that carries the correlation id ('' = Message-ID).
    correlation_header              TEXT NOT NULL DEFAULT '',
    -- Issue 16: Transfer-Encoding: chunked for large messages, 'auto' or 'never'
    -- (spooled and sent with a Content-Length; see profile.Chunking).
    chunked                         TEXT NOT NULL DEFAULT 'auto',
    created_at                      TEXT NOT NULL,
    updated_at                      TEXT NOT NULL
) STRICT;
