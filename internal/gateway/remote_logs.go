package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"wharf/internal/logging"
)

// Every process answers requests for the newest records of its log ring on a subject of
// its own, so the API process's logs page can show any process's log. New records go out
// on a second subject, batched and rate-limited, and only while someone has asked for
// them recently: an installation nobody watches puts no log traffic on the bus.

const (
	// maxTailRecords and maxTailBytes bound one reply.
	maxTailRecords = 200
	maxTailBytes   = 256 << 10
	// logsInterest is how long one request keeps the process publishing its new records.
	logsInterest = 30 * time.Second
	// logsKeepAlive is how often a follower renews its interest; well inside logsInterest.
	logsKeepAlive = 10 * time.Second
	// logsPublishEvery is the least time between two batches of new records.
	logsPublishEvery = time.Second
	// logsRequestTimeout bounds a tail request to another process.
	logsRequestTimeout = 5 * time.Second
)

// logsTailSubject is the request/reply subject of one process's log ring.
func logsTailSubject(processID string) string { return "logs.tail." + processID }

// logsLiveSubject carries one process's new log records while someone follows them.
func logsLiveSubject(processID string) string { return "logs.live." + processID }

type logsTailRequest struct {
	Level slog.Level `json:"level"`
	Text  string     `json:"text,omitempty"`
	Limit int        `json:"limit"` // 0 only renews the interest in live records
}

type logsTailReply struct {
	Error   string          `json:"error,omitempty"`
	Entries []logging.Entry `json:"entries,omitempty"`
}

// logsServer answers tail requests for the process's ring and publishes new records
// while they are followed.
type logsServer struct {
	g      *Gateway
	ring   *logging.Ring
	asked  atomic.Int64 // unix nanoseconds of the latest request
	seq    uint64       // the newest record published or skipped; the publisher's own
	stop   chan struct{}
	done   chan struct{}
	closer sync.Once
}

// serveLogs starts answering for the process's ring; Close ends the publishing.
func (g *Gateway) serveLogs() (*logsServer, error) {
	ls, err := g.answerLogs()
	if err != nil {
		return nil, err
	}
	go ls.publish()
	return ls, nil
}

// answerLogs answers tail requests; the caller runs the publishing.
func (g *Gateway) answerLogs() (*logsServer, error) {
	ls := &logsServer{g: g, ring: g.logs, stop: make(chan struct{}), done: make(chan struct{})}
	_, ls.seq = ls.ring.After(0, 0)
	if _, err := g.Bus.Respond(logsTailSubject(g.holder), ls.answer); err != nil {
		return nil, fmt.Errorf("serve log tail: %w", err)
	}
	return ls, nil
}

func (ls *logsServer) answer(_ string, data []byte) []byte {
	var req logsTailRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return mustJSON(logsTailReply{Error: "bad request: " + err.Error()})
	}
	ls.asked.Store(time.Now().UnixNano())
	limit := min(max(req.Limit, 0), maxTailRecords)
	var rep logsTailReply
	if limit == 0 {
		return mustJSON(rep)
	}
	size := 0
	for _, e := range ls.ring.Tail(req.Level, req.Text, limit) {
		size += len(e.Message) + len(e.Attrs) + 64
		if size > maxTailBytes {
			break
		}
		rep.Entries = append(rep.Entries, e)
	}
	return mustJSON(rep)
}

// publish sends the ring's new records, at most one batch per logsPublishEvery, while a
// request came within logsInterest. A process nobody follows runs no timer: each new
// record only moves the cursor past it.
func (ls *logsServer) publish() {
	defer close(ls.done)
	wake, cancel := ls.ring.Subscribe()
	defer cancel()
	var due <-chan time.Time // nil while no batch is waiting
	for {
		select {
		case <-ls.stop:
			return
		case <-wake:
			if !ls.followed() {
				_, ls.seq = ls.ring.After(0, 0)
			} else if due == nil {
				due = time.After(logsPublishEvery)
			}
		case <-due:
			due = nil
			ls.step()
		}
	}
}

// followed reports whether someone asked for the records within logsInterest.
func (ls *logsServer) followed() bool {
	return time.Since(time.Unix(0, ls.asked.Load())) <= logsInterest
}

// step publishes the records logged since the last step, if someone follows them, and
// returns how many it published.
func (ls *logsServer) step() int {
	if !ls.followed() {
		_, ls.seq = ls.ring.After(0, 0) // nobody follows: skip what was logged
		return 0
	}
	batch, newest := ls.ring.After(ls.seq, maxTailRecords)
	ls.seq = newest
	if len(batch) == 0 {
		return 0
	}
	batch = trimBytes(batch)
	// Publishing logs nothing on failure: a log record about it would be published
	// again in turn.
	_ = ls.g.Bus.Publish(logsLiveSubject(ls.g.holder), mustJSON(logsTailReply{Entries: batch}))
	return len(batch)
}

// trimBytes keeps the newest records of batch (oldest first) that fit maxTailBytes.
func trimBytes(batch []logging.Entry) []logging.Entry {
	size := 0
	for i := len(batch) - 1; i >= 0; i-- {
		size += len(batch[i].Message) + len(batch[i].Attrs) + 64
		if size > maxTailBytes {
			return batch[i+1:]
		}
	}
	return batch
}

// Close stops publishing new records.
func (ls *logsServer) Close() {
	ls.closer.Do(func() { close(ls.stop) })
	<-ls.done
}

// processLogs reads other processes' rings over the bus for the logs page.
type processLogs struct{ g *Gateway }

func (p processLogs) Self() string { return p.g.holder }

func (p processLogs) request(ctx context.Context, processID string, req logsTailRequest) ([]logging.Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, logsRequestTimeout)
	defer cancel()
	data, err := p.g.Bus.Request(ctx, logsTailSubject(processID), mustJSON(req))
	if err != nil {
		return nil, fmt.Errorf("process %s: %w", processID, err)
	}
	var rep logsTailReply
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("process %s: bad reply: %w", processID, err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("process %s: %s", processID, rep.Error)
	}
	return rep.Entries, nil
}

func (p processLogs) Tail(ctx context.Context, processID string, level slog.Level, text string, limit int) ([]logging.Entry, error) {
	return p.request(ctx, processID, logsTailRequest{Level: level, Text: text, Limit: max(limit, 1)})
}

// Watch follows the process's live records and keeps its interest renewed until cancel.
func (p processLogs) Watch(ctx context.Context, processID string) (<-chan struct{}, func(), error) {
	wake := make(chan struct{}, 1)
	sub, err := p.g.Bus.Subscribe(logsLiveSubject(processID), func(string, []byte) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("follow log of process %s: %w", processID, err)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		renew := time.NewTicker(logsKeepAlive)
		defer renew.Stop()
		for {
			if _, err := p.request(ctx, processID, logsTailRequest{}); err != nil && ctx.Err() == nil {
				p.g.log.Debug("renew interest in a process's log", "process", processID, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-renew.C:
			}
		}
	}()
	return wake, func() {
		stop()
		<-done
		_ = sub.Unsubscribe()
	}, nil
}
