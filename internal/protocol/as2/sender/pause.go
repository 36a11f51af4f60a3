package sender

import (
	"slices"
	"strings"

	"wharf/internal/protocol/as2/mime"
)

// pausingModifiers are the failure modifiers of a partner's MDN that it will answer to
// every message until someone changes a certificate or a profile: sending more only
// piles up refusals, so the partner is paused (docs/as2.md, "Refusals that pause a
// partner"). A refusal of one message's content (integrity-check-failed,
// decompression-failed, a duplicate, an unexpected processing error) does not pause.
var pausingModifiers = []string{
	"authentication-failed",
	"decryption-failed",
	"insufficient-message-security",
	"unsupported-mic-algorithms",
	"unsupported-algorithm",
	"unsupported-algorithms",
	"unsupported-encryption-algorithm",
	"unsupported-signature-algorithm",
}

// pauseFor is the reason to pause the partner that answered a refusing disposition, or
// "" when the refusal concerns only the message. Products spell modifiers in any case and
// some with spaces ("unsupported MIC-algorithms"), so the text is normalised first.
func pauseFor(d mime.Disposition) string {
	if d.Successful() {
		return ""
	}
	text := strings.Join(strings.Fields(strings.ToLower(d.ModifierText())), "-")
	if !slices.Contains(pausingModifiers, text) {
		return ""
	}
	return "the partner refused a message with " + text + ", which it answers to every message until the cause is fixed: " +
		"sending to it is paused; fix the cause (see the message's advice), then resume the partner"
}
