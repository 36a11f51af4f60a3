package ui

import (
	"fmt"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"

	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/settings"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"send"}, (*Server).sendRoutes)

// sendPath is the send-by-hand page; its form posts a file, so it has its own body limit.
const sendPath = "/ui/send"

// sendMemory is how much of an upload is held in memory; the rest spools to a temporary
// file, removed when the request ends. It equals what session.CSRF parses with.
const sendMemory = 32 << 20

func (s *Server) sendRoutes() []pageRoute {
	return []pageRoute{
		{"GET " + sendPath, http.HandlerFunc(s.sendPage)},
		{"POST " + sendPath, http.HandlerFunc(s.sendSubmit)},
	}
}

// limitBody bounds request bodies: the send form by the max_upload_mib setting plus the
// multipart overhead, as the REST API bounds its send; every other form by maxBody.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int64(maxBody)
		if r.Method == http.MethodPost && r.URL.Path == sendPath {
			limit, err := records.MaxUploadBytes(r.Context(), s.store)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			n = limit + records.UploadOverhead
		}
		session.LimitBody(n)(next).ServeHTTP(w, r)
	})
}

// sendForm is the send form: what was typed (never the file), and why it was refused.
type sendForm struct {
	From, To, Source, Target, FileName string
	Errors                             map[string]string
	// preselect fills in From, To and Target where there is one sensible choice.
	preselect bool
}

// partyChoices are the parties a select offers, those of the expected kind first, and a
// value typed (sent) that names none of them, kept so the refused form shows it.
type partyChoices struct {
	First, Second []persistence.Party
	Other         string
}

func choicesOf(first, second []persistence.Party, value string) partyChoices {
	c := partyChoices{First: first, Second: second, Other: value}
	for _, p := range append(slices.Clip(first), second...) {
		if string(p.Name) == value {
			c.Other = ""
		}
	}
	return c
}

// sendPage shows the form with From, To and Target chosen where there is only one
// sensible choice: the one organization, the one partner, the one target.
func (s *Server) sendPage(w http.ResponseWriter, r *http.Request) {
	s.renderSend(w, r, http.StatusOK, sendForm{preselect: true})
}

func (s *Server) renderSend(w http.ResponseWriter, r *http.Request, status int, f sendForm) {
	ctx := r.Context()
	orgs, partners, err := s.partiesByKind(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sources, targets, err := s.instancesByRole(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := records.MaxUploadBytes(ctx, s.store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if f.preselect {
		if len(orgs) == 1 {
			f.From = string(orgs[0].Name)
		}
		if len(partners) == 1 {
			f.To = string(partners[0].Name)
		}
		if len(targets) == 1 {
			f.Target = string(targets[0])
		}
	}
	s.render(w, r, status, "send", pageData{Title: "Send a message", Data: struct {
		Form      sendForm
		From, To  partyChoices
		Sources   []persistence.InstanceName
		Targets   []persistence.InstanceName
		LimitMiB  int64
		Available bool
		CSRFField string
		CSRFToken string
	}{f, choicesOf(orgs, partners, f.From), choicesOf(partners, orgs, f.To), sources, targets, limit >> 20,
		s.ingest != nil, session.CSRFField, sessionCSRFToken(r)}})
}

// sendSubmit sends the uploaded document by hand through the same rules as the REST API's
// multipart send, then shows the new message.
func (s *Server) sendSubmit(w http.ResponseWriter, r *http.Request) {
	if s.ingest == nil {
		http.Error(w, "sending by hand is not available", http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseMultipartForm(sendMemory); err != nil {
		badForm(w, err)
		return
	}
	defer r.MultipartForm.RemoveAll()
	f := sendForm{From: r.PostForm.Get("from"), To: r.PostForm.Get("to"), Source: r.PostForm.Get("source"),
		Target: r.PostForm.Get("target"), FileName: r.PostForm.Get("file_name")}
	limit, err := records.MaxUploadBytes(r.Context(), s.store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in := records.SendInput{From: f.From, To: f.To, Source: f.Source, Target: f.Target,
		FileName: f.FileName, Actor: messageActor(r)}
	file, header, err := r.FormFile("file")
	fileProblem := "Choose a file to send."
	if err == nil {
		defer file.Close()
		fileProblem = uploadProblem(header, limit)
		if in.FileName == "" {
			in.FileName = header.Filename
		}
	}
	if fileProblem != "" {
		// The other fields are checked too, so the form says at once all that is wrong.
		checked := records.CheckSend(r.Context(), s.store, in)
		errs, ok := sendErrors(checked, f.FileName)
		if !ok {
			s.fail(w, r, checked)
			return
		}
		errs["file"] = fileProblem
		f.Errors = errs
		s.renderSend(w, r, http.StatusUnprocessableEntity, f)
		return
	}
	in.Body = file
	m, err := records.SendMessage(r.Context(), s.store, s.ingest, in)
	if err != nil {
		errs, ok := sendErrors(err, f.FileName)
		if !ok {
			s.fail(w, r, err)
			return
		}
		f.Errors = errs
		s.renderSend(w, r, http.StatusUnprocessableEntity, f)
		return
	}
	s.log.InfoContext(r.Context(), "message sent by hand", "message_id", m.ID, "by", currentUser(r).Name)
	http.Redirect(w, r, "/ui/messages/"+strconv.FormatInt(m.ID, 10), http.StatusSeeOther)
}

// sendErrors are the field errors of a refused send, by form field; false when err is
// more than a refusal. A refused file name is the one typed, when there is one.
func sendErrors(err error, typedName string) (map[string]string, bool) {
	errs, ok := fieldMessages(err)
	if !ok {
		return nil, false
	}
	if msg, bad := errs["file"]; bad && typedName != "" {
		delete(errs, "file")
		errs["file_name"] = msg
	}
	for k, v := range errs {
		errs[k] = sentence(v)
	}
	return errs, true
}

// uploadProblem is the refusal of an empty or oversized file, as the REST API words it.
func uploadProblem(h *multipart.FileHeader, limit int64) string {
	switch {
	case h.Size == 0:
		return "The file is empty: a document needs at least one byte."
	case h.Size > limit:
		return fmt.Sprintf("The file is larger than the limit of %d MiB (setting “%s”).", limit>>20, settings.Label(settings.MaxUploadMiB))
	}
	return ""
}

// partySelect is a party select's options as the "send-parties" template draws them.
type partySelect struct {
	Choices                 partyChoices
	Value                   string
	FirstLabel, SecondLabel string
}

func newPartySelect(c partyChoices, value, firstLabel, secondLabel string) partySelect {
	return partySelect{Choices: c, Value: value, FirstLabel: firstLabel, SecondLabel: secondLabel}
}
