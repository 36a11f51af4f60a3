package receiver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence/db"
)

// holdSlot connects from ip and sends r's header section declaring a body of declared
// bytes, then chunk bytes every interval (above the minimum rate, so the pace never
// cuts it off) until stop closes or an answer comes. It returns the answer's status,
// or 0 when stop came first.
func holdSlot(ip, addr, path string, r request, declared, chunk int, every time.Duration, stop <-chan struct{}) (int, error) {
	conn, answer, err := openRequest(ip, addr, func(w io.Writer) error {
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\n", path)
		for _, f := range fieldsOf(r) {
			head += fmt.Sprintf("%s: %s\r\n", f[0], f[1])
		}
		_, err := io.WriteString(w, head+fmt.Sprintf("Content-Length: %d\r\n\r\n", declared))
		return err
	})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	piece := make([]byte, chunk)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case status := <-answer:
			return status, nil
		case <-stop:
			return 0, nil
		case <-tick.C:
			// A failed write means the server gave up; its answer tells why.
			_, _ = conn.Write(piece)
		}
	}
}

// refuseMDNs is an MDN intake for which no MDN ever arrives whole.
type refuseMDNs struct{}

func (refuseMDNs) AcceptMDN(context.Context, string, http.Header, []byte) error {
	return fmt.Errorf("an MDN of the flood arrived whole")
}

// flood is a set of connections holding slots with slow bodies that keep above the
// minimum rate.
type flood struct {
	stop     chan struct{}
	stopped  sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	statuses map[int]int
}

// startFlood opens n connections to rc's path, the i-th from ips[i%len(ips)] naming
// from[i%len(from)], each declaring a body of declared bytes and sending 4 KiB a second
// of it (the receiver under test asks for 1 KiB a second).
func startFlood(t *testing.T, rc *Receiver, path string, declared int, org party, from []party, ips []string, n int) *flood {
	t.Helper()
	f := &flood{stop: make(chan struct{}), statuses: map[int]int{}}
	for i := range n {
		r := build(t, from[i%len(from)], org, []byte("x"), "slow.edi", secureOpts(from[i%len(from)], org))
		ip := ips[i%len(ips)]
		f.wg.Go(func() {
			status, err := holdSlot(ip, rc.Addr().String(), path, r, declared, 2<<10, 500*time.Millisecond, f.stop)
			if err != nil {
				t.Error(err)
			}
			f.mu.Lock()
			f.statuses[status]++
			f.mu.Unlock()
		})
	}
	return f
}

// answered is how many of the flood's requests were answered with status so far.
func (f *flood) answered(status int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statuses[status]
}

// end closes the flood's connections that are still open and waits for them.
func (f *flood) end() {
	f.stopped.Do(func() { close(f.stop) })
	f.wg.Wait()
}

// Fair share: 32 slow bodies naming two partners from four addresses, each body above
// the minimum rate, cannot take every slot; a third partner's message is served with
// its MDN while they hold theirs. Slow bodies posted to mdn_path are held to a share
// the same way. A single partner alone, with its caps raised, still gets every slot.
func TestFairShare(t *testing.T) {
	org := testParty(t, "wharf")
	acme, beta, gamma := testParty(t, "acme"), testParty(t, "beta"), testParty(t, "gamma")
	flooders := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{acme, beta, gamma})
		dir := newDirectory()
		for _, p := range []party{acme, beta, gamma} {
			dir.add(inbound(org, p, nil))
		}
		pace := func(c *Config) {
			c.BodyIdleTimeout = delivery.Duration(time.Second)
			c.MinBodyBytesPerSecond = 1024
		}

		t.Run("two partners flood, a third is served", func(t *testing.T) {
			rc := b.start("as2_fair_flood", dir, func(c *Config, _ *Deps) { pace(c) })
			slots := rc.cfg.MaxConcurrentRequests
			f := startFlood(t, rc, rc.cfg.Path, 100<<20, org, []party{acme, beta}, flooders, slots)
			defer f.end()
			held := func() int { return rc.perPartner.count(string(acme.name)) + rc.perPartner.count(string(beta.name)) }
			eventually(t, "every flood request admitted or refused", func() bool {
				return held()+f.answered(http.StatusTooManyRequests) == slots
			})
			t.Logf("the flood holds %d of %d slots; %d of its requests refused 429", held(), slots, f.answered(http.StatusTooManyRequests))
			if n := held(); n >= slots {
				t.Errorf("the flood holds %d of %d slots", n, slots)
			}
			before := b.messageCount()
			r := build(t, gamma, org, []byte("order during the flood\r\n"), "good.edi", secureOpts(gamma, org))
			sent := time.Now()
			a, err := sendFrom("127.0.0.1", rc.url(), r)
			if err != nil {
				t.Fatalf("third partner during the flood: %v", err)
			}
			t.Logf("third partner answered in %s", time.Since(sent).Round(time.Millisecond))
			if a.status != http.StatusOK {
				t.Fatalf("third partner during the flood: HTTP %d: %s", a.status, a.body)
			}
			if m := parseMDN(t, a, org.cert); !m.Disposition.Successful() {
				t.Errorf("third partner during the flood: %s", m.Disposition)
			}
			if stored := b.messageCount() - before; stored != 1 {
				t.Errorf("%d messages stored, want the third partner's 1", stored)
			}
			if n := held(); n == 0 {
				t.Errorf("the flood lost its slots before the third partner was served")
			}
			if len(b.logs.lines("share", fmt.Sprint(max(1, slots/8)))) == 0 {
				t.Errorf("no log line names the fair share refusal")
			}
			f.end()
			eventually(t, "every slot free", func() bool { return len(rc.slots) == 0 && held() == 0 })
			nothingHalfStored(t, b)
		})

		t.Run("slow MDN bodies flood, a message is served", func(t *testing.T) {
			rc := b.start("as2_fair_mdn", dir, func(c *Config, d *Deps) {
				pace(c)
				d.MDNIntake = refuseMDNs{}
			})
			slots := rc.cfg.MaxConcurrentRequests
			f := startFlood(t, rc, rc.cfg.MDNPath, maxMDNBody, org, []party{acme, beta}, flooders, slots)
			defer f.end()
			eventually(t, "every flood request admitted or refused", func() bool {
				return len(rc.slots)+f.answered(http.StatusTooManyRequests) == slots
			})
			if n := len(rc.slots); n >= slots {
				t.Errorf("the MDN flood holds %d of %d slots", n, slots)
			}
			r := build(t, gamma, org, []byte("order during the MDN flood\r\n"), "good.edi", secureOpts(gamma, org))
			a, err := sendFrom("127.0.0.1", rc.url(), r)
			if err != nil {
				t.Fatalf("message during the MDN flood: %v", err)
			}
			if a.status != http.StatusOK {
				t.Fatalf("message during the MDN flood: HTTP %d: %s", a.status, a.body)
			}
			if m := parseMDN(t, a, org.cert); !m.Disposition.Successful() {
				t.Errorf("message during the MDN flood: %s", m.Disposition)
			}
			f.end()
			eventually(t, "every slot free", func() bool { return len(rc.slots) == 0 && rc.perPartner.count(mdnPoster) == 0 })
		})

		t.Run("one partner alone takes every slot", func(t *testing.T) {
			rc := b.start("as2_fair_alone", dir, func(c *Config, _ *Deps) {
				pace(c)
				c.MaxRequestsPerPartner, c.MaxRequestsPerAddress = c.MaxConcurrentRequests, c.MaxConcurrentRequests
			})
			slots := rc.cfg.MaxConcurrentRequests
			f := startFlood(t, rc, rc.cfg.Path, 100<<20, org, []party{acme}, flooders, slots)
			defer f.end()
			eventually(t, "the partner holding every slot", func() bool {
				return rc.perPartner.count(string(acme.name)) == slots || f.answered(http.StatusTooManyRequests) > 0
			})
			if n := f.answered(http.StatusTooManyRequests); n > 0 {
				t.Fatalf("%d of the lone partner's requests refused 429, want every slot served", n)
			}
			f.end()
			eventually(t, "every slot free", func() bool { return len(rc.slots) == 0 })
		})
	})
}
