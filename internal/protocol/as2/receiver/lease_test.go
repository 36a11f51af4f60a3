package receiver

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/profile"
)

// writeTx runs fn in a write transaction of the bench's database.
func writeTx(t *testing.T, b *bench, fn func(tx module.Tx) error) {
	t.Helper()
	if err := b.sql.Write(b.ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// ageReservation moves a reserved row's last renewal back by age.
func ageReservation(t *testing.T, b *bench, row inboundRow, age time.Duration) {
	t.Helper()
	writeTx(t, b, func(tx module.Tx) error {
		_, err := tx.Exec(b.ctx, `UPDATE as2_inbound SET updated_at = ? WHERE id = ?`, tx.Time(tx.Now().Add(-age)), row.ID)
		return err
	})
}

func reservationUpdatedAt(t *testing.T, b *bench, id int64) time.Time {
	t.Helper()
	var at time.Time
	err := b.sql.Read(b.ctx, func(tx module.Tx) error {
		return tx.QueryRow(b.ctx, `SELECT updated_at FROM as2_inbound WHERE id = ?`, id).Scan(tx.ScanTime(&at))
	})
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// leaseBench starts a receiver with the background loop idle, and a partner profile.
func leaseBench(t *testing.T, s *db.Store, tune func(*Receiver)) (*bench, *Receiver, profile.Inbound, party, party) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	b := newBench(t, s, []party{org}, []party{partner})
	dir := newDirectory()
	in := inbound(org, partner, nil)
	dir.add(in)
	rc := b.start("as2_in", dir, nil, func(rc *Receiver) { rc.tick = time.Hour }, tune)
	return b, rc, in, org, partner
}

// With the receiver's own settings, a reservation that its request stopped renewing (a
// crashed process's) is taken over by the message's resend once the lease has passed,
// not after the request's time-outs; a fresher one is answered 503 with a Retry-After
// of one lease.
func TestReservationLease(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b, rc, in, org, partner := leaseBench(t, s, func(*Receiver) {})
		tests := []struct {
			age        time.Duration
			wantStatus int
		}{
			{age: 5 * time.Second, wantStatus: http.StatusServiceUnavailable},
			{age: reservationLease + time.Second, wantStatus: http.StatusOK},
		}
		for i, tt := range tests {
			payload := []byte(fmt.Sprintf("document %d\r\n", i))
			r := build(t, partner, org, payload, fmt.Sprintf("doc-%d.txt", i), secureOpts(partner, org))
			row := reserveRow(t, b, rc, in, r)
			ageReservation(t, b, row, tt.age)
			before := b.messageCount()
			a := post(t, rc.url(), r.contentType, r.header, r.body)
			if a.status != tt.wantStatus {
				t.Fatalf("reservation %s old: HTTP %d, want %d", tt.age, a.status, tt.wantStatus)
			}
			if tt.wantStatus != http.StatusOK {
				if got := a.header.Get("Retry-After"); got != "30" {
					t.Errorf("Retry-After %q, want 30", got)
				}
				continue
			}
			if m := parseMDN(t, a, org.cert); !m.Disposition.Successful() {
				t.Fatalf("MDN %s", m.Disposition)
			}
			if b.messageCount() != before+1 {
				t.Fatalf("%d messages, want %d", b.messageCount(), before+1)
			}
		}
	})
}

// The request that holds a reservation renews it until it stops.
func TestReservationRenewed(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		// The aged reservation must not look interrupted to the receiver's own first
		// reconciling pass, which may run after the ageing below.
		b, rc, in, org, partner := leaseBench(t, s, func(rc *Receiver) {
			rc.renewEvery, rc.staleAfter = 10*time.Millisecond, 24*time.Hour
		})
		r := build(t, partner, org, []byte("document\r\n"), "doc.txt", secureOpts(partner, org))
		row := reserveRow(t, b, rc, in, r)
		ageReservation(t, b, row, time.Hour)
		aged := reservationUpdatedAt(t, b, row.ID)

		stop := rc.holdReservation(b.ctx, &row)
		deadline := time.Now().Add(10 * time.Second)
		for !reservationUpdatedAt(t, b, row.ID).After(aged.Add(30 * time.Minute)) {
			if time.Now().After(deadline) {
				stop()
				t.Fatal("the reservation was not renewed")
			}
			time.Sleep(5 * time.Millisecond)
		}
		stop()
		stop() // a second stop is harmless
		rows, err := staleReservations(b.ctx, b.sql, rc.name, time.Now().Add(-time.Minute), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 0 {
			t.Errorf("%d stale reservations after the renewal, want none", len(rows))
		}
	})
}
