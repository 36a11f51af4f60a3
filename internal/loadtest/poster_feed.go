package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// feeder sends documents through the API process's REST API (POST /api/v1/messages,
// straight to the target), from several clients at once as in-house systems would.
type feeder struct {
	api     *Instance
	fields  [][2]string
	payload []byte
	client  *http.Client

	mu   sync.Mutex
	sent map[int64]bool // the ids of the messages accepted
}

func newFeeder(api *Instance, target, to string, payload []byte, clients int) *feeder {
	// A connection per client: the default of two idle ones per host would open and
	// close connections all through the run.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	return &feeder{api: api, fields: [][2]string{{"from", "local"}, {"to", to}, {"target", target}}, payload: payload,
		client: &http.Client{Transport: tr, Timeout: time.Minute}, sent: map[int64]bool{}}
}

// feed sends n documents from clients senders and returns when all are accepted.
func (f *feeder) feed(ctx context.Context, n, clients int) error {
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				if err := f.send(ctx, fmt.Sprintf("doc-%06d.edi", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// send posts one document and notes its message id.
func (f *feeder) send(ctx context.Context, name string) error {
	var m struct {
		ID int64 `json:"id"`
	}
	if err := f.api.PostForm(ctx, f.client, "/api/v1/messages", f.fields, name, f.payload, &m); err != nil {
		return fmt.Errorf("send %s: %w", name, err)
	}
	if m.ID <= 0 {
		return fmt.Errorf("send %s: no message id in the answer", name)
	}
	f.mu.Lock()
	f.sent[m.ID] = true
	f.mu.Unlock()
	return nil
}
