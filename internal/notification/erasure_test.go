package notification

import (
	"context"
	"strings"
	"testing"

	"wharf/internal/alert"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

func TestEraseMessagesClearsFileNamesOfAlerts(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		for _, id := range []int64{7, 8} {
			a, _ := alert.ForMessage(persistence.Message{ID: id, From: "acme", To: "local", Status: persistence.StatusError,
				OriginalFileName: "CANARY-invoice.edi"}, "poster", "HTTP 403 Forbidden")
			b.accept(a)
		}
		if err := b.store.ModuleSQL().Write(ctx, func(tx module.Tx) error { return b.rt.EraseMessages(ctx, tx, []int64{7}) }); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		err := b.store.ModuleSQL().Read(ctx, func(tx module.Tx) error {
			rows, err := tx.Query(ctx, `SELECT subject_id, subject_name || ' ' || body FROM alerts`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id, text string
				if err := rows.Scan(&id, &text); err != nil {
					return err
				}
				got[id] = text
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got["7"], "CANARY") || !strings.Contains(got["7"], `"value":"erased"`) {
			t.Fatalf("the erased message's alert = %s", got["7"])
		}
		if !strings.Contains(got["8"], "CANARY") {
			t.Fatalf("another message's alert lost its file name: %s", got["8"])
		}
	})
}
