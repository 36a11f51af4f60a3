package ui

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"wharf/internal/module"
	"wharf/internal/msgexport"
	"wharf/internal/persistence"
)

type messagesData struct {
	Filter    messageFilterForm
	Statuses  []persistence.MessageStatus
	Partners  []persistence.Party
	PageSizes []int
	Messages  []messageRow
	// Refs is true when a module shows protocol identities (the AS2 columns).
	Refs bool
	Pager
	// LiveURL streams this page's rows again as messages change, with the same filters.
	LiveURL string
	// MaxExport is the most rows the CSV export holds.
	MaxExport int
}

// messageRow is a message as the list shows it.
type messageRow struct {
	persistence.Message
	Direction persistence.Direction
	// Partner is the partner end of the message; empty between organizations.
	Partner persistence.PartyName
	// Ref is the protocol's identity and receipt (the AS2 Message-ID).
	Ref module.MessageRef
}

// messagesPage lists messages newest first. Refused filters answer 400 with the form and
// its errors and no rows, rather than a list that silently ignores what was asked.
func (s *Server) messagesPage(w http.ResponseWriter, r *http.Request) {
	form, f := parseMessageFilter(r.URL.Query())
	d := s.newMessagesData(form)
	s.renderList(w, r, "messages", "Messages", &d, len(form.Errors) > 0, func() error { return s.listMessages(r.Context(), &d, f) })
}

func (s *Server) newMessagesData(form messageFilterForm) messagesData {
	return messagesData{Filter: form, Statuses: persistence.AllMessageStatuses, PageSizes: messagesPageSizes,
		Refs: len(s.indexes) > 0, MaxExport: msgexport.MaxRows}
}

// listMessages fills d's rows and page links for the filter f of d.Filter.
func (s *Server) listMessages(ctx context.Context, d *messagesData, f persistence.MessageFilter) error {
	form := d.Filter
	partners, err := msgexport.LoadPartners(ctx, s.store)
	if err != nil {
		return err
	}
	d.Partners = partners
	if err := s.findRef(ctx, form.Ref, &f); err != nil {
		return err
	}
	msgs, total, err := s.store.ListMessages(ctx, f)
	if err != nil {
		return err
	}
	refs, err := s.messageRefs(ctx, msgs)
	if err != nil {
		return err
	}
	dir := msgexport.DirectionsOf(partners)
	d.Messages = make([]messageRow, len(msgs))
	for i, m := range msgs {
		row := messageRow{Message: m, Direction: dir(m), Ref: refs[m.ID]}
		switch row.Direction {
		case persistence.DirectionInbound:
			row.Partner = m.From
		case persistence.DirectionOutbound:
			row.Partner = m.To
		}
		d.Messages[i] = row
	}
	d.Pager = newPager(form.Offset, len(msgs), total, form.Size, form.url)
	d.LiveURL = "/ui/live" + strings.TrimPrefix(form.url(form.Offset), "/ui")
	return nil
}

// findRef narrows f to the messages whose protocol identity is ref, as the modules find
// them; with no module to ask, nothing has one.
func (s *Server) findRef(ctx context.Context, ref string, f *persistence.MessageFilter) error {
	if ref == "" {
		return nil
	}
	f.IDs = []int64{}
	for _, ix := range s.indexes {
		ids, err := ix.FindMessages(ctx, ref)
		if err != nil {
			return fmt.Errorf("find messages by protocol id: %w", err)
		}
		f.IDs = append(f.IDs, ids...)
	}
	return nil
}

// messageRefs asks the modules for the protocol identities of msgs.
func (s *Server) messageRefs(ctx context.Context, msgs []persistence.Message) (map[int64]module.MessageRef, error) {
	out := map[int64]module.MessageRef{}
	if len(msgs) == 0 {
		return out, nil
	}
	ids := make([]int64, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	for _, ix := range s.indexes {
		refs, err := ix.MessageRefs(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("protocol ids of messages: %w", err)
		}
		for id, ref := range refs {
			out[id] = ref
		}
	}
	return out, nil
}

// messagesCSV exports the filtered list, every page of it up to msgexport.MaxRows. The
// filters are the list page's; refused ones answer 400 naming them.
func (s *Server) messagesCSV(w http.ResponseWriter, r *http.Request) {
	form, f := parseMessageFilter(r.URL.Query())
	delete(form.Errors, "offset")
	delete(form.Errors, "size")
	if len(form.Errors) > 0 {
		var msgs []string
		for _, name := range slices.Sorted(maps.Keys(form.Errors)) {
			msgs = append(msgs, name+": "+form.Errors[name])
		}
		http.Error(w, "invalid filters: "+strings.Join(msgs, "; "), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	partners, err := msgexport.LoadPartners(ctx, s.store)
	if err == nil {
		err = s.findRef(ctx, form.Ref, &f)
	}
	if err == nil {
		err = msgexport.Send(w, r, s.log, s.store, f, msgexport.DirectionsOf(partners))
	}
	if err != nil {
		s.fail(w, r, err)
	}
}
