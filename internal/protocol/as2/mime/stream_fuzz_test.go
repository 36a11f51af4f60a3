package mime

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/iotest"
)

// FuzzUnpackStream opens request bodies in one pass as the receiver does for a large
// message. It never accepts what Unpack refuses, and where both accept they agree on
// the document, its name, the layers and the MIC.
func FuzzUnpackStream(f *testing.F) {
	_, opts := addUnpackSeeds(f)
	opts.MaxAEADSize = fuzzMaxDecompressed
	f.Fuzz(func(t *testing.T, contentType, cte string, body []byte) {
		header := http.Header{}
		if cte != "" {
			header.Set("Content-Transfer-Encoding", cte)
		}
		var payload bytes.Buffer
		streamed, err := UnpackStream(contentType, header, iotest.HalfReader(bytes.NewReader(body)), &payload, opts)
		if streamed == nil {
			t.Fatalf("no result (error %v)", err)
		}
		if err != nil {
			if !classified(err) {
				t.Fatalf("error of no class: %v", err)
			}
			return
		}
		mem, merr := Unpack(contentType, header, body, opts)
		if randomKey(mem) || randomKey(streamed) {
			return
		}
		if merr != nil {
			t.Fatalf("UnpackStream accepted what Unpack refuses: %v", merr)
		}
		if !bytes.Equal(payload.Bytes(), mem.Payload) || streamed.FileName != mem.FileName || streamed.MIC.String() != mem.MIC.String() ||
			len(streamed.Layers) != len(mem.Layers) {
			t.Fatalf("UnpackStream and Unpack disagree: payload %d/%d bytes, name %q/%q, MIC %q/%q, layers %v/%v",
				payload.Len(), len(mem.Payload), streamed.FileName, mem.FileName, streamed.MIC, mem.MIC, streamed.Layers, mem.Layers)
		}
	})
}

// FuzzPartScanner reads multipart bodies as they arrive; it finds the parts
// splitMultipart finds in the whole body.
func FuzzPartScanner(f *testing.F) {
	for _, s := range []string{
		"--b\r\nA\r\n--b\r\nB\r\n--b--\r\n", "pre\n--b\nA\n--b\nB\n--b--\nepi", "--b\r\nA\r\n--bc\r\n--b \r\nB\r\n--b--",
		"--b\r\n\r\n--b\r\n\r\n--b--", "--b\r\nA\r\n--b", "--b\r\nA\r\r\n--b--",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		want, wantErr := splitMultipart([]byte(body), "b")
		got, err := scanParts(body, "b")
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("error %v, splitMultipart's %v", err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%d parts, splitMultipart found %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("part %d %q, splitMultipart's %q", i, got[i], want[i])
			}
		}
	})
}

// FuzzUnpackStreamCanonical runs the one pass as a retry over a signed part's CRLF form
// does (UnpackOptions.CanonicalLineEnds), which rewrites the partner's line endings
// before they reach the parser: it never panics, and every error has a class.
func FuzzUnpackStreamCanonical(f *testing.F) {
	_, opts := addUnpackSeeds(f)
	opts.MaxAEADSize = fuzzMaxDecompressed
	opts.CanonicalLineEnds = true
	f.Fuzz(func(t *testing.T, contentType, cte string, body []byte) {
		header := http.Header{}
		if cte != "" {
			header.Set("Content-Transfer-Encoding", cte)
		}
		res, err := UnpackStream(contentType, header, iotest.HalfReader(bytes.NewReader(body)), io.Discard, opts)
		if res == nil {
			t.Fatalf("no result (error %v)", err)
		}
		if err != nil && !classified(err) {
			t.Fatalf("error of no class: %v", err)
		}
	})
}
