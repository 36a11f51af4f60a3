package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"wharf/internal/download"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

const (
	// messagesPageSize is the number of rows on one page of the message list.
	messagesPageSize = 50
	// maxMessageQuery bounds the q filter, in characters, as the REST list does.
	maxMessageQuery = 200
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
		{"GET /ui/messages/{id}", http.HandlerFunc(s.messagePage)},
		{"GET /ui/messages/{id}/payload", http.HandlerFunc(s.messagePayload)},
		{"POST /ui/messages/{id}/redispatch", http.HandlerFunc(s.redispatchMessage)},
		{"POST /ui/messages/{id}/deliveries/{delivery_id}/redeliver", http.HandlerFunc(s.redeliverMessage)},
	}
}

// messageFilterForm is the list's filter form as typed, and why a field was refused.
type messageFilterForm struct {
	Status, From, To, Source, Q string
	Offset                      int
	Errors                      map[string]string
}

// parseMessageFilter reads the list's filters with the domain parsers, so the page admits
// exactly what the REST list admits; unknown parameters are ignored, as a browser adds none.
func parseMessageFilter(q url.Values) (messageFilterForm, persistence.MessageFilter) {
	form := messageFilterForm{Status: q.Get("status"), From: q.Get("from"), To: q.Get("to"),
		Source: q.Get("source"), Q: q.Get("q"), Errors: map[string]string{}}
	f := persistence.MessageFilter{Q: form.Q, ListOptions: persistence.ListOptions{Limit: messagesPageSize}}
	var err error
	if form.Status != "" {
		if f.Status, err = persistence.ParseMessageStatus(form.Status); err != nil {
			form.Errors["status"] = "Choose a status from the list."
		}
	}
	if form.From != "" {
		if f.From, err = persistence.ParsePartyName(form.From); err != nil {
			form.Errors["from"] = "A party name is lower case letters, digits, - and _."
		}
	}
	if form.To != "" {
		if f.To, err = persistence.ParsePartyName(form.To); err != nil {
			form.Errors["to"] = "A party name is lower case letters, digits, - and _."
		}
	}
	if form.Source != "" {
		if f.Source, err = persistence.ParseInstanceName(form.Source); err != nil {
			form.Errors["source"] = "An instance name is lower case letters, digits, - and _."
		}
	}
	if !utf8.ValidString(form.Q) || utf8.RuneCountInString(form.Q) > maxMessageQuery {
		form.Errors["q"] = fmt.Sprintf("Search text is at most %d characters.", maxMessageQuery)
	}
	form.Offset = pageOffset(q, form.Errors)
	f.Offset = form.Offset
	return form, f
}

// url is the list page with these filters at offset; empty filters are left out so the
// links stay short.
func (form messageFilterForm) url(offset int) string {
	v := url.Values{}
	for _, p := range []struct{ name, value string }{{"status", form.Status}, {"from", form.From},
		{"to", form.To}, {"source", form.Source}, {"q", form.Q}} {
		if p.value != "" {
			v.Set(p.name, p.value)
		}
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if len(v) == 0 {
		return "/ui/messages"
	}
	return "/ui/messages?" + v.Encode()
}

type messagesData struct {
	Filter   messageFilterForm
	Statuses []persistence.MessageStatus
	Messages []persistence.Message
	Pager
	// LiveURL streams this page's rows again as messages change, with the same filters.
	LiveURL string
}

// messagesPage lists messages newest first. Refused filters answer 400 with the form and
// its errors and no rows, rather than a list that silently ignores what was asked.
func (s *Server) messagesPage(w http.ResponseWriter, r *http.Request) {
	form, f := parseMessageFilter(r.URL.Query())
	d := messagesData{Filter: form, Statuses: persistence.AllMessageStatuses}
	s.renderList(w, r, "messages", "Messages", &d, len(form.Errors) > 0, func() error { return s.listMessages(r.Context(), &d, f) })
}

// listMessages fills d's rows and page links for the filter f of d.Filter.
func (s *Server) listMessages(ctx context.Context, d *messagesData, f persistence.MessageFilter) error {
	form := d.Filter
	msgs, total, err := s.store.ListMessages(ctx, f)
	if err != nil {
		return err
	}
	d.Messages = msgs
	d.Pager = newPager(form.Offset, len(msgs), total, messagesPageSize, form.url)
	d.LiveURL = "/ui/live" + strings.TrimPrefix(form.url(form.Offset), "/ui")
	return nil
}

// deliveryRow is a delivery as the detail page shows it.
type deliveryRow struct {
	persistence.Delivery
	Badge string // the badge-* class for its state
	// Redeliverable mirrors the store's rule: only these states can be requeued by hand.
	Redeliverable bool
	// SessionPlace says where a delivery of an ordered session stands in it.
	SessionPlace string
}

func deliveryBadge(st persistence.DeliveryState) string {
	switch st {
	case persistence.DeliveryDelivered:
		return "success"
	case persistence.DeliveryFailed, persistence.DeliveryStalled:
		return "danger"
	case persistence.DeliveryRetrying, persistence.DeliveryParked:
		return "warning"
	case persistence.DeliverySkipped:
		return "neutral"
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
	Message    persistence.Message
	Deliveries []deliveryRow
	History    []persistence.HistoryEntry
	Payloads   []persistence.Payload
	// Protocols are the modules' panels, the AS2 section among them.
	Protocols []protocolPanel
	// Actions is false when the gateway offers no operator actions; the buttons are hidden.
	Actions   bool
	CSRFToken string
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
	}
	ds, err := s.store.ListDeliveries(ctx, id)
	if err != nil {
		return d, err
	}
	for _, dl := range ds {
		d.Deliveries = append(d.Deliveries, deliveryRow{Delivery: dl, Badge: deliveryBadge(dl.State),
			Redeliverable: redeliverable(dl.State), SessionPlace: sessionPlace(dl)})
	}
	if d.History, err = s.store.ListHistory(ctx, id); err != nil {
		return d, err
	}
	if d.Payloads, err = s.store.ListPayloads(ctx, id); err != nil {
		return d, err
	}
	if d.Protocols, err = s.messagePanels(ctx, id); err != nil {
		return d, err
	}
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
	if s.actions == nil {
		http.Error(w, "message actions are not available", http.StatusServiceUnavailable)
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
	_, err := s.actions.Redispatch(r.Context(), id, messageActor(r))
	s.afterAction(w, r, id, err, "message-redispatched", "message-redispatch-refused")
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
