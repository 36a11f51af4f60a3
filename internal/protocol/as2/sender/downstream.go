package sender

import (
	"net/http"
	"strings"

	"wharf/internal/persistence"
)

// mdnDownstream is the downstream status an authentic MDN reports for the delivery of
// rec: processed, processed_with_warning, or failed with the verdict's reason (a
// negative disposition, or a MIC that does not match). date is the MDN's Date header,
// the partner's own time; when it is missing or unreadable the line has none.
func mdnDownstream(rec OutboundRecord, v verdict, date string) persistence.DownstreamReport {
	r := persistence.DownstreamReport{MessageID: rec.MessageID, DeliveryID: rec.DeliveryID,
		Status: persistence.DownstreamFailed, Reason: v.Reason, Reporter: persistence.DownstreamActorMDN}
	if v.Accepted {
		r.Status, r.Reason = persistence.DownstreamProcessed, v.Note
		if v.MDN != nil && strings.HasPrefix(strings.ToLower(v.MDN.Disposition.Modifier), "warning") {
			r.Status, r.Reason = persistence.DownstreamProcessedWithWarning, v.MDN.Disposition.Modifier
		}
	}
	if at, err := http.ParseTime(date); err == nil {
		r.ReportedAt = at.UTC()
	}
	return r
}
