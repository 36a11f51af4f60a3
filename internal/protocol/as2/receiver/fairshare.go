package receiver

import "net/http"

// The fair share keeps a flood naming a few partners from taking every slot. Once the
// receiver is crowded (three quarters of its slots in use) and more than one partner
// has requests in progress, a partner that already holds its share (an eighth of the
// slots, at least one) is refused; partners with fewer requests in progress are
// admitted into the slots left. A partner alone on the receiver is never held to its
// share, so one busy partner may use every slot its max_requests_per_partner allows.

// crowded tells whether so many slots are taken that each partner is held to its share.
// The count includes requests that took a slot and are not yet admitted, which only
// makes the receiver look more crowded.
func (rc *Receiver) crowded() bool {
	n := rc.cfg.MaxConcurrentRequests
	return len(rc.slots) >= n-n/4
}

// fairShare is how many requests in progress a partner keeps while the receiver is
// crowded and others are in progress.
func (rc *Receiver) fairShare() int { return max(1, rc.cfg.MaxConcurrentRequests/8) }

// mdnPoster is the key under which the requests posting to mdn_path are counted, as
// if they were one partner: an MDN names its partner only inside its body, and a flood
// of slow MDN bodies must leave the slots to messages as a flood naming one partner
// does. No partner name holds a NUL.
const mdnPoster = "\x00mdn_path"

// admitPartner counts a request naming partner (or mdnPoster), or answers it 429 when
// the partner has max_requests_per_partner in progress or is over its fair share; it
// reports whether the request was counted (release it with rc.perPartner.release).
func (rc *Receiver) admitPartner(w http.ResponseWriter, r *http.Request, partner string) bool {
	share := 0
	if rc.crowded() {
		share = rc.fairShare()
	}
	who, has, attrs := "this partner", "this partner already has its", []any{"partner", partner}
	if partner == mdnPoster {
		who, has, attrs = "asynchronous MDNs", "asynchronous MDNs already have their", []any{"path", rc.cfg.MDNPath}
	}
	switch rc.perPartner.acquireFair(partner, share) {
	case overMax:
		rc.refused(refusedPartnerLimit)
		rc.tooMany(w, r, "too many AS2 requests in progress for "+who,
			append(attrs, "limit", rc.cfg.MaxRequestsPerPartner)...)
		return false
	case overShare:
		rc.refused(refusedFairShare)
		rc.tooMany(w, r, "the receiver is crowded and "+has+" fair share of requests in progress",
			append(attrs, "share", share, "in_progress", len(rc.slots))...)
		return false
	}
	return true
}
