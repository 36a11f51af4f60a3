package file

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

func TestSafeName(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct{ in, want string }{
		{"invoice.edi", "invoice.edi"},
		{`a<b>c:d"e|f?g*h`, "a_b_c_d_e_f_g_h"},
		{`dir/name\x`, "dir_name_x"},
		{"tab\there\x00nul", "tab_here_nul"},
		{"trailing. . ", "trailing"},
		{"...", "_"},
		{"..", "_"},
		{"", "_"},
		{"CON", "_CON"},
		{"con.txt", "_con.txt"},
		{"Aux.tar.gz", "_Aux.tar.gz"},
		{"nul", "_nul"},
		{"COM1.log", "_COM1.log"},
		{"lpt9", "_lpt9"},
		{"COM0", "COM0"},
		{"console", "console"},
		{"LPT10", "LPT10"},
		{"Übersicht – März.pdf", "Übersicht – März.pdf"},
		{".hidden", "_hidden"},
		{".wharf-tmp-x", "_wharf-tmp-x"},
		{"  .edi ", "_edi"},
		{"..profile", "_.profile"},
		{"  order.edi", "order.edi"},
		{". ", "_"},
		{long + ".xml", strings.Repeat("a", 254-len(".xml")) + ".xml"},
		{long, strings.Repeat("a", 254)},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 24 {
			name = name[:24] + "…"
		}
		t.Run(name, func(t *testing.T) {
			if got := SafeName(tt.in); got != tt.want {
				t.Errorf("SafeName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	// A multi-byte name is cut on a rune boundary.
	if got := SafeName(strings.Repeat("ü", 200)); len(got) > maxNameBytes || !strings.HasPrefix(got, "ü") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("cut of a multi-byte name: %d bytes, %q…", len(got), got[:8])
	}
}

func testMessage() persistence.Message {
	return persistence.Message{
		ID:               42,
		From:             "acme",
		To:               "local",
		OriginalFileName: "order.xml",
		CorrelationID:    "PO-1",
		CreatedAt:        time.Date(2026, 3, 1, 23, 30, 0, 0, time.FixedZone("x", -2*3600)),
	}
}

func TestRenderPath(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		edit    func(*persistence.Message)
		want    string
	}{
		{"default", DefaultWriterPattern, nil, "acme/order.xml"},
		{"every placeholder", "{date}/{to}/{from}/{basename}_{message_id}.{ext}", nil, "2026-03-02/local/acme/order_42.xml"},
		{"correlation id", "{correlation_id}/{original_filename}", nil, "PO-1/order.xml"},
		{"traversal in a value", "{correlation_id}/{original_filename}", func(m *persistence.Message) { m.CorrelationID = "../../etc" }, "_._.._etc/order.xml"},
		{"dot-dot value", "{correlation_id}/{original_filename}", func(m *persistence.Message) { m.CorrelationID = ".." }, "_/order.xml"},
		{"empty value", "{correlation_id}/{original_filename}", func(m *persistence.Message) { m.CorrelationID = "" }, "_/order.xml"},
		{"backslash value", "{correlation_id}", func(m *persistence.Message) { m.CorrelationID = `a\b` }, "a_b"},
		{"windows-unsafe value", "{correlation_id}.txt", func(m *persistence.Message) { m.CorrelationID = `what?<now>:"|*` }, "what__now_____.txt"},
		{"reserved party name", "{from}/{original_filename}", func(m *persistence.Message) { m.From = "con" }, "_con/order.xml"},
		{"reserved file name", "{original_filename}", func(m *persistence.Message) { m.OriginalFileName = "aux.txt" }, "_aux.txt"},
		{"trailing dot file name", "{original_filename}", func(m *persistence.Message) { m.OriginalFileName = "report. " }, "report"},
		{"no extension", "{basename}.{ext}", func(m *persistence.Message) { m.OriginalFileName = "README" }, "README"},
		{"dot file", "{basename}", func(m *persistence.Message) { m.OriginalFileName = ".profile" }, "_profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMessage()
			if tt.edit != nil {
				tt.edit(&m)
			}
			got, err := RenderPath(tt.pattern, m)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("RenderPath(%q) = %q, want %q", tt.pattern, got, tt.want)
			}
		})
	}
}

func TestWriterPatternValidation(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"{from}/{nope}/{original_filename}", "unknown placeholder {nope}"},
		{"{a}{b}", "unknown placeholder {a}, {b}"},
		{"/abs/{message_id}", "relative"},
		{"a//b", "empty segment"},
		{"../{message_id}", "not allowed"},
		{"{from", "unbalanced"},
		{"from}", "unbalanced"},
		{`a\b`, "separate"},
		{"", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			_, err := parseNamePattern(tt.pattern)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseNamePattern(%q) = %v, want an error with %q", tt.pattern, err, tt.want)
			}
		})
	}
}

type writerBundle struct {
	dir string
	w   *Writer
}

func setupWriter(t *testing.T, mutate func(*WriterConfig)) *writerBundle {
	t.Helper()
	cfg := NewWriterConfig()
	cfg.Directory = filepath.Join(t.TempDir(), "inbox")
	if mutate != nil {
		mutate(cfg)
	}
	w, err := NewWriter(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return &writerBundle{dir: cfg.Directory, w: w}
}

func attempt(m persistence.Message, payload []byte) delivery.Attempt {
	sum := sha256.Sum256(payload)
	m.Size = int64(len(payload))
	m.SHA256 = hex.EncodeToString(sum[:])
	return delivery.Attempt{
		Delivery: persistence.Delivery{ID: 7, MessageID: m.ID},
		Message:  m,
		Number:   1,
		Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(payload)), nil
		},
	}
}

func wantKind(t *testing.T, r delivery.Result, kind persistence.OutcomeKind, reason string) {
	t.Helper()
	if r.Kind != kind {
		t.Fatalf("result %s (%v), want %s", r.Kind, r.Err, kind)
	}
	if reason != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), reason)) {
		t.Fatalf("reason %v, want it to contain %q", r.Err, reason)
	}
}

func TestWriterWritesAFile(t *testing.T) {
	b := setupWriter(t, nil)
	r := b.w.Deliver(context.Background(), attempt(testMessage(), []byte("<order/>")))
	wantKind(t, r, persistence.OutcomeDelivered, "")
	final := filepath.Join(b.dir, "acme", "order.xml")
	if got := readFile(t, final); got != "<order/>" {
		t.Fatalf("file holds %q", got)
	}
	info, err := os.Stat(final)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("file mode %v, want 0640", info.Mode().Perm())
	}
	dirInfo, err := os.Stat(filepath.Dir(final))
	if err != nil {
		t.Fatal(err)
	}
	if dirInfo.Mode().Perm() != 0o750 {
		t.Errorf("directory mode %v, want 0750", dirInfo.Mode().Perm())
	}
	assertNoTemp(t, filepath.Dir(final))
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestWriterStaysUnderItsDirectory(t *testing.T) {
	b := setupWriter(t, func(c *WriterConfig) {
		c.Pattern = "{correlation_id}/{correlation_id}_{original_filename}"
		c.OnCollision = string(CollisionOverwrite) // two of the ids below clean up to the same name
	})
	for _, id := range []string{"../../escape", "..", `..\..\escape`, "/etc/passwd"} {
		m := testMessage()
		m.CorrelationID = id
		r := b.w.Deliver(context.Background(), attempt(m, []byte(id)))
		wantKind(t, r, persistence.OutcomeDelivered, "")
	}
	err := filepath.WalkDir(filepath.Dir(b.dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !within(b.dir, p) {
			t.Errorf("%s was written outside the directory", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriterRefusesSymlinkedDirectories(t *testing.T) {
	b := setupWriter(t, nil)
	outside := t.TempDir()
	if err := os.MkdirAll(b.dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(b.dir, "acme")); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	r := b.w.Deliver(context.Background(), attempt(testMessage(), []byte("x")))
	wantKind(t, r, persistence.OutcomeRetry, "symbolic link")
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote through the link: %v", entries)
	}
}

func TestWriterExistingFile(t *testing.T) {
	tests := []struct {
		name     string
		policy   Collision
		existing string
		payload  string
		want     persistence.OutcomeKind
		reason   string // of a failure, or the history's note of a delivery
		content  string // of order.xml afterwards
		suffixed string // of order-1.xml afterwards, "" for none
	}{
		{"fail: different bytes", CollisionFail, "old", "new", persistence.OutcomeRetry, "file exists: acme/order.xml", "old", ""},
		{"fail: same size, different bytes", CollisionFail, "abc", "xyz", persistence.OutcomeRetry, "file exists", "abc", ""},
		{"fail: identical bytes are a re-attempt", CollisionFail, "same", "same", persistence.OutcomeDelivered, "found already written as acme/order.xml", "same", ""},
		{"overwrite", CollisionOverwrite, "old", "new", persistence.OutcomeDelivered, "written as acme/order.xml", "new", ""},
		{"suffix: different bytes", CollisionSuffix, "old", "new", persistence.OutcomeDelivered, "written as acme/order-1.xml", "old", "new"},
		{"suffix: identical bytes are a re-attempt", CollisionSuffix, "same", "same", persistence.OutcomeDelivered, "found already written as acme/order.xml", "same", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupWriter(t, func(c *WriterConfig) { c.OnCollision = string(tt.policy) })
			final := filepath.Join(b.dir, "acme", "order.xml")
			if err := os.MkdirAll(filepath.Dir(final), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(final, []byte(tt.existing), 0o640); err != nil {
				t.Fatal(err)
			}
			r := b.w.Deliver(context.Background(), attempt(testMessage(), []byte(tt.payload)))
			if tt.want == persistence.OutcomeDelivered {
				wantKind(t, r, tt.want, "")
				if r.Note != tt.reason {
					t.Errorf("note %q, want %q", r.Note, tt.reason)
				}
			} else {
				wantKind(t, r, tt.want, tt.reason)
			}
			if got := readFile(t, final); got != tt.content {
				t.Errorf("file holds %q, want %q", got, tt.content)
			}
			other := filepath.Join(b.dir, "acme", "order-1.xml")
			if got, err := os.ReadFile(other); string(got) != tt.suffixed || (tt.suffixed == "" && !errors.Is(err, fs.ErrNotExist)) {
				t.Errorf("order-1.xml holds %q (%v), want %q", got, err, tt.suffixed)
			}
			assertNoTemp(t, filepath.Dir(final))
		})
	}
}

// TestWriterSuffixes: each new document under a taken name gets the next free suffix,
// a re-attempt of one of them finds its own file, and a directory in the way is skipped.
func TestWriterSuffixes(t *testing.T) {
	b := setupWriter(t, nil)
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(b.dir, "acme", "order-2.xml"), 0o750); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"order.xml": "d0", "order-1.xml": "d1", "order-3.xml": "d2", "order-4.xml": "d3"}
	for i, name := range []string{"order.xml", "order-1.xml", "order-3.xml", "order-4.xml"} {
		r := b.w.Deliver(ctx, attempt(testMessage(), []byte(want[name])))
		wantKind(t, r, persistence.OutcomeDelivered, "")
		if r.Note != "written as acme/"+name {
			t.Fatalf("document %d: note %q, want it written as %s", i, r.Note, name)
		}
	}
	again := b.w.Deliver(ctx, attempt(testMessage(), []byte("d2")))
	if again.Kind != persistence.OutcomeDelivered || again.Note != "found already written as acme/order-3.xml" {
		t.Fatalf("re-attempt: %s %q", again.Kind, again.Note)
	}
	for name, content := range want {
		if got := readFile(t, filepath.Join(b.dir, "acme", name)); got != content {
			t.Errorf("%s holds %q, want %q", name, got, content)
		}
	}
	assertNoTemp(t, filepath.Join(b.dir, "acme"))
}

// TestWriterSuffixRace: workers writing different documents under one name at once each
// get a file of their own; none is replaced or lost.
func TestWriterSuffixRace(t *testing.T) {
	b := setupWriter(t, nil)
	const n = 16
	results := make(chan delivery.Result, n)
	for i := range n {
		go func() {
			results <- b.w.Deliver(context.Background(), attempt(testMessage(), []byte(fmt.Sprintf("document %02d", i))))
		}()
	}
	notes := map[string]bool{}
	for range n {
		r := <-results
		wantKind(t, r, persistence.OutcomeDelivered, "")
		if notes[r.Note] {
			t.Fatalf("two documents %s", r.Note)
		}
		notes[r.Note] = true
	}
	entries, err := os.ReadDir(filepath.Join(b.dir, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[readFile(t, filepath.Join(b.dir, "acme", e.Name()))] = true
	}
	if len(entries) != n || len(seen) != n {
		t.Fatalf("%d files with %d distinct documents, want %d of each", len(entries), len(seen), n)
	}
}

func TestSuffixed(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		name string
		n    int
		want string
	}{
		{"order.edi", 1, "order-1.edi"},
		{"order.tar.gz", 12, "order.tar-12.gz"},
		{"README", 3, "README-3"},
		{SafeName(long + ".xml"), 7, strings.Repeat("a", 255-len("-7.xml")) + "-7.xml"},
	}
	for _, tt := range tests {
		if got := suffixed(tt.name, tt.n); got != tt.want {
			t.Errorf("suffixed(%.20q, %d) = %.30q…, want %.30q…", tt.name, tt.n, got, tt.want)
		}
		if got := suffixed(tt.name, tt.n); len(got) > maxNameBytes {
			t.Errorf("suffixed(%.20q, %d) is %d bytes", tt.name, tt.n, len(got))
		}
	}
}

func TestWriterReattemptAfterACrash(t *testing.T) {
	b := setupWriter(t, nil)
	a := attempt(testMessage(), []byte("payload"))
	wantKind(t, b.w.Deliver(context.Background(), a), persistence.OutcomeDelivered, "")
	a.Number = 2
	wantKind(t, b.w.Deliver(context.Background(), a), persistence.OutcomeDelivered, "")
	// Without a stored digest the writer hashes the payload itself.
	a.Message.SHA256 = ""
	wantKind(t, b.w.Deliver(context.Background(), a), persistence.OutcomeDelivered, "")
}

// stallingReader hands out the first part of a payload, then waits.
type stallingReader struct {
	first, rest []byte
	reached     chan struct{}
	release     chan struct{}
	state       int
}

func (s *stallingReader) Read(p []byte) (int, error) {
	switch s.state {
	case 0:
		s.state = 1
		return copy(p, s.first), nil
	case 1:
		close(s.reached)
		<-s.release
		s.state = 2
		return copy(p, s.rest), nil
	}
	return 0, io.EOF
}

func TestWriterNeverShowsAPartialFile(t *testing.T) {
	b := setupWriter(t, nil)
	payload := []byte("first half|second half")
	sr := &stallingReader{first: payload[:11], rest: payload[11:], reached: make(chan struct{}), release: make(chan struct{})}
	a := attempt(testMessage(), payload)
	a.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(sr), nil }

	done := make(chan delivery.Result, 1)
	go func() { done <- b.w.Deliver(context.Background(), a) }()
	<-sr.reached
	dir := filepath.Join(b.dir, "acme")
	assertGone(t, filepath.Join(dir, "order.xml"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), tempPrefix) {
		t.Fatalf("while writing the directory holds %v, want one temporary file", entries)
	}
	close(sr.release)
	wantKind(t, <-done, persistence.OutcomeDelivered, "")
	if got := readFile(t, filepath.Join(dir, "order.xml")); got != string(payload) {
		t.Fatalf("file holds %q", got)
	}
	assertNoTemp(t, dir)
}

func TestWriterFailures(t *testing.T) {
	t.Run("payload does not match its digest", func(t *testing.T) {
		b := setupWriter(t, nil)
		a := attempt(testMessage(), []byte("good"))
		a.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("evil")), nil }
		wantKind(t, b.w.Deliver(context.Background(), a), persistence.OutcomeRetry, "SHA-256")
		assertGone(t, filepath.Join(b.dir, "acme", "order.xml"))
		assertNoTemp(t, filepath.Join(b.dir, "acme"))
	})
	// A document that checks itself against the message's digest is trusted to fail its
	// own read; one that checks another digest is hashed by the writer as any other.
	t.Run("self-checking payload fails its read", func(t *testing.T) {
		b := setupWriter(t, nil)
		a := attempt(testMessage(), []byte("good"))
		a.Open = func(context.Context) (io.ReadCloser, error) {
			return &checkingReader{r: strings.NewReader("evil"), sha: a.Message.SHA256}, nil
		}
		wantKind(t, b.w.Deliver(context.Background(), a), persistence.OutcomeRetry, "cannot read the payload")
		assertGone(t, filepath.Join(b.dir, "acme", "order.xml"))
		assertNoTemp(t, filepath.Join(b.dir, "acme"))
	})
	t.Run("payload checking another digest", func(t *testing.T) {
		b := setupWriter(t, nil)
		a := attempt(testMessage(), []byte("good"))
		a.Open = func(context.Context) (io.ReadCloser, error) {
			return &checkingReader{r: strings.NewReader("evil"), sha: strings.Repeat("0", 64), pass: true}, nil
		}
		wantKind(t, b.w.Deliver(context.Background(), a), persistence.OutcomeRetry, "SHA-256")
		assertGone(t, filepath.Join(b.dir, "acme", "order.xml"))
	})
	t.Run("payload cannot be read", func(t *testing.T) {
		b := setupWriter(t, nil)
		a := attempt(testMessage(), []byte("x"))
		a.Open = func(context.Context) (io.ReadCloser, error) {
			return nil, errors.New("s3://bucket/secret-key: access denied")
		}
		r := b.w.Deliver(context.Background(), a)
		wantKind(t, r, persistence.OutcomeRetry, "cannot read the payload")
		if strings.Contains(r.Err.Error(), "s3://") {
			t.Errorf("reason %q leaks the storage address", r.Err)
		}
	})
	t.Run("a file where a directory belongs", func(t *testing.T) {
		b := setupWriter(t, nil)
		if err := os.MkdirAll(b.dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.dir, "acme"), nil, 0o640); err != nil {
			t.Fatal(err)
		}
		wantKind(t, b.w.Deliver(context.Background(), attempt(testMessage(), []byte("x"))), persistence.OutcomeRetry, "not a directory")
	})
}

func TestFSFailureClasses(t *testing.T) {
	tests := []struct {
		err  error
		want persistence.OutcomeKind
	}{
		{&fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, persistence.OutcomeRetry},
		{&fs.PathError{Op: "write", Path: "/x", Err: syscall.EIO}, persistence.OutcomeRetry},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, persistence.OutcomeRetry},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EROFS}, persistence.OutcomeRetry},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENAMETOOLONG}, persistence.OutcomeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			r := fsFailure("write", "acme/order.xml", tt.err)
			if r.Kind != tt.want {
				t.Fatalf("kind %s, want %s", r.Kind, tt.want)
			}
			if r.Kind == persistence.OutcomeRetry && r.Class != delivery.ClassTransport {
				t.Errorf("class %s, want transport", r.Class)
			}
			if want := "write acme/order.xml: " + tt.err.(*fs.PathError).Err.Error(); r.Err.Error() != want {
				t.Errorf("reason %q, want %q", r.Err, want)
			}
		})
	}
}

// checkingReader claims to check its bytes against sha (storage.Checking): at its end it
// fails, as a mismatching blob does, unless pass is set.
type checkingReader struct {
	r    io.Reader
	sha  string
	pass bool
}

func (c *checkingReader) ChecksSHA256() string { return c.sha }

func (c *checkingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) && !c.pass {
		return n, errors.New("payload does not match its recorded size and SHA-256")
	}
	return n, err
}

func (c *checkingReader) Close() error { return nil }
