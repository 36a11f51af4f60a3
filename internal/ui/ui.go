// Package ui serves the web UI under /ui/: server-rendered pages, the set-up
// link that gives a new user a password and TOTP, sign-in and sign-out.
package ui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/auth/oidc"
	"wharf/internal/auth/password"
	"wharf/internal/auth/throttle"
	"wharf/internal/httproute"
	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
	"wharf/internal/ui/static"
)

// maxBody bounds every request body; the UI's forms are a few fields long.
const maxBody = 64 << 10

// Sealer encrypts small values under the secrets master key: TOTP secrets at
// rest, and the state a form carries between two requests.
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Deps are what the UI needs from the gateway.
type Deps struct {
	Store    persistence.Store
	Sessions *session.Manager
	Sealer   interface {
		Seal([]byte) ([]byte, error)
		Open([]byte) ([]byte, error)
	}
	Logger *slog.Logger
	Issuer string           // TOTP issuer shown in authenticator apps, e.g. "Wharf"
	Now    func() time.Time // nil: time.Now
	// Actions are the operator actions that also wake the targets concerned; nil
	// leaves the pages that need them answering 503.
	Actions Actions
	// DeadLetters acts on many deliveries at once; nil leaves the dead letters' actions
	// answering 503.
	DeadLetters DeadLetterActions
	// Payloads opens stored payload blobs for download.
	Payloads Payloads
	// PartyReferences are the modules whose records keep a party from being deleted.
	PartyReferences []module.PartyReferences
	// Services runs the plugin instances; nil leaves the services page answering 503.
	Services ServiceControl
	// Processes are the installation's processes by their heartbeats, for the services
	// page; nil leaves the list out.
	Processes Processes
	// Ingest stores and dispatches a message sent by hand; nil leaves the send page
	// answering 503.
	Ingest module.Ingester
	// SettingsChanged tells the gateway that settings changed, so they apply at once.
	SettingsChanged func(context.Context)
	// PublicURL is the gateway's base URL (no trailing slash), for the set-up links the
	// users page shows; empty takes the request's scheme and host.
	PublicURL string
	// Events announces changed messages for the live pages; nil leaves them static.
	Events MessageEvents
	// Logs is the process's recent log records for the logs page; nil leaves it empty.
	Logs *logging.Ring
	// ProcessLogs reads other processes' log rings over the bus, for the logs page's
	// process selector; nil shows only this process.
	ProcessLogs ProcessLogs
	// Panels are the modules' parts of a message's detail (the AS2 section), by module
	// name.
	Panels map[string]module.MessagePanels
	// PartyPanels are the modules with a part of an organization's or partner's page.
	PartyPanels []module.PartyPanels
	// Indexes are the modules whose messages carry a protocol identity (the AS2
	// Message-ID): the message list shows it with the receipt and searches by it.
	Indexes []module.MessageIndex
	// Facters read a message's protocol records for the verdict at the top of its page.
	Facters []module.MessageFacter
	// OIDC signs users in through identity providers; nil offers no single sign-on.
	OIDC *oidc.Manager
	// Notifications is the notifier module's log and alerts; nil (a build without the
	// module) leaves the Notifications page answering 503 and the dashboard without its
	// alerts card.
	Notifications alert.Log
	// EventWebhooks is the event-webhook module's runtime; nil (a build without the
	// module) leaves the Event webhooks pages answering 503.
	EventWebhooks EventWebhooks
	// NotificationEvents announces changed rows of the notification log for the live
	// pages; nil leaves them static.
	NotificationEvents NotificationEvents
	// Storage reports and tests the payload storage on the settings page; nil leaves
	// the page without its storage card.
	Storage Storage
	// Erasure erases messages' content (erasure.go); nil hides the erasure actions.
	Erasure Erasure
}

// Actions are the operator actions on messages the UI offers.
type Actions interface {
	Redispatch(ctx context.Context, messageID int64, actor string) ([]persistence.Delivery, error)
	Redeliver(ctx context.Context, deliveryID int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error)
	// RoutesChanged reloads the route cache after a route or party changed.
	RoutesChanged(ctx context.Context)
}

// Payloads opens stored payload blobs by persistence.Payload.Key.
type Payloads interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Server holds the UI's dependencies and parsed templates.
type Server struct {
	store     persistence.Store
	sessions  *session.Manager
	sealer    Sealer
	log       *slog.Logger
	issuer    string
	now       func() time.Time
	pages     map[string]*template.Template
	actions   Actions
	payloads  Payloads
	partyRefs []module.PartyReferences
	services  ServiceControl
	processes Processes

	// byAccount and byAddress slow down repeated sign-in failures; see package throttle.
	byAccount *throttle.Limiter
	byAddress *throttle.Limiter

	// dummyHash is verified against when the name is unknown, so a refusal takes
	// as long whether or not the account exists.
	dummyHash func() string

	ingest          module.Ingester
	settingsChanged func(context.Context)
	publicURL       string
	sameOrigin      func(http.Handler) http.Handler // see session.SameOrigin
	live            *hub
	logs            *logging.Ring
	processLogs     ProcessLogs
	panels          map[string]module.MessagePanels
	partyPanels     []module.PartyPanels
	indexes         []module.MessageIndex
	facters         []module.MessageFacter
	oidc            *oidc.Manager
	notifications   alert.Log
	eventWebhooks   EventWebhooks
	noteHub         *hub // fans notification log changes out to the live streams
	// zone is the display_timezone setting's zone, in which pages show times.
	zone *displayZone

	// deadLetters is Deps.DeadLetters.
	deadLetters DeadLetterActions

	storage Storage
	erasure Erasure
}

// New checks d and parses the templates.
func New(d Deps) (*Server, error) {
	if d.Store == nil || d.Sessions == nil || d.Sealer == nil {
		return nil, errors.New("ui: store, session manager and sealer are required")
	}
	zone := newDisplayZone()
	pages, err := parsePages(zone)
	if err != nil {
		return nil, err
	}
	s := &Server{
		zone:  zone,
		store: d.Store, sessions: d.Sessions, sealer: d.Sealer, log: d.Logger,
		issuer: d.Issuer, now: d.Now, pages: pages, actions: d.Actions, payloads: d.Payloads, partyRefs: d.PartyReferences,
		byAccount: throttle.New(throttle.Config{}),
		byAddress: throttle.New(throttle.Config{}),
		dummyHash: sync.OnceValue(func() string {
			h, _ := password.Hash("wharf-unknown-user-placeholder")
			return h
		}),
	}
	s.services = d.Services
	s.processes = d.Processes
	s.storage = d.Storage
	s.erasure = d.Erasure
	s.ingest, s.settingsChanged, s.publicURL = d.Ingest, d.SettingsChanged, d.PublicURL
	if s.sameOrigin, err = session.SameOrigin(d.PublicURL); err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	s.live, s.logs, s.panels = newHub(), d.Logs, d.Panels
	s.processLogs = d.ProcessLogs
	if d.Events != nil {
		cancel, err := d.Events.SubscribeMessages(s.live.publish)
		if err != nil {
			return nil, fmt.Errorf("ui: follow message events: %w", err)
		}
		s.live.cancel = cancel
	}
	s.partyPanels, s.indexes, s.facters = d.PartyPanels, d.Indexes, d.Facters
	s.deadLetters = d.DeadLetters
	s.oidc = d.OIDC
	s.notifications, s.noteHub = d.Notifications, newHub()
	s.eventWebhooks = d.EventWebhooks
	if d.NotificationEvents != nil {
		cancel, err := d.NotificationEvents.SubscribeNotifications(func() { s.noteHub.publish(0) })
		if err != nil {
			s.live.close()
			return nil, fmt.Errorf("ui: follow notification events: %w", err)
		}
		s.noteHub.cancel = cancel
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.issuer == "" {
		s.issuer = "Wharf"
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Handler serves everything under /ui/; mount it at "/ui/".
func (s *Server) Handler() http.Handler {
	pages := http.NewServeMux()
	pages.HandleFunc("GET /ui/setup/{token}", s.setupForm)
	pages.HandleFunc("POST /ui/setup/{token}", s.setupSubmit)
	pages.HandleFunc("GET /ui/sign-in", s.signInForm)
	pages.HandleFunc("POST /ui/sign-in", s.signInSubmit)
	pages.HandleFunc("GET /ui/oidc/start/{name}", s.oidcStart)
	pages.HandleFunc("GET "+oidcCallbackURL, s.oidcCallback)
	pages.Handle("POST /ui/sign-out", s.sessions.Require(session.CSRF(http.HandlerFunc(s.signOut))))
	pages.Handle("GET /ui/{$}", s.sessions.Require(http.HandlerFunc(s.home)))
	routes := s.pageRoutes()
	for _, rt := range routes {
		h := s.sessions.Require(rt.handler)
		if strings.HasPrefix(rt.pattern, "GET "+livePrefix) {
			h = s.sessions.RequireWithoutRenewal(rt.handler)
		}
		if !strings.HasPrefix(rt.pattern, "GET ") {
			h = s.sessions.Require(session.CSRF(rt.handler))
		}
		pages.Handle(rt.pattern, h)
	}
	pages.HandleFunc("/ui/", s.notFound)
	// Every state-changing request, signed in or not, must come from this site's pages.
	guarded := s.sameOrigin(httproute.Note(pages))

	mux := http.NewServeMux()
	mux.Handle(static.Prefix, static.Handler())
	mux.Handle("/ui/", session.SecurityHeaders(s.limitBody(guarded)))
	// A route that takes more than maxBody (an upload) gets its own limit, before routing.
	for _, rt := range routes {
		if bl, ok := rt.handler.(bodyLimiter); ok {
			mux.Handle(rt.pattern, session.SecurityHeaders(session.LimitBody(bl.BodyLimit())(guarded)))
		}
	}
	return httproute.Note(mux)
}

// partyReferenced refuses with ErrInUse while a module's record (an AS2 profile) names
// the party, as the REST API does.
func (s *Server) partyReferenced(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) error {
	for _, m := range s.partyRefs {
		refs, err := m.PartyReferences(ctx, kind, name)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			return fmt.Errorf("%s %s is named by %s: %w", kind, name, strings.Join(refs, ", "), persistence.ErrInUse)
		}
	}
	return nil
}

// livePrefix starts the paths of the live streams, which do not renew the session: see
// session.Manager.RequireWithoutRenewal.
const livePrefix = "/ui/live/"

// pageRoute is one signed-in page or form action; every one requires a session, and every
// one that is not a GET also the session's CSRF token.
type pageRoute struct {
	pattern string
	handler http.Handler
}

// bodyLimiter is a page route's handler whose requests may be larger than maxBody.
type bodyLimiter interface {
	BodyLimit() int64
}

// withBodyLimit lets h's requests carry up to n bytes.
func withBodyLimit(n int64, h http.Handler) http.Handler { return limitedHandler{h, n} }

type limitedHandler struct {
	http.Handler
	limit int64
}

func (l limitedHandler) BodyLimit() int64 { return l.limit }

// pageRoutes lists the operating pages of every registered group.
func (s *Server) pageRoutes() []pageRoute {
	var out []pageRoute
	for _, group := range routeGroups {
		out = append(out, group(s)...)
	}
	return out
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusNotFound, "not_found", pageData{Title: "Not found"})
}
