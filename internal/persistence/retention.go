package persistence

import "time"

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
