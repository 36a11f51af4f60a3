package sender

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"wharf/internal/protocol/as2/profile"
)

// A partner's client keeps as many idle connections as the sender runs attempts at once,
// so rounds of concurrent sends reuse the connections of the first round.
func TestClientsReuseConnections(t *testing.T) {
	const concurrent = 8
	var opened atomic.Int64
	var release atomic.Pointer[chan struct{}]
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch := *release.Load()
		arrived.Done()
		<-ch
		w.WriteHeader(http.StatusOK)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	cl := clients{idle: concurrent}
	defer cl.closeAll()
	client := cl.get("partner", profile.Outbound{})
	for round := 0; round < 3; round++ {
		// Every request of a round is in flight at once, so each needs a connection of
		// its own; the next round finds them idle.
		ch := make(chan struct{})
		release.Store(&ch)
		arrived.Add(concurrent)
		var done sync.WaitGroup
		errs := make(chan error, concurrent)
		for range concurrent {
			done.Add(1)
			go func() {
				defer done.Done()
				resp, err := client.Get(srv.URL)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
			}()
		}
		arrived.Wait()
		close(ch)
		done.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if n := opened.Load(); n > concurrent {
		t.Errorf("three rounds of %d concurrent requests opened %d connections, want at most %d", concurrent, n, concurrent)
	}
}
