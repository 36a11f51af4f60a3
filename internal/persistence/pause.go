package persistence

import (
	"fmt"
	"time"
)

// PartnerPause stops sending to a partner: a refusal that will repeat for every message
// (the partner cannot verify our signature, cannot decrypt, demands other security or
// algorithms) paused it, or an operator did. While it holds, the deliveries to the
// partner through the partner protocols' targets wait as DeliveryPaused: not attempted,
// not failed, never stalled. Resuming deletes it and queues them again.
type PartnerPause struct {
	Partner PartyName `json:"partner"`
	// Reason is the refusal's reason, or the operator's; bounded and sanitized.
	Reason string `json:"reason"`
	// Actor is "system" for a pause a refusal caused, else the operator.
	Actor    string    `json:"actor"`
	PausedAt time.Time `json:"paused_at"`
	// DeliveryID and MessageID name the refused delivery that paused the partner; zero
	// for a pause by hand.
	DeliveryID int64 `json:"delivery_id,omitempty"`
	MessageID  int64 `json:"message_id,omitempty"`
	// Waiting counts the deliveries paused now.
	Waiting int `json:"waiting"`
}

// PartnerProtocols are the plugin types whose targets send to a trading partner over
// its protocol: a pause holds their deliveries to the partner. A target that only files
// or posts a copy in-house (a file writer, an HTTP poster) is not held, since a partner's
// refusal says nothing about it.
var PartnerProtocols = []PluginType{PluginAS2Sender}

// MaxPauseReason bounds an operator's reason for a pause.
const MaxPauseReason = 500

// CheckPauseReason checks an operator's reason for pausing a partner.
func CheckPauseReason(reason string) error {
	switch {
	case reason == "":
		return &FieldError{Field: "reason", Message: "is required: say why sending to the partner stops"}
	case len(reason) > MaxPauseReason:
		return &FieldError{Field: "reason", Message: fmt.Sprintf("must be at most %d bytes", MaxPauseReason)}
	}
	return nil
}
