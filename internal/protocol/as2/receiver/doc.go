// Package receiver is the AS2 receiver (plugin type as2-receiver, RFC 4130): an HTTP or
// HTTPS listener that takes messages from trading partners, stores them through the
// core's Ingester and answers their MDNs, and that hands the asynchronous MDNs partners
// send for our own messages to the sender (MDNIntake).
//
// # A request, step by step
//
//  1. Header fields, before the body: AS2-From, AS2-To (unquoted, checked by
//     profile.ParseAS2ID) and Message-ID are required; AS2-Version 1.0 to 1.3 (absent
//     means 1.0). A party sending to itself is refused.
//  2. Both profiles are resolved (profile.Directory). An unknown pair is 403; a
//     Content-Length over the size limit (the smaller of the local and remote profiles'
//     max_message_size_mib, else the config's max_body_mib) is 413; a
//     Receipt-Delivery-Option whose host the partner profile does not vouch for (the
//     endpoint URL's host or async_mdn_hosts) is 400. These refusals happen before the
//     body is read, store no document, write no MDN (the caller may not be a partner at
//     all) and log one line. Before both AS2 ids named profiles the request is counted
//     among the unknown senders (unknown.go); after, it is kept as a refused message
//     with its headers (refusal.go).
//  3. The body is read up to the limit, one byte more telling an oversized chunked body
//     (then 413), and unpacked in whatever order the partner layered it (mime.Unpack
//     for a body of up to a mebibyte, mime.UnpackStream as it arrives for a larger one,
//     spooled to a file on the way), with the decompressed size bounded by the same
//     limit. The profile's require_signed and require_encrypted are
//     enforced.
//  4. A failure is answered with the MDN the partner asked for, carrying the disposition
//     the one table in disposition.go gives its class (processed/error:
//     decryption-failed, authentication-failed, integrity-check-failed,
//     decompression-failed, insufficient-message-security, duplicate-document,
//     duplicate-filename, else unexpected-processing-error), and no MIC. An asynchronous
//     request gets it queued; a request without an MDN gets a 400 naming the
//     disposition. The document is not stored; the refusal is kept as a message with
//     status refused, the request's headers, its raw body (bounded by the
//     refused_body_max_mib setting and the partner's refused_body_budget_mib over 24
//     hours, refusal_budget.go) and the MDN as stages (refusal.go), before the
//     answer. One line is logged.
//  5. The message is reserved in as2_inbound (see below) and its MDN written: signed
//     when the partner asked for a signed receipt and the organization has a signing
//     key, with the MIC of RFC 4130 7.3.1 (mime.Result.MIC, its algorithm chosen by the
//     profile's mic_preference). It depends on nothing the store decides, so the
//     message is then stored with one Ingest (the document as the unpacked stage, the
//     raw body as received, the request line and header fields as headers, the MDN as
//     receipt): one flush of the payloads, one transaction. Once that has committed, one
//     more transaction records the stored message and the MDN on the row. Concurrent
//     requests share the transactions of their reservations and records (group commit),
//     so a busy receiver commits fewer than two of its own per message. Sync: the MDN
//     is the answer. Async: the answer is 200 and the MDN is queued in as2_mdn_jobs in
//     the transaction that records it. None: 200 with a short text. When the message
//     cannot be stored, the MDN written for it is dropped and the failure answered as
//     in step 4 or below; when the MDN cannot be written, the message is stored without
//     it and answered 500, and the background loop writes it later (see Crashes).
//
// Failures of our own (database, storage) are answered 503 with Retry-After: nothing was
// promised, and the partner sends again.
//
// # Duplicates and replays
//
// as2_inbound holds a row per message taken, unique on (as2_from, as2_message_id) and on
// the signature digest. The row is inserted (state reserved, with a claim token) before
// the message is stored, so concurrent copies meet the unique constraints:
//
//   - The same (AS2-From, Message-ID) again is a duplicate once its content is checked
//     to be the same (by its MIC): nothing is stored or dispatched and the stored MDN is
//     answered again byte for byte, with the same Content-Type and Message-ID (queued
//     again for an asynchronous request). Other content under a used Message-ID is
//     refused as duplicate-document, since the first MDN would acknowledge a document
//     never stored.
//   - The same signature under another Message-ID is a replay, refused as
//     duplicate-document (the signature is valid; the message is a copy). The signature
//     digest is SHA-256 over the signer's certificate and cms.SignerInfo.ReplayDigest;
//     since the signed attributes hold the signing time to the second, a partner that
//     signs the very same content twice within one second under two Message-IDs is
//     refused the second time, as it would be by a digest of the signature value.
//   - A file name the partner sent within duplicate_filename_window_hours is taken
//     (accept), taken with processed/warning: duplicate-filename (warn), or refused with
//     processed/error: duplicate-filename (refuse). Names generated for documents sent
//     without one never repeat.
//   - A document whose SHA-256 the partner sent within duplicate_content_window_hours
//     under another Message-ID (a resend after a lost MDN) is taken (accept), taken and
//     flagged (warn: duplicate_content and duplicate_of on its row, a history line), or
//     not stored again (refuse: its row is answered naming the first copy's message,
//     whose history records it); both answer processed, since the partner's document
//     is here. Reserving takes a PostgreSQL transaction lock on (partner, digest)
//     before the lookup, so two copies are never both taken as first; a refused repeat
//     whose first copy is still reserved is answered 503.
//
// # Crashes
//
// The request that reserved a row renews it every 10 seconds until the row is answered
// (storing and recording are local work: the body was read before, the MDN is written
// after). A reserved row not renewed for 30 seconds was left by an interrupted request,
// a crashed process's included. A copy of the message arriving then takes the row over
// (a conditional update of the claim token) and finishes it; before, it is answered 503
// (being processed). The background loop does
// the same for rows nobody resends: a message that was stored (found with
// persistence.Store.FindMessageByOrigin) has the MDN stored with it as its receipt read
// back, recorded and queued if asynchronous, so every copy of the MDN carries the same
// bytes (a message stored without one gets it written and kept now); one that was not
// stored is forgotten, so a resend is taken afresh. An ingest error after which the
// message turns out to be stored is treated as success, so a lost commit
// acknowledgement never stores a message twice.
//
// # Asynchronous MDNs
//
// The background loop (every few seconds, and at once when an MDN is queued) claims due
// jobs, sixteen at a time, with a conditional update that gives each a claim token and
// pushes its next attempt 30 seconds ahead, so processes sharing the database never send
// the same attempt twice. While it works through the batch the loop renews the claims of
// the jobs not yet finished every 10 seconds, so a slow partner (a post may take up to
// the client's two-minute time-out) never gets an MDN from a second process as well; the
// outcome is recorded only while the token is still the loop's own. A job whose claim
// was not renewed for 30 seconds was left by a process that ended (a crash, a kill), and
// any process's loop takes it again, so a restart sends the interrupted MDNs within
// about 30 seconds as one more attempt. A job is posted to
// the vouched-for URL without following redirects; any 2xx counts. Failed attempts are
// retried with exponential back-off from 30 s (capped at 2 h), ten attempts in all; then
// the job is failed and an error logged. The message panel shows the job's state.
//
// # Memory
//
// A body of up to a megabyte is read into memory; a larger one goes to a file in
// Deps.TempDir, unlinked at once where the system allows, so a crash leaves nothing
// behind. An encrypted or compressed body in a file is opened as it is read (CBC and
// decompression stream; AES-GCM collects its ciphertext in the plaintext's own buffer),
// any other is read into a buffer of its size. Every decrypted layer takes one buffer
// of its size; a decompressed layer larger than a megabyte is collected in a temporary
// file first and read back at its exact size; signed parts and payloads are parts of
// the layer that holds them unless base64 or quoted-printable encoded. The received stage is stored from the file, the unpacked
// stage from the payload. A request thus holds at most the decrypted entity and the
// decompressed one (each no larger than the size limit), the header text and the MDN,
// and max_concurrent_requests bounds the requests held at once: past it a request waits
// up to two seconds for a turn (as one of at most as many waiters, whose bodies are not
// read yet) and is otherwise answered 503 with Retry-After. An asynchronous MDN (a few
// kilobytes) is held while it is sent; MDNs posted to mdn_path are read up to 1 MiB.
//
// # Abuse
//
// A request body is paced (package bodyrate): one that stops for body_idle_timeout, or
// averages less than min_body_bytes_per_second after that, is answered 408, so a client
// trickling its body holds a slot for seconds, not for read_timeout. One remote address
// has at most max_requests_per_address requests in progress or waiting, and one partner
// (by AS2-From, once the profiles resolve) at most max_requests_per_partner in
// progress; past either a request is answered 429 with Retry-After before its body is
// read. Once three quarters of the slots are taken, a partner that holds an eighth of
// them while others have requests in progress is refused the same way (fairshare.go),
// so a flood naming a few partners leaves slots for the rest. A compressed layer inflates to at most max_decompression_ratio times its size
// past its first mebibyte, and never past the size limit; and while the profile demands
// a signature or encryption that no layer outside it supplied, a compressed layer whose
// content turns out to be the document is refused as soon as that content's header
// section is inflated (mime.UnpackOptions.RequireSigned).
package receiver
