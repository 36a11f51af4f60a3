package ui

import (
	"context"
	"errors"
	"net/http"
	"time"

	"wharf/internal/persistence"
)

var _ = registerPages(nil, (*Server).messagesLiveRoutes)

func (s *Server) messagesLiveRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/live/messages", http.HandlerFunc(s.messagesLive)},
		{"GET /ui/live/messages/{id}", http.HandlerFunc(s.messageLive)},
	}
}

const (
	// messagesEvery is the least time between two live renders of the message list.
	messagesEvery = time.Second
	// messageEvery is the least time between two live renders of one message's detail.
	messageEvery = 250 * time.Millisecond
)

// messagesLive streams the list's rows, for the same filters and page as the list, each
// time any message changes: a new or changed message may enter or leave the page.
func (s *Server) messagesLive(w http.ResponseWriter, r *http.Request) {
	form, f := parseMessageFilter(r.URL.Query())
	if len(form.Errors) > 0 {
		http.Error(w, "invalid filters", http.StatusBadRequest)
		return
	}
	s.serveLive(w, r, liveStream{messages: true, every: messagesEvery,
		render: func(ctx context.Context, c changes) ([]sseEvent, error) {
			if !c.anyMessage() {
				return nil, nil
			}
			d := s.newMessagesData(form)
			if err := s.listMessages(ctx, &d, f); err != nil {
				return nil, err
			}
			html, err := s.fragment("messages", "message-results", d)
			if err != nil {
				return nil, err
			}
			return []sseEvent{{Name: "results", Data: html}}, nil
		}})
}

// messageLive streams the parts of one message's detail that change: its information
// (status), deliveries (with the redeliver buttons), payloads, protocol panels and
// history.
func (s *Server) messageLive(w http.ResponseWriter, r *http.Request) {
	id, ok := messagePathID(r, "id")
	if !ok {
		s.notFound(w, r)
		return
	}
	if _, err := s.store.GetMessage(r.Context(), id); errors.Is(err, persistence.ErrNotFound) {
		s.notFound(w, r)
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	s.serveLive(w, r, liveStream{messages: true, every: messageEvery,
		render: func(ctx context.Context, c changes) ([]sseEvent, error) {
			if !c.message(id) {
				return nil, nil
			}
			d, err := s.messageDetail(ctx, id)
			if err != nil {
				return nil, err
			}
			var evs []sseEvent
			for _, part := range []struct{ event, tmpl string }{
				{"info", "message-info"}, {"deliveries", "message-deliveries"}, {"payloads", "message-payloads"},
				{"protocols", "message-protocols"}, {"history", "message-history"},
			} {
				html, err := s.fragment("message", part.tmpl, d)
				if err != nil {
					return nil, err
				}
				evs = append(evs, sseEvent{Name: part.event, Data: html})
			}
			return evs, nil
		}})
}
