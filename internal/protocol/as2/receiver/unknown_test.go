package receiver

import (
	"fmt"
	"testing"

	"wharf/internal/persistence"
)

// The tally adds up repeats of a pair, keeps the last reason, wakes its writer only when
// it stops being empty, and holds at most maxPendingUnknown pairs, counting the rest as
// dropped.
func TestUnknownTally(t *testing.T) {
	var u unknownTally
	hit := persistence.UnknownSenderHit{Source: "as2_in", RemoteAddr: "192.0.2.7", SenderID: "STRANGER", ReceiverID: "WHARF"}
	for i := range 3 {
		hit.Reason = fmt.Sprintf("reason %d", i)
		if first := u.add(hit); first != (i == 0) {
			t.Errorf("add %d: first = %v", i, first)
		}
	}
	hits, dropped := u.take()
	if len(hits) != 1 || hits[0].Count != 3 || hits[0].Reason != "reason 2" || dropped != 0 {
		t.Fatalf("take = %+v, %d", hits, dropped)
	}
	for i := range maxPendingUnknown + 5 {
		hit.SenderID = fmt.Sprintf("S%d", i)
		u.add(hit)
	}
	hits, dropped = u.take()
	if len(hits) != maxPendingUnknown || dropped != 5 {
		t.Fatalf("took %d pairs and dropped %d, want %d and 5", len(hits), dropped, maxPendingUnknown)
	}
	if hits, dropped := u.take(); len(hits) != 0 || dropped != 0 {
		t.Fatalf("take after take = %d, %d", len(hits), dropped)
	}
}
