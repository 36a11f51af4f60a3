package receiver

import (
	"net/http"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
)

// Metrics counts the receiver's requests for the process's metrics. Its labels are the
// instance and the reason codes below, never a partner, an address or a Message-ID.
type Metrics interface {
	// Began counts a request that holds a slot; done ends it.
	Began(protocol string, instance persistence.InstanceName) (done func())
	// Refused counts a request refused for reason.
	Refused(protocol string, instance persistence.InstanceName, reason string)
}

// protocol is the receiver's label in Metrics.
const protocol = "as2"

// Reasons a request is refused, as Metrics counts them. A message refused for its
// content counts under its disposition's description (decryption-failed, …; see
// dispositions), so the list stays bounded by the code.
const (
	refusedAddressLimit = "address_limit"
	refusedBusy         = "busy"
	refusedPartnerLimit = "partner_limit"
	refusedFairShare    = "fair_share"
	refusedUnavailable  = "unavailable"
	refusedRepeatBusy   = "repeat_busy"
	refusedBadRequest   = "bad_request"
)

// requestRefusals names refuseRequest's refusals by their HTTP status.
var requestRefusals = map[int]string{
	http.StatusBadRequest:            refusedBadRequest,
	http.StatusForbidden:             "unknown_party",
	http.StatusRequestEntityTooLarge: "too_large",
	http.StatusRequestTimeout:        "too_slow",
}

// requestRefusal is the reason code of a refuseRequest with status.
func requestRefusal(status int) string {
	if r, ok := requestRefusals[status]; ok {
		return r
	}
	return refusedBadRequest
}

// dispositionRefusal is the reason code of a message refused with disp: the description
// after "error: ".
func dispositionRefusal(disp mime.Disposition) string {
	_, desc, ok := strings.Cut(disp.Modifier, ": ")
	if !ok || desc == "" {
		return unexpectedFailure
	}
	return desc
}

// refused counts a refusal.
func (rc *Receiver) refused(reason string) {
	rc.metrics.Refused(protocol, rc.name, reason)
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Began(string, persistence.InstanceName) func()    { return func() {} }
func (noMetrics) Refused(string, persistence.InstanceName, string) {}
