package as2_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// outboundView is the part of a sent message's AS2 panel the trial reads.
type outboundView struct {
	Outbound []struct {
		AS2MessageID string `json:"as2_message_id"`
		MDN          *struct {
			Transport  string `json:"transport"`
			Signed     bool   `json:"signed"`
			MIC        string `json:"mic"`
			MICMatched bool   `json:"mic_matched"`
			Note       string `json:"note"`
		} `json:"mdn"`
	} `json:"outbound"`
}

func outbound(t *testing.T, m messageView) outboundView {
	t.Helper()
	var v outboundView
	if err := json.Unmarshal(m.Protocols["as2"], &v); err != nil || len(v.Outbound) == 0 {
		t.Fatalf("AS2 panel %s: %v", m.Protocols["as2"], err)
	}
	return v
}

// outboundMessageID is the AS2 Message-ID the message was last sent with.
func outboundMessageID(t *testing.T, m messageView) string {
	v := outbound(t, m)
	return strings.Trim(v.Outbound[len(v.Outbound)-1].AS2MessageID, "<>")
}

// receiptSummary says what the MDN of a delivered message was, for the table.
func receiptSummary(t *testing.T, m messageView) string {
	v := outbound(t, m)
	mdn := v.Outbound[len(v.Outbound)-1].MDN
	if mdn == nil {
		t.Fatalf("delivered without an MDN: %s", m.Protocols["as2"])
	}
	s := fmt.Sprintf("%s, signed=%v", mdn.Transport, mdn.Signed)
	switch {
	case mdn.MICMatched:
		s += ", MIC matched"
	case mdn.Note != "":
		note, _, _ := strings.Cut(mdn.Note, ":")
		s += ", " + note
	}
	return s
}

// fieldError is the message of an API error answer, for the table.
func fieldError(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		return string(body)
	}
	return e.Error.Message
}
