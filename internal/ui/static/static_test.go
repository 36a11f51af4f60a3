package static

import (
	"bufio"
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"unicode/utf8"
)

func TestVendoredFilesMatchChecksums(t *testing.T) {
	sums, err := fs.ReadFile(files, "vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := make(map[string]bool)
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not \"<hash>  <name>\"", sc.Text())
		}
		listed[name] = true
		data, err := fs.ReadFile(files, "vendor/"+name)
		if err != nil {
			t.Errorf("SHA256SUMS lists %s: %v", name, err)
			continue
		}
		if got := contentHash(data); got != want {
			t.Errorf("vendor/%s: sha256 %s, SHA256SUMS says %s", name, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	entries, err := fs.ReadDir(files, "vendor")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch name := e.Name(); {
		case name == "SHA256SUMS" || name == "README":
		case !listed[name]:
			t.Errorf("vendor/%s is not listed in SHA256SUMS", name)
		}
	}
	for _, name := range []string{"htmx-2.0.11.min.js", "htmx-ext-sse-2.2.4.js", "LICENSE.htmx.org", "LICENSE.htmx-ext-sse"} {
		if !listed[name] {
			t.Errorf("SHA256SUMS does not list %s", name)
		}
	}
}

func TestEmbeddedFilesAreText(t *testing.T) {
	for name, f := range catalogue {
		if !utf8.Valid(f.data) {
			t.Errorf("%s is not UTF-8 text but is served as %s", name, f.contentType)
		}
	}
}

func TestHandlerServesEveryFile(t *testing.T) {
	wantTypes := map[string]string{
		"app.css":                      "text/css; charset=utf-8",
		"app.js":                       "text/javascript; charset=utf-8",
		"vendor/htmx-2.0.11.min.js":    "text/javascript; charset=utf-8",
		"vendor/htmx-ext-sse-2.2.4.js": "text/javascript; charset=utf-8",
		"vendor/LICENSE.htmx.org":      "text/plain; charset=utf-8",
	}
	for name, want := range wantTypes {
		if _, ok := catalogue[name]; !ok {
			t.Errorf("%s is not embedded", name)
			continue
		}
		if got := catalogue[name].contentType; got != want {
			t.Errorf("%s: content type %q, want %q", name, got, want)
		}
	}

	h := Handler()
	for name, f := range catalogue {
		t.Run(name, func(t *testing.T) {
			// The versioned URL is cacheable for good.
			rec := get(t, h, URL(name))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: status %d", URL(name), rec.Code)
			}
			if !bytes.Equal(rec.Body.Bytes(), f.data) {
				t.Errorf("GET %s: body differs from the embedded file", URL(name))
			}
			checkHeader(t, rec, "Content-Type", f.contentType)
			checkHeader(t, rec, "X-Content-Type-Options", "nosniff")
			checkHeader(t, rec, "Cache-Control", "public, max-age=31536000, immutable")

			// Without a version, or with another one, it must be revalidated.
			for _, target := range []string{Prefix + name, Prefix + name + "?v=000000000000"} {
				rec := get(t, h, target)
				if rec.Code != http.StatusOK {
					t.Fatalf("GET %s: status %d", target, rec.Code)
				}
				checkHeader(t, rec, "Cache-Control", "no-cache")
				checkHeader(t, rec, "Content-Type", f.contentType)
				checkHeader(t, rec, "X-Content-Type-Options", "nosniff")
			}
		})
	}
}

func TestHandlerRevalidates(t *testing.T) {
	h := Handler()
	first := get(t, h, URL("app.css"))
	etag := first.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req := httptest.NewRequest(http.MethodGet, Prefix+"app.css", nil)
	req.Header.Set("If-None-Match", etag)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("conditional GET: status %d, want 304", rec.Code)
	}
}

func TestHandlerNotFound(t *testing.T) {
	h := Handler()
	for _, target := range []string{
		Prefix + "missing.css",
		Prefix,
		Prefix + "vendor",
		Prefix + "vendor/",
		Prefix + "static.go",
		Prefix + "static_test.go",
		Prefix + "../static/app.css",
		Prefix + "vendor/../app.css",
		"/elsewhere/app.css",
	} {
		if rec := get(t, h, target); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, rec.Code)
		}
	}
}

func TestHandlerRefusesWrites(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, URL("app.css"), nil)
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", rec.Code)
	}
}

func TestURL(t *testing.T) {
	got := URL("app.css")
	want := Prefix + "app.css?v=" + contentHash(catalogue["app.css"].data)[:12]
	if got != want {
		t.Errorf("URL(app.css) = %q, want %q", got, want)
	}
	if !regexp.MustCompile(`^/ui/static/app\.css\?v=[0-9a-f]{12}$`).MatchString(got) {
		t.Errorf("URL(app.css) = %q has the wrong form", got)
	}

	defer func() {
		if recover() == nil {
			t.Error("URL of an unknown file did not panic")
		}
	}()
	URL("missing.css")
}

func TestVersionFollowsContent(t *testing.T) {
	if contentHash([]byte("a{}")) == contentHash([]byte("b{}")) {
		t.Fatal("different contents hash alike")
	}
	if got, want := contentHash([]byte("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("contentHash(empty) = %s, want %s", got, want)
	}

	before, err := load(fstest.MapFS{"app.css": {Data: []byte("body{color:#000}")}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := load(fstest.MapFS{"app.css": {Data: []byte("body{color:#111}")}})
	if err != nil {
		t.Fatal(err)
	}
	if before["app.css"].version == after["app.css"].version {
		t.Error("changing a file's content kept its version")
	}
	if n := len(before["app.css"].version); n != versionLength {
		t.Errorf("version has %d digits, want %d", n, versionLength)
	}
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

func checkHeader(t *testing.T, rec *httptest.ResponseRecorder, key, want string) {
	t.Helper()
	if got := rec.Header().Get(key); got != want {
		t.Errorf("%s: %q, want %q", key, got, want)
	}
}
