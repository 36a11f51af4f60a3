package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"wharf/internal/download"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"messages", "message"}, (*Server).messageRoutes)

var _ = registerFlashes(map[string]flash{
	"message-redispatched":       {Kind: "success", Text: "Redispatch requested."},
	"message-redispatch-refused": {Kind: "danger", Text: "Redispatch refused: the message is not in a state that allows it."},
	"message-redelivered":        {Kind: "success", Text: "Redelivery requested."},
	"message-redeliver-refused":  {Kind: "danger", Text: "Redelivery refused: the delivery is not in a state that allows it."},
})

// messageRoutes lists the message list, the message detail and its actions.
func (s *Server) messageRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/messages", http.HandlerFunc(s.messagesPage)},
		{"GET /ui/messages.csv", http.HandlerFunc(s.messagesCSV)},
		{"GET /ui/messages/{id}", http.HandlerFunc(s.messagePage)},
		{"GET /ui/messages/{id}/payload", http.HandlerFunc(s.messagePayload)},
		{"POST /ui/messages/{id}/redispatch", http.HandlerFunc(s.redispatchMessage)},
		{"POST /ui/messages/{id}/deliveries/{delivery_id}/redeliver", http.HandlerFunc(s.redeliverMessage)},
	}
}

// deliveryRow is a delivery as the detail page shows it.
type deliveryRow struct {
	persistence.Delivery
	Badge string // the badge-* class for its state
	// Redeliverable mirrors the store's rule: only these states can be requeued by hand.
	Redeliverable bool
	// SessionPlace says where a delivery of an ordered session stands in it.
	SessionPlace string
	// DownstreamBadge is the badge-* class of its downstream status, if it has one.
	DownstreamBadge string
}

func deliveryBadge(st persistence.DeliveryState) string {
	switch st {
	case persistence.DeliveryDelivered:
		return "success"
	case persistence.DeliveryFailed, persistence.DeliveryStalled:
		return "danger"
	case persistence.DeliveryRetrying, persistence.DeliveryParked, persistence.DeliveryPaused:
		return "warning"
	case persistence.DeliverySkipped:
		return "neutral"
	}
	return "info"
}

// downstreamBadge colours what the receiving side said: a failure, a success, or news.
func downstreamBadge(d *persistence.Downstream) string {
	switch {
	case d == nil:
		return ""
	case persistence.DownstreamFailure(d.Status):
		return "danger"
	case d.Final:
		return "success"
	}
	return "info"
}

func redeliverable(st persistence.DeliveryState) bool {
	switch st {
	case persistence.DeliveryFailed, persistence.DeliveryStalled, persistence.DeliveryRetrying, persistence.DeliveryDelivered:
		return true
	}
	return false
}

type messageData struct {
	Message persistence.Message
	// Direction and Partner (its name, PartnerName its display name) head the page with
	// the verdict; both empty between organizations.
	Direction   persistence.Direction
	Partner     persistence.PartyName
	PartnerName string
	Verdict     verdict
	Deliveries  []deliveryRow
	History     []persistence.HistoryEntry
	Payloads    []persistence.Payload
	// Protocols are the modules' panels, the AS2 section among them.
	Protocols []protocolPanel
	// Actions is false when the gateway offers no operator actions; the buttons are hidden.
	Actions bool
	// Erase offers an administrator the erasure of a message not erased yet.
	Erase     bool
	CSRFToken string
	// Pruned is what retention removed of the message, nil when nothing.
	Pruned *persistence.Pruned
}

// messagePage shows one message with its deliveries, history and payloads.
func (s *Server) messagePage(w http.ResponseWriter, r *http.Request) {
	id, ok := messagePathID(r, "id")
	if !ok {
		s.notFound(w, r)
		return
	}
	d, err := s.messageDetail(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "message", pageData{Title: fmt.Sprintf("Message %d", id), Data: d})
}

// messageDetail reads everything the detail page shows of message id.
func (s *Server) messageDetail(ctx context.Context, id int64) (messageData, error) {
	m, err := s.store.GetMessage(ctx, id)
	if err != nil {
		return messageData{}, err
	}
	d := messageData{Message: m, Actions: s.actions != nil}
	if sess, ok := session.FromContext(ctx); ok {
		d.CSRFToken = sess.CSRFToken
		d.Erase = s.erasure != nil && m.ErasedAt == nil && sess.User.Role == persistence.RoleAdmin
	}
	ds, err := s.store.ListDeliveries(ctx, id)
	if err != nil {
		return d, err
	}
	if d.History, err = s.store.ListHistory(ctx, id); err != nil {
		return d, err
	}
	persistence.AttachDownstream(ds, d.History)
	for _, dl := range ds {
		d.Deliveries = append(d.Deliveries, deliveryRow{Delivery: dl, Badge: deliveryBadge(dl.State),
			Redeliverable: redeliverable(dl.State) && m.ErasedAt == nil, SessionPlace: sessionPlace(dl), DownstreamBadge: downstreamBadge(dl.Downstream)})
	}
	if d.Payloads, err = s.store.ListPayloads(ctx, id); err != nil {
		return d, err
	}
	if d.Pruned, err = s.prunedOf(ctx, id); err != nil {
		return d, err
	}
	if d.Protocols, err = s.messagePanels(ctx, id); err != nil {
		return d, err
	}
	if d.Direction, d.Partner, d.PartnerName, err = s.messageEnds(ctx, m); err != nil {
		return d, err
	}
	in := verdictInput{Message: m, Direction: d.Direction, Partner: d.PartnerName, Deliveries: ds, Zone: s.zone.location()}
	facts, ok, err := s.messageFacts(ctx, id)
	if err != nil {
		return d, err
	}
	if ok {
		in.Facts = &facts
	}
	d.Verdict = verdictOf(in)
	return d, nil
}

// messageActor names the signed-in user in history lines and the audit log.
func messageActor(r *http.Request) string {
	if sess, ok := session.FromContext(r.Context()); ok {
		return "user:" + string(sess.User.Name)
	}
	return "user:"
}

// redispatchMessage matches the routes again for a message and requeues it, once
// confirmed.
func (s *Server) redispatchMessage(w http.ResponseWriter, r *http.Request) {
	s.confirmedAction(w, r, s.actions != nil, func(ctx context.Context, id int64) error {
		_, err := s.actions.Redispatch(ctx, id, messageActor(r))
		return err
	}, "message-redispatched", "message-redispatch-refused")
}

// confirmedAction runs act on the message of the path once the form carries its
// confirmation, and answers as afterAction does; available false means the gateway
// offers no such action.
func (s *Server) confirmedAction(w http.ResponseWriter, r *http.Request, available bool, act func(ctx context.Context, id int64) error, done, refused string) {
	if !available {
		http.Error(w, "this action is not available", http.StatusServiceUnavailable)
		return
	}
	id, ok := messagePathID(r, "id")
	if !ok {
		s.notFound(w, r)
		return
	}
	if !confirmed(r) {
		toConfirm(w, r)
		return
	}
	s.afterAction(w, r, id, act(r.Context(), id), done, refused)
}

// redeliverMessage requeues one delivery of a message, once confirmed, sent as the form's
// resend mode says.
func (s *Server) redeliverMessage(w http.ResponseWriter, r *http.Request) {
	if s.actions == nil {
		http.Error(w, "message actions are not available", http.StatusServiceUnavailable)
		return
	}
	id, ok := messagePathID(r, "id")
	did, ok2 := messagePathID(r, "delivery_id")
	if !ok || !ok2 {
		s.notFound(w, r)
		return
	}
	if !confirmed(r) {
		toConfirm(w, r)
		return
	}
	mode, err := resendMode(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The delivery must belong to the message in the URL, so a form cannot act on another
	// message's delivery behind the page it came from.
	dl, err := s.store.GetDelivery(r.Context(), did)
	if err == nil && dl.MessageID != id {
		err = persistence.ErrNotFound
	}
	if err == nil {
		_, err = s.actions.Redeliver(r.Context(), did, mode, messageActor(r))
	}
	s.afterAction(w, r, id, err, "message-redelivered", "message-redeliver-refused")
}

// afterAction answers an action: back to the detail with a flash saying how it went.
func (s *Server) afterAction(w http.ResponseWriter, r *http.Request, id int64, err error, done, refused string) {
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		s.notFound(w, r)
		return
	case errors.Is(err, persistence.ErrConflict):
		setFlash(w, refused)
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		setFlash(w, done)
	}
	http.Redirect(w, r, "/ui/messages/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

// messagePayload streams one stored stage of a message as an attachment. The bytes are
// the partner's, never interpreted: octet-stream, nosniff, a sandboxing policy, and a
// file name made safe.
func (s *Server) messagePayload(w http.ResponseWriter, r *http.Request) {
	id, ok := messagePathID(r, "id")
	if !ok {
		s.notFound(w, r)
		return
	}
	stage := persistence.PayloadUnpacked
	if v := r.URL.Query().Get("stage"); v != "" {
		var err error
		if stage, err = persistence.ParsePayloadStage(v); err != nil {
			http.Error(w, "unknown payload stage", http.StatusBadRequest)
			return
		}
	}
	if s.payloads == nil {
		http.Error(w, "payload downloads are not available", http.StatusServiceUnavailable)
		return
	}
	ctx := r.Context()
	m, err := s.store.GetMessage(ctx, id)
	if err == nil && m.ErasedAt != nil {
		http.Error(w, fmt.Sprintf("Message %d was erased: its payloads were deleted.", id), http.StatusGone)
		return
	}
	var p persistence.Payload
	if err == nil {
		p, err = s.store.GetPayload(ctx, id, stage)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := s.payloads.Open(ctx, p.Key)
	if err != nil {
		s.fail(w, r, fmt.Errorf("open payload %s of message %d: %w", stage, id, err))
		return
	}
	defer body.Close()

	download.Send(w, r, s.log, m, stage, p.Size, body)
}

// messagePathID reads a positive integer path value; anything else names no record.
func messagePathID(r *http.Request, name string) (int64, bool) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	return n, err == nil && n > 0
}
