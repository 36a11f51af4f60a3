package session

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"wharf/internal/persistence/db/dbtest"
)

// BenchmarkLoad is the check every signed-in request pays: open the cookie, look the
// session's record and user up in one query.
func BenchmarkLoad(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			s := dbtest.Open(b, d)
			u := newUser(b, s, "alice")
			m, err := NewManager(Config{Key: GenerateKey(), IdleTimeout: testIdle, AbsoluteTimeout: testAbsolute, Store: s})
			if err != nil {
				b.Fatal(err)
			}
			rec := httptest.NewRecorder()
			if _, err := m.Issue(rec, signInRequest(), u); err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
			req.AddCookie(rec.Result().Cookies()[0])
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Load(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
