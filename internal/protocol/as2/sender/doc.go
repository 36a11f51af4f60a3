// Package sender is the AS2 sender (plugin type as2-sender): a delivery target that sends
// each message to its partner as the partner's remote profile says — compressed, signed
// and encrypted, with the receipt it asks for — and judges the MDN that comes back; and
// the intake of the asynchronous MDNs partners post for those messages.
//
// # Message-IDs and attempts
//
// A delivery keeps its Message-ID across retries, so a partner recognises a repeat. It
// gets a new one only when it is sent anew: its first attempt, and the first after an
// operator redelivered it as a new message (persistence.ResendNew, read from the
// redeliver_requested history line). A redeliver under the same Message-ID, the default,
// sends again under the last one even when it has its MDN, and the partner answers the
// stored MDN. Each Message-ID is one row of
// as2_outbound with what was sent (algorithms, the MICs a correct receipt returns) and
// the first authentic MDN it got. Retries follow the partner profile's retry policy,
// counted per Message-ID. An attempt for a Message-ID whose outcome is already known (the
// engine lost it) reports that outcome instead of sending twice.
//
// # Receipts
//
// A receipt proves the partner took the message when it verifies with the partner's
// certificates (or is unsigned and no signature was asked for), names our Message-ID,
// has a positive disposition and returns a MIC computed over what we sent, with the
// algorithm we requested or with our signature's digest: products disagree on which, so
// both are accepted. A sync MDN that does not verify fails the attempt; an async one is
// refused and settles nothing, since anyone can post one. The first authentic receipt of
// a message is kept as its receipt payload stage, as a MIME entity (its Content-Type, then
// the body as received) that can be verified again. A sync MDN's blob is written before
// the attempt's outcome records it; when the process ends in between, the attempt that
// finds the Message-ID settled records that blob with the outcome.
package sender
