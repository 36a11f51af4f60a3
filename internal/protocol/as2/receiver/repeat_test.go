package receiver

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/profile"
)

// resendBench replays the corpus's oa-17 pair: OpenAS2 sent one file (-a), lost the
// answer and sent it again under a new Message-ID with a new signature (-b).
type resendBench struct {
	*bench
	rc   *Receiver
	dir  string
	a, b corpusCase
	gogw party
}

func newResendBench(t *testing.T, s *db.Store, policy profile.DuplicateFilename, windowH int) *resendBench {
	t.Helper()
	dir, cases := loadCorpus(t)
	rb := &resendBench{dir: dir}
	for _, c := range cases {
		switch c.ID {
		case "inbound/oa-17-sha256-aes256-resend-a":
			rb.a = c
		case "inbound/oa-17-sha256-aes256-resend-b":
			rb.b = c
		}
	}
	if rb.a.ID == "" || rb.b.ID == "" {
		t.Fatal("the corpus lacks the oa-17 pair")
	}
	rb.gogw = party{id: "gogw", name: "gogw", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/gogw.crt")),
		key: as2test.PEMPrivateKey(t, as2test.CorpusFile(t, dir, "keys/gogw.key"))}
	peerc := party{id: "peerc", name: "peerc", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/peerc.crt"))}
	rb.bench = newBench(t, s, []party{rb.gogw}, []party{peerc})
	d := newDirectory()
	d.add(inbound(rb.gogw, peerc, func(r *profile.Remote) {
		r.DuplicateContent, r.DuplicateContentWindowH = policy, windowH
	}))
	rb.rc = rb.start("as2_in", d, nil)
	return rb
}

// send posts a case as OpenAS2 did: its header fields in order, the body chunked.
func (rb *resendBench) send(t *testing.T, c corpusCase) reply {
	t.Helper()
	return rawPost(t, rb.rc.Addr().String(), rb.rc.cfg.Path, requestFields(t, rb.dir, c, ""),
		as2test.CorpusFile(t, rb.dir, c.Files["request_body"]), 2048)
}

// record is the AS2 panel of a message.
func (rb *resendBench) record(t *testing.T, id int64) InboundRecord {
	t.Helper()
	rec, err := FindInbound(rb.ctx, rb.sql, id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// lastHistory is the newest history line of a message.
func (rb *resendBench) lastHistory(t *testing.T, id int64) persistence.HistoryEntry {
	t.Helper()
	hist, err := rb.store.ListHistory(rb.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return hist[len(hist)-1]
}

// The oa-17 pair replayed under each duplicate_content policy: both copies are answered
// processed with their own MIC (OpenAS2 checks it); accept delivers both, warn delivers
// both and flags the second, refuse delivers the first only and records the second on it.
func TestDuplicateContentResend(t *testing.T) {
	tests := []struct {
		policy   profile.DuplicateFilename
		messages int
	}{
		{profile.DuplicateAccept, 2},
		{profile.DuplicateWarn, 2},
		{profile.DuplicateRefuse, 1},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			forEachDB(t, func(t *testing.T, s *db.Store) {
				rb := newResendBench(t, s, tt.policy, 24)
				checkMDN(t, rb.a, rb.send(t, rb.a), rb.gogw.cert, true)
				first := rb.message("as2_in", rb.a.MessageID)
				answer := rb.send(t, rb.b)
				checkMDN(t, rb.b, answer, rb.gogw.cert, true)
				if got := rb.messageCount(); got != tt.messages {
					t.Fatalf("%d messages, want %d", got, tt.messages)
				}
				if got := rb.inboundRows(rb.b.MessageID); got != 1 {
					t.Errorf("%d rows for the resend, want 1", got)
				}
				firstRec := rb.record(t, first.ID)
				switch tt.policy {
				case profile.DuplicateAccept:
					second := rb.message("as2_in", rb.b.MessageID)
					if rec := rb.record(t, second.ID); rec.DuplicateContent != "" || rec.DuplicateOfMessageID != 0 {
						t.Errorf("accepted resend flagged: %+v", rec)
					}
				case profile.DuplicateWarn:
					second := rb.message("as2_in", rb.b.MessageID)
					if second.SHA256 != first.SHA256 {
						t.Errorf("documents differ: %s, %s", second.SHA256, first.SHA256)
					}
					rec := rb.record(t, second.ID)
					if rec.DuplicateContent != contentWarned || rec.DuplicateOfMessageID != first.ID {
						t.Errorf("warned resend: duplicate_content %q of message %d, want warned of %d", rec.DuplicateContent, rec.DuplicateOfMessageID, first.ID)
					}
					if h := rb.lastHistory(t, second.ID); h.Kind != persistence.HistoryDuplicateReceived || !strings.Contains(h.Reason, rb.a.MessageID) {
						t.Errorf("history of the resend ends with %+v", h)
					}
				case profile.DuplicateRefuse:
					if _, err := rb.store.FindMessageByOrigin(rb.ctx, "as2_in", rb.b.MessageID); err == nil {
						t.Error("the resend was stored as a message")
					}
					if !slices.Equal(firstRec.RepeatsNotDelivered, []string{rb.b.MessageID}) {
						t.Errorf("first message's repeats %v", firstRec.RepeatsNotDelivered)
					}
					if h := rb.lastHistory(t, first.ID); h.Kind != persistence.HistoryDuplicateReceived || !strings.Contains(h.Reason, rb.b.MessageID) {
						t.Errorf("history of the first message ends with %+v", h)
					}
					// The resend sent once more is a duplicate by Message-ID: the same MDN.
					again := rb.send(t, rb.b)
					if again.status != http.StatusOK || !bytes.Equal(again.body, answer.body) {
						t.Errorf("the resend again: HTTP %d, another MDN", again.status)
					}
					if got := rb.messageCount(); got != 1 {
						t.Errorf("%d messages after the resend again", got)
					}
				}
				if tt.policy != profile.DuplicateRefuse && len(firstRec.RepeatsNotDelivered) != 0 {
					t.Errorf("repeats recorded under %s: %v", tt.policy, firstRec.RepeatsNotDelivered)
				}
			})
		})
	}
}

// A copy received before the window began is no repeat: it is delivered.
func TestDuplicateContentWindow(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		rb := newResendBench(t, s, profile.DuplicateRefuse, 2)
		checkMDN(t, rb.a, rb.send(t, rb.a), rb.gogw.cert, true)
		err := rb.sql.Write(rb.ctx, func(tx module.Tx) error {
			_, err := tx.Exec(rb.ctx, `UPDATE as2_inbound SET received_at = ? WHERE as2_message_id = ?`,
				tx.Time(tx.Now().Add(-2*time.Hour-time.Minute)), rb.a.MessageID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		checkMDN(t, rb.b, rb.send(t, rb.b), rb.gogw.cert, true)
		if got := rb.messageCount(); got != 2 {
			t.Fatalf("%d messages, want 2", got)
		}
		if rec := rb.record(t, rb.message("as2_in", rb.b.MessageID).ID); rec.DuplicateContent != "" {
			t.Errorf("a copy outside the window flagged %q", rec.DuplicateContent)
		}
	})
}

// Both copies arriving at once under refuse: one is stored, the other is answered as a
// repeat or asked to come again (503) while the first is being stored, never stored too.
func TestDuplicateContentConcurrent(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		rb := newResendBench(t, s, profile.DuplicateRefuse, 24)
		cases := []corpusCase{rb.a, rb.b}
		answers := make([]reply, len(cases))
		var wg sync.WaitGroup
		for i, c := range cases {
			wg.Go(func() { answers[i] = rb.send(t, c) })
		}
		wg.Wait()
		for i, c := range cases {
			if answers[i].status == http.StatusServiceUnavailable {
				answers[i] = rb.send(t, c)
			}
			checkMDN(t, c, answers[i], rb.gogw.cert, true)
		}
		if got := rb.messageCount(); got != 1 {
			t.Fatalf("%d messages, want 1", got)
		}
	})
}

// Reservations of one document under two Message-IDs, made at once by two writers that
// share no transaction (two processes), never both come out reserved.
func TestDuplicateContentReserveRace(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, nil, nil)
		writers := []*rowWriter{newRowWriter(b.sql), newRowWriter(b.sql)}
		check := duplicateContentCheck{refuse: true, window: time.Hour}
		for round := range 20 {
			outcomes := make([]reserveOutcome, len(writers))
			errs := make([]error, len(writers))
			var wg sync.WaitGroup
			for i, w := range writers {
				wg.Go(func() {
					row := inboundRow{Instance: "as2_in", AS2From: "ACME", AS2To: "WHARF", Partner: "acme", Organization: "wharf",
						AS2MessageID: fmt.Sprintf("<%d-%d@acme.example>", round, i), ClaimToken: newToken(), FileName: "doc.txt",
						Disposition: "processed", MDNMode: MDNNone, ContentSHA256: contentDigest([]byte(fmt.Sprint("document ", round)))}
					outcomes[i], _, errs[i] = reserve(b.ctx, w, &row, duplicateFilenameCheck{}, check)
				})
			}
			wg.Wait()
			n := 0
			for i := range writers {
				if errs[i] != nil {
					t.Fatalf("round %d: %v", round, errs[i])
				}
				if outcomes[i] == reserved {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("round %d: outcomes %v, want exactly one reserved", round, outcomes)
			}
		}
	})
}

// A refused repeat interrupted after its reservation is finished by its resend: answered
// processed, still not delivered again.
func TestDuplicateContentInterruptedRepeat(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		in := inbound(org, partner, func(r *profile.Remote) { r.DuplicateContent = profile.DuplicateRefuse })
		dir.add(in)
		rc := b.start("as2_in", dir, nil, func(rc *Receiver) { rc.tick, rc.staleAfter = time.Hour, 0 })
		payload := []byte("the same document\r\n")
		first := build(t, partner, org, payload, "doc.txt", secureOpts(partner, org))
		if m := parseMDN(t, post(t, rc.url(), first.contentType, first.header, first.body), org.cert); !m.Disposition.Successful() {
			t.Fatalf("first: %s", m.Disposition)
		}
		// Another file name makes another signature within the same second (else a replay).
		second := build(t, partner, org, payload, "doc-again.txt", secureOpts(partner, org))
		row := unpackedRow(t, rc, in, second)
		if outcome, _, err := reserve(b.ctx, rc.rows, &row, duplicateFilenameCheck{}, contentCheck(in.Remote)); err != nil || outcome != repeat {
			t.Fatalf("reserve: %v, %v", outcome, err)
		}
		m := parseMDN(t, post(t, rc.url(), second.contentType, second.header, second.body), org.cert)
		if !m.Disposition.Successful() || m.ReceivedContentMIC == nil || m.OriginalMessageID != second.header.Get("Message-ID") {
			t.Fatalf("resend of the interrupted repeat: %s, MIC %q", m.Disposition, m.RawMIC)
		}
		if n := b.messageCount(); n != 1 {
			t.Errorf("%d messages, want 1", n)
		}
		msg := b.message("as2_in", first.header.Get("Message-ID"))
		if rec, err := FindInbound(b.ctx, b.sql, msg.ID); err != nil || !slices.Equal(rec.RepeatsNotDelivered, []string{second.header.Get("Message-ID")}) {
			t.Errorf("repeats %v, %v", rec.RepeatsNotDelivered, err)
		}
	})
}
