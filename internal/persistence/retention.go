package persistence

import (
	"context"
	"time"
)

// MaxRetentionDays bounds a retention setting: about a hundred years.
const MaxRetentionDays = 36500

// Retention is how long payloads and history are kept, in days; 0 keeps them for ever.
type Retention struct {
	PayloadDays int
	HistoryDays int
}

// PartyRetention is a party's own retention, overriding the global settings for its
// messages; a nil field keeps the global value.
type PartyRetention struct {
	Kind        PartyKind `json:"-"`
	Name        PartyName `json:"-"`
	PayloadDays *int      `json:"payload_retention_days"`
	HistoryDays *int      `json:"history_retention_days"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Pruned tells what retention removed of a message: when its payloads went, before which
// time its history lines went, and the archives those lines were exported to.
type Pruned struct {
	MessageID           int64      `json:"message_id"`
	PayloadsPrunedAt    *time.Time `json:"payloads_pruned_at,omitempty"`
	HistoryPrunedBefore *time.Time `json:"history_pruned_before,omitempty"`
	ArchiveKeys         []string   `json:"archive_keys,omitempty"`
}

// HistoryArchive is one month of history exported before its partition was dropped.
type HistoryArchive struct {
	ID        int64
	Start     time.Time
	End       time.Time
	Rows      int64
	Key       string
	CreatedAt time.Time
}

// HistoryPartition is one month partition of the history table (PostgreSQL).
type HistoryPartition struct {
	Name       string
	Start, End time.Time
	Rows       int64
}

// DayCount is the number and size of the messages of one status created on one UTC day.
type DayCount struct {
	Day    time.Time // midnight UTC
	Status MessageStatus
	Count  int64
	Bytes  int64
}

// RetentionStore is the part of Store about retention and bounded history reads.
type RetentionStore interface {
	GetPartyRetention(ctx context.Context, kind PartyKind, name PartyName) (PartyRetention, error)
	// SetPartyRetention sets a party's own retention (both nil: the global settings).
	SetPartyRetention(ctx context.Context, pr PartyRetention) (PartyRetention, error)
	// PrunedFor tells what retention removed of each message it touched.
	PrunedFor(ctx context.Context, messageIDs []int64) (map[int64]Pruned, error)
	// ListHistoryRange lists history lines with from <= at < to and id after after, in
	// id order.
	ListHistoryRange(ctx context.Context, from, to time.Time, after int64, limit int) ([]HistoryEntry, error)
	// CountMessagesPerDay counts messages per UTC day of creation and status from first on.
	CountMessagesPerDay(ctx context.Context, first time.Time) ([]DayCount, error)
}

// RetentionDaysMessage is why a retention in days is refused.
const RetentionDaysMessage = "enter a whole number of days from 0 (for ever) to 36500"

// Check refuses days out of range, naming every field refused.
func (pr PartyRetention) Check() error {
	var es FieldErrors
	for _, f := range []struct {
		name string
		days *int
	}{{"payload_retention_days", pr.PayloadDays}, {"history_retention_days", pr.HistoryDays}} {
		if f.days != nil && (*f.days < 0 || *f.days > MaxRetentionDays) {
			es.Add(f.name, RetentionDaysMessage)
		}
	}
	return es.Err()
}
