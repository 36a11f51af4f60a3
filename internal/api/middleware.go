package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"wharf/internal/persistence"
)

// maxJSONBody bounds a JSON request body.
const maxJSONBody = 1 << 20

// requestInfo travels in a request's context: its id and, once authenticated, its actor.
type requestInfo struct {
	id    string
	actor string
	// role is the role of a user signed in with a provider's access token; empty for an
	// API token.
	role persistence.UserRole
	// scope is the target instance an API token is scoped to; empty when it is not.
	scope persistence.InstanceName
}

type requestInfoKey struct{}

func infoOf(ctx context.Context) *requestInfo {
	if ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{}
}

// requestID is the id of the request ctx belongs to.
func requestID(ctx context.Context) string { return infoOf(ctx).id }

// actor is who the history of a change names: token:<name>.
func actor(r *http.Request) string { return infoOf(r.Context()).actor }

// A request id from a proxy in front is kept when it looks like one, so logs join up.
var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{8,64}$`)

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// recorder remembers the status and size of a response for the access log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines).
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// withRequest gives every request an id (X-Request-Id), the headers every response
// carries, a last-resort recovery from panics, and one access log line. The line holds no
// header values and no query string, so no credential reaches the log.
func (s *Server) withRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !requestIDRE.MatchString(id) {
			id = newRequestID()
		}
		ri := &requestInfo{id: id}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
		h := w.Header()
		h.Set("X-Request-Id", id)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		rec := &recorder{ResponseWriter: w}

		defer func() {
			v := recover()
			if v != nil && v != http.ErrAbortHandler {
				s.log.ErrorContext(r.Context(), "panic serving request",
					"request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, &apiError{status: http.StatusInternalServerError, code: "INTERNAL",
						message: "internal error; the server log has the details under request id " + id})
				}
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			level := slog.LevelInfo
			if r.URL.Path == "/healthz" {
				level = slog.LevelDebug // load balancers ask every few seconds
			}
			s.log.LogAttrs(r.Context(), level, "http request",
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", time.Since(start)),
				slog.String("actor", ri.actor),
				slog.String("remote", r.RemoteAddr),
			)
			if v == http.ErrAbortHandler {
				panic(v) // the server cuts the connection without logging
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// requireJSON admits a body only as application/json and bounds its size. Without it no
// cross-site form can reach a state-changing route.
func (s *Server) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" || !utf8Charset(params) {
			s.fail(w, r, &apiError{status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE",
				message: "send the request body as Content-Type: application/json"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxJSONBody)
		next.ServeHTTP(w, r)
	})
}

func utf8Charset(params map[string]string) bool {
	cs, ok := params["charset"]
	return !ok || cs == "utf-8" || cs == "UTF-8"
}

// requireUpload admits a body only as multipart/form-data with an X-Requested-With
// header, which no cross-site form can set. The handler bounds the size.
func (s *Server) requireUpload(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
			s.fail(w, r, &apiError{status: http.StatusUnsupportedMediaType, code: "UNSUPPORTED_MEDIA_TYPE",
				message: "send an upload as Content-Type: multipart/form-data"})
			return
		}
		if r.Header.Get("X-Requested-With") == "" {
			s.fail(w, r, &apiError{status: http.StatusBadRequest, code: "INVALID_INPUT",
				message: "an upload needs the header X-Requested-With",
				details: map[string]any{"X-Requested-With": "required for uploads"}})
			return
		}
		next.ServeHTTP(w, r)
	})
}
