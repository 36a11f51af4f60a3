package persistence

import "time"

// MaxUnknownSenders bounds the unknown senders table: a new pair beyond it evicts the
// one seen longest ago, so requests from anyone cannot grow the table.
const MaxUnknownSenders = 1000

// UnknownSenderHit is Count requests a source refused before it knew who sent them: an
// unknown sender or receiver id, or an envelope it could not read. The ids are as the
// request gave them (cut to a bounded length by the store), empty when missing; Reason is
// the last request's.
type UnknownSenderHit struct {
	Source     InstanceName
	RemoteAddr string
	SenderID   string
	ReceiverID string
	Reason     string
	Count      int64
}

// UnknownSender is one counted (source, remote address, sender id, receiver id).
type UnknownSender struct {
	ID         int64        `json:"id"`
	Source     InstanceName `json:"source"`
	RemoteAddr string       `json:"remote_addr"`
	SenderID   string       `json:"sender_id"`
	ReceiverID string       `json:"receiver_id"`
	Count      int64        `json:"count"`
	LastReason string       `json:"last_reason"`
	FirstSeen  time.Time    `json:"first_seen"`
	LastSeen   time.Time    `json:"last_seen"`
}
