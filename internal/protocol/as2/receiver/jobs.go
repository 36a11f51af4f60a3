package receiver

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Job states of as2_mdn_jobs.
const (
	jobPending = "pending"
	jobSent    = "sent"
	jobFailed  = "failed"
)

// mdnJob is an asynchronous MDN to send.
type mdnJob struct {
	ID           int64
	Instance     persistence.InstanceName
	InboundID    int64 // 0 for the error MDN of a message not kept
	URL          string
	AS2From      string // our AS2 id
	AS2To        string // the partner's
	MDNMessageID string
	ContentType  string
	Body         []byte
	Attempts     int
	// ClaimToken names the claim of the worker sending the job (see sendLease).
	ClaimToken string
}

func insertJob(ctx context.Context, tx module.Tx, j *mdnJob) error {
	now := tx.Now()
	var inbound any
	if j.InboundID != 0 {
		inbound = j.InboundID
	}
	err := tx.QueryRow(ctx, `INSERT INTO as2_mdn_jobs (instance, inbound_id, url, as2_from, as2_to, mdn_message_id,
		content_type, body, state, attempts, next_attempt_at, last_error, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, '', ?, ?) RETURNING id`,
		j.Instance, inbound, j.URL, j.AS2From, j.AS2To, j.MDNMessageID, j.ContentType, j.Body, jobPending,
		tx.Time(now), tx.Time(now), tx.Time(now)).Scan(&j.ID)
	if err != nil {
		return fmt.Errorf("queue asynchronous MDN %s: %w", j.MDNMessageID, err)
	}
	return nil
}

// queueJob queues an MDN job on its own (a refused message's error MDN, or an MDN sent
// again for a duplicate).
func queueJob(ctx context.Context, db module.SQL, j *mdnJob) error {
	return db.Write(ctx, func(tx module.Tx) error { return insertJob(ctx, tx, j) })
}

// claimJobs takes up to n due jobs of the instance: each gets its attempt counted, a
// fresh claim token and its next attempt pushed past lease, conditional on the attempt
// count read, so two processes never send the same attempt and a crash mid-send retries
// after lease.
func claimJobs(ctx context.Context, db module.SQL, instance persistence.InstanceName, n int, lease time.Duration) ([]mdnJob, error) {
	var out []mdnJob
	err := db.Write(ctx, func(tx module.Tx) error {
		out = out[:0]
		now := tx.Now()
		rows, err := tx.Query(ctx, `SELECT id, inbound_id, url, as2_from, as2_to, mdn_message_id, content_type, body, attempts
			FROM as2_mdn_jobs WHERE instance = ? AND state = ? AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`,
			instance, jobPending, tx.Time(now), n)
		if err != nil {
			return fmt.Errorf("list due asynchronous MDNs: %w", err)
		}
		var due []mdnJob
		for rows.Next() {
			j := mdnJob{Instance: instance}
			var inbound sql.NullInt64
			if err := rows.Scan(&j.ID, &inbound, &j.URL, &j.AS2From, &j.AS2To, &j.MDNMessageID, &j.ContentType, &j.Body, &j.Attempts); err != nil {
				rows.Close()
				return fmt.Errorf("read asynchronous MDN: %w", err)
			}
			j.InboundID = inbound.Int64
			due = append(due, j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list due asynchronous MDNs: %w", err)
		}
		for _, j := range due {
			j.ClaimToken = newToken()
			res, err := tx.Exec(ctx, `UPDATE as2_mdn_jobs SET attempts = attempts + 1, next_attempt_at = ?, claim_token = ?, updated_at = ?
				WHERE id = ? AND state = ? AND attempts = ?`, tx.Time(now.Add(lease)), j.ClaimToken, tx.Time(now), j.ID, jobPending, j.Attempts)
			if err != nil {
				return fmt.Errorf("claim asynchronous MDN %d: %w", j.ID, err)
			}
			if k, err := res.RowsAffected(); err != nil || k != 1 {
				continue
			}
			j.Attempts++
			out = append(out, j)
		}
		return nil
	})
	return out, err
}

// errClaimLost is finishJob's answer when the job's claim is no longer the caller's: its
// lease lapsed unrenewed and another worker took the job.
var errClaimLost = errors.New("the claim lapsed and another worker took the job")

// finishJob records an attempt's outcome (sent, retried at next, or failed for good)
// while the claim is still the caller's.
func finishJob(ctx context.Context, db module.SQL, j mdnJob, state string, next time.Time, lastError string) error {
	return db.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE as2_mdn_jobs SET state = ?, next_attempt_at = ?, last_error = ?, updated_at = ?
			WHERE id = ? AND state = ? AND claim_token = ?`,
			state, tx.Time(next), persistence.SanitizeReason(lastError), tx.Time(tx.Now()), j.ID, jobPending, j.ClaimToken)
		if err != nil {
			return fmt.Errorf("record asynchronous MDN %d: %w", j.ID, err)
		}
		if k, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("record asynchronous MDN %d: %w", j.ID, err)
		} else if k != 1 {
			return fmt.Errorf("record asynchronous MDN %d: %w", j.ID, errClaimLost)
		}
		return nil
	})
}

// sendDue sends the instance's due asynchronous MDNs, a batch at a time, holding the
// claims of the batch's unsent jobs while it works through them.
func (rc *Receiver) sendDue(ctx context.Context) {
	for ctx.Err() == nil {
		jobs, err := claimJobs(ctx, rc.deps.DB, rc.name, 16, rc.jobLease)
		if err != nil {
			rc.log.Error("claim asynchronous MDNs", "err", err)
			return
		}
		if len(jobs) == 0 {
			return
		}
		held := rc.holdJobs(ctx, jobs)
		for _, j := range jobs {
			rc.sendJob(ctx, j, held)
		}
		held.stop()
	}
}

// sendJob posts the job and records the outcome; the claim is held until the post is
// over, so a slow partner never gets the MDN from a second worker as well.
func (rc *Receiver) sendJob(ctx context.Context, j mdnJob, held *heldJobs) {
	defer held.release(j.ID)
	log := rc.log.With("as2_mdn_message_id", j.MDNMessageID, "attempt", j.Attempts)
	var row inboundRow
	if j.InboundID != 0 {
		if r, err := inboundByID(ctx, rc.deps.DB, j.InboundID); err == nil {
			row = r
			if row.MessageID != 0 {
				ctx = logging.WithMessageID(ctx, row.MessageID)
			}
		}
	}
	err := rc.postMDN(ctx, j)
	now := rc.now()
	switch {
	case err == nil:
		if ferr := finishJob(ctx, rc.deps.DB, j, jobSent, now, ""); ferr != nil {
			log.ErrorContext(ctx, "record asynchronous MDN", "err", ferr)
			return
		}
		log.InfoContext(ctx, "asynchronous MDN sent")
		rc.mdnDelivered(ctx, j, row)
	case j.Attempts >= rc.maxAttempts:
		if ferr := finishJob(ctx, rc.deps.DB, j, jobFailed, now, err.Error()); ferr != nil {
			log.ErrorContext(ctx, "record asynchronous MDN", "err", ferr)
			return
		}
		log.ErrorContext(ctx, "asynchronous MDN not delivered; giving up", "err", err)
		rc.mdnUndeliverable(ctx, j, row, err)
	default:
		next := now.Add(rc.backoff(j.Attempts))
		if ferr := finishJob(ctx, rc.deps.DB, j, jobPending, next, err.Error()); ferr != nil {
			log.ErrorContext(ctx, "record asynchronous MDN", "err", ferr)
			return
		}
		log.WarnContext(ctx, "asynchronous MDN not delivered; will retry", "err", err, "next_attempt_at", next)
	}
}

// postMDN posts the MDN; any 2xx answer counts as delivered.
func (rc *Receiver) postMDN(ctx context.Context, j mdnJob) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, bytes.NewReader(j.Body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	setMDNHeaders(req.Header, j.ContentType, j.AS2From, j.AS2To, j.MDNMessageID, rc.productName(), rc.now())
	resp, err := rc.client.Do(req)
	if err != nil {
		// The URL stays out of the reason: reasons are shown and logged.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the partner answered HTTP %d", resp.StatusCode)
	}
	return nil
}

func inboundByID(ctx context.Context, db module.SQL, id int64) (inboundRow, error) {
	var row inboundRow
	err := db.Read(ctx, func(tx module.Tx) error {
		var err error
		row, err = scanInbound(tx, tx.QueryRow(ctx, `SELECT `+inboundCols+` FROM as2_inbound WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("AS2 message row %d: %w", id, persistence.ErrNotFound)
		}
		return err
	})
	return row, err
}

// hasFailedJob reports whether an asynchronous MDN for the inbound row was given up on.
func hasFailedJob(ctx context.Context, db module.SQL, inboundID int64) (bool, error) {
	var n int
	err := db.Read(ctx, func(tx module.Tx) error {
		return tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_mdn_jobs WHERE inbound_id = ? AND state = ?`, inboundID, jobFailed).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("count asynchronous MDNs given up on: %w", err)
	}
	return n > 0, nil
}
