package receiver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence/db"
)

// attackerIP is the loopback address abusive clients connect from, so that the good
// partner's requests (from 127.0.0.1) come from another address.
const attackerIP = "127.0.0.2"

// goodTimeout bounds each request of the good partner during an attack.
const goodTimeout = 20 * time.Second

// sendFrom posts r from the loopback address ip, within goodTimeout.
func sendFrom(ip, url string, r request) (reply, error) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	client := &http.Client{Timeout: goodTimeout, Transport: &http.Transport{DialContext: dialer.DialContext}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(r.body))
	if err != nil {
		return reply{}, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", r.contentType)
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: data}, err
}

// writeHead writes r's request line and header section, with its Content-Length, and
// the first n bytes of its body.
func writeHead(w io.Writer, path string, r request, n int) error {
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: x\r\n", path)
	for _, f := range fieldsOf(r) {
		fmt.Fprintf(&head, "%s: %s\r\n", f[0], f[1])
	}
	fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", len(r.body))
	head.Write(r.body[:n])
	_, err := w.Write(head.Bytes())
	return err
}

// twoPartners is a bench on s with org and two partners, and a directory of their
// profiles with the secure defaults.
func twoPartners(t *testing.T, s *db.Store, org, p1, p2 party) (*bench, *directory) {
	b := newBench(t, s, []party{org}, []party{p1, p2})
	dir := newDirectory()
	dir.add(inbound(org, p1, nil))
	dir.add(inbound(org, p2, nil))
	return b, dir
}

// servedMeanwhile sends three messages of the good partner from 127.0.0.1, each of
// which must be answered with a successful MDN within goodTimeout.
func servedMeanwhile(t *testing.T, rc *Receiver, org, partner party, what string) {
	t.Helper()
	for i := range 3 {
		r := build(t, partner, org, []byte(fmt.Sprintf("order %s %d\r\n", what, i)), fmt.Sprintf("good-%d.edi", i), secureOpts(partner, org))
		a, err := sendFrom("127.0.0.1", rc.url(), r)
		if err != nil {
			t.Fatalf("good partner during %s: %v", what, err)
		}
		if m := parseMDN(t, a, org.cert); !m.Disposition.Successful() {
			t.Errorf("good partner during %s: %s", what, m.Disposition)
		}
	}
}

// nothingHalfStored checks that every blob file in the payload store is named by a
// payloads row, so a refused request left no blob behind (rows and temporary files
// are checked by the callers and by bench.start).
func nothingHalfStored(t *testing.T, b *bench) {
	t.Helper()
	var files int
	err := filepath.WalkDir(b.blobs.Root(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := b.sql.Read(b.ctx, func(tx module.Tx) error {
		return tx.QueryRow(b.ctx, `SELECT COUNT(*) FROM payloads`).Scan(&rows)
	}); err != nil {
		t.Fatal(err)
	}
	if files != rows {
		t.Errorf("%d blob files for %d payload rows", files, rows)
	}
}

// openRequest connects from ip to addr and writes the start of a request with head; the
// channel gets the status of the answer once it comes (0 when none could be read).
func openRequest(ip, addr string, head func(io.Writer) error) (net.Conn, <-chan int, error) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if err := head(conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	answer := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answer <- 0
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	return conn, answer, nil
}

// trickle connects from ip, sends r's header section and then one byte of its body
// every interval until an answer comes, and returns the answer's status.
func trickle(ip, addr, path string, r request, every time.Duration) (int, error) {
	conn, answer, err := openRequest(ip, addr, func(w io.Writer) error { return writeHead(w, path, r, 0) })
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case status := <-answer:
			return status, nil
		case <-tick.C:
			if i < len(r.body) {
				// A failed write means the server gave up; its answer tells why.
				_, _ = conn.Write(r.body[i : i+1])
			}
		}
	}
}

// Slow bodies: 40 connections from one address trickling their bodies take at most
// their address's share of the slots, are cut off once they fall behind the minimum
// rate, store nothing, and a good partner is served throughout.
func TestSlowBodies(t *testing.T) {
	org, partner, attacker := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "globex")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b, dir := twoPartners(t, s, org, partner, attacker)
		tests := []struct {
			name   string
			change func(*Config)
			// attackers answered 429 at once: at least lo, at most hi
			lo, hi int
		}{
			// The address's share keeps slots free for everyone else.
			{"per-address limit", func(*Config) {}, 40 - DefaultMaxRequestsPerAddress, 40 - DefaultMaxRequestsPerAddress},
			// The minimum rate alone frees the slots within the body idle time-out. The
			// attacker alone takes every slot; those of its waiting requests that get one
			// while the good partner's message is in progress are over its fair share.
			{"minimum rate alone", func(c *Config) { c.MaxRequestsPerAddress, c.MaxRequestsPerPartner = 64, 64 },
				0, 40 - DefaultMaxConcurrentRequests},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rc := b.start("as2_slow_"+fmt.Sprint(len(tt.name)), dir, func(c *Config, _ *Deps) {
					c.BodyIdleTimeout = delivery.Duration(time.Second)
					c.MinBodyBytesPerSecond = 1024
					tt.change(c)
				}, func(rc *Receiver) { rc.queueWait = goodTimeout })
				before := b.messageCount()
				statuses := make(chan int, 40)
				var wg sync.WaitGroup
				slow := make([]request, 40)
				for i := range slow {
					slow[i] = build(t, attacker, org, randomBytes(t, 4000), "slow.edi", secureOpts(attacker, org))
				}
				for _, r := range slow {
					wg.Go(func() {
						status, err := trickle(attackerIP, rc.Addr().String(), rc.cfg.Path, r, 200*time.Millisecond)
						if err != nil {
							t.Error(err)
						}
						statuses <- status
					})
				}
				eventually(t, "the slow bodies taking their slots", func() bool {
					return len(rc.slots) >= min(rc.cfg.MaxRequestsPerAddress, rc.cfg.MaxConcurrentRequests)
				})
				servedMeanwhile(t, rc, org, partner, "the slow bodies")
				wg.Wait()
				close(statuses)
				counts := map[int]int{}
				for s := range statuses {
					counts[s]++
				}
				if n := counts[http.StatusTooManyRequests]; n < tt.lo || n > tt.hi || counts[http.StatusRequestTimeout] != 40-n {
					t.Errorf("attackers answered %v, want %d to %d × 429 and the rest 408", counts, tt.lo, tt.hi)
				}
				if stored := b.messageCount() - before; stored != 3 {
					t.Errorf("%d messages stored, want the good partner's 3", stored)
				}
				eventually(t, "every slot free", func() bool { return len(rc.slots) == 0 && rc.perAddress.count(attackerIP) == 0 })
				nothingHalfStored(t, b)
			})
		}
	})
}

// Past max_requests_per_address and max_requests_per_partner a request is answered 429
// with Retry-After before its body is read; other addresses and partners are served.
func TestPerKeyLimits(t *testing.T) {
	org, partner, other := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "initech")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b, dir := twoPartners(t, s, org, partner, other)
		n := 0
		doc := func(from party) request {
			n++
			return build(t, from, org, []byte(fmt.Sprintf("doc %d\r\n", n)), "doc.edi", secureOpts(from, org))
		}
		tests := []struct {
			name        string
			change      func(*Config)
			holdFrom    string // address of the held request
			blockedFrom string
			blocked     party
			servedFrom  string
			served      party
			reason      string // the refusal's reason code in the metrics
		}{
			{"per address", func(c *Config) { c.MaxRequestsPerAddress = 1 },
				"127.0.0.1", "127.0.0.1", other, attackerIP, other, refusedAddressLimit},
			{"per partner", func(c *Config) { c.MaxRequestsPerPartner = 1 },
				"127.0.0.1", attackerIP, partner, attackerIP, other, refusedPartnerLimit},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				metrics := &countingMetrics{}
				rc := b.start(fmt.Sprintf("as2_keyed_%d", i), dir, func(c *Config, d *Deps) { tt.change(c); d.Metrics = metrics })
				// The held request: its header and half its body, from partner.
				held := doc(partner)
				dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tt.holdFrom)}}
				conn, err := dialer.Dial("tcp", rc.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				if err := writeHead(conn, rc.cfg.Path, held, len(held.body)/2); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the held request counted", func() bool {
					return rc.perAddress.count(tt.holdFrom) == 1 && rc.perPartner.count(string(partner.name)) == 1
				})
				// A request refused by the address limit never holds a slot; one refused
				// per partner holds one until its answer.
				if metrics.inFlightNow() != 1 {
					t.Errorf("%d requests in flight with the held one, want 1", metrics.inFlightNow())
				}
				a, err := sendFrom(tt.blockedFrom, rc.url(), doc(tt.blocked))
				if err != nil {
					t.Fatal(err)
				}
				if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" {
					t.Errorf("HTTP %d, Retry-After %q: %s; want 429 with Retry-After", a.status, a.header.Get("Retry-After"), a.body)
				}
				if got, want := metrics.last(), "as2 "+string(rc.name)+" "+tt.reason; got != want {
					t.Errorf("metrics counted the refusal as %q, want %q", got, want)
				}
				a, err = sendFrom(tt.servedFrom, rc.url(), doc(tt.served))
				if err != nil {
					t.Fatal(err)
				}
				if m := parseMDN(t, a, org.cert); !m.Disposition.Successful() {
					t.Errorf("other request: %s", m.Disposition)
				}
				if _, err := conn.Write(held.body[len(held.body)/2:]); err != nil {
					t.Fatal(err)
				}
				if m := parseMDN(t, readAnswer(t, conn), org.cert); !m.Disposition.Successful() {
					t.Errorf("held request: %s", m.Disposition)
				}
				conn.Close()
				eventually(t, "the counts back to zero", func() bool {
					return rc.perAddress.count(tt.holdFrom) == 0 && rc.perPartner.count(string(partner.name)) == 0 &&
						metrics.inFlightNow() == 0
				})
			})
		}
	})
}
