// Package static holds the web UI's stylesheet, script and vendored htmx,
// embedded in the binary and served under checksum URLs.
//
// A file's URL carries the first 12 hex digits of the SHA-256 of its content
// as the query parameter v: /ui/static/app.css?v=0123456789ab. The path stays
// the file's name, so relative references keep working and a stale URL still
// finds the current file; a request whose v equals the current version is
// cacheable for a year as immutable, any other request is served with
// no-cache, so a browser never keeps an old file under a new page.
package static

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is the URL path under which Handler serves the files.
const Prefix = "/ui/static/"

// versionLength is the number of hex digits of the content hash in a URL.
const versionLength = 12

//go:embed app.css app.js vendor
var files embed.FS

type file struct {
	data        []byte
	hash        string // full hex SHA-256
	version     string // first versionLength hex digits of hash
	contentType string
}

// catalogue maps each embedded file's slash-separated name relative to this
// directory ("app.css", "vendor/htmx-2.0.11.min.js") to its content and hash.
var catalogue = mustLoad(files)

func mustLoad(fsys fs.FS) map[string]file {
	c, err := load(fsys)
	if err != nil {
		panic(fmt.Sprintf("static: %v", err))
	}
	return c
}

func load(fsys fs.FS) (map[string]file, error) {
	c := make(map[string]file)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		h := contentHash(data)
		c[name] = file{
			data:        data,
			hash:        h,
			version:     h[:versionLength],
			contentType: contentType(name),
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load embedded files: %w", err)
	}
	return c, nil
}

// contentHash returns the hex SHA-256 of data.
func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// contentType returns the media type a file is served with. The types are
// fixed here rather than taken from the system's MIME tables, so the headers
// do not depend on the host. Every embedded file is text; files other than
// stylesheets and scripts are the vendored licences, README and checksums.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	default:
		return "text/plain; charset=utf-8"
	}
}

// URL returns the versioned URL of the embedded file name, for example
// URL("app.css") = "/ui/static/app.css?v=0123456789ab". Names are fixed in
// templates, so an unknown name is a programming error and URL panics; a
// template test that renders every page catches it before release.
func URL(name string) string {
	f, ok := catalogue[name]
	if !ok {
		panic(fmt.Sprintf("static: no embedded file %q", name))
	}
	return Prefix + name + "?v=" + f.version
}

// Handler serves the embedded files under Prefix to GET and HEAD requests.
// Unknown names and directories are 404.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	f, ok := catalogue[name]
	if !ok {
		http.NotFound(w, r)
		return
	}

	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", `"`+f.hash+`"`)
	if r.URL.Query().Get("v") == f.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	// ServeContent answers If-None-Match against the ETag, Range and HEAD.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}
