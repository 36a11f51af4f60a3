package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"wharf/internal/persistence"
)

// A reader that stops at the recorded size, as an HTTP body with that Content-Length
// does, gets every byte of an intact blob and never the last byte of a changed one.
func TestVerifyHoldsBackTheLastByteOfACorruptBlob(t *testing.T) {
	doc := bytes.Repeat([]byte("UNB+IATB:1'"), 1000)
	sum := sha256.Sum256(doc)
	row := persistence.Payload{Key: "s3:bucket/doc", Size: int64(len(doc)), SHA256: hex.EncodeToString(sum[:])}
	changed := bytes.Clone(doc)
	changed[len(changed)-1] ^= 1
	for _, tc := range []struct {
		name    string
		stored  []byte
		corrupt bool
	}{
		{"intact", doc, false},
		{"last byte changed", changed, true},
		{"first byte changed", append([]byte{'X'}, doc[1:]...), true},
		{"longer", append(bytes.Clone(doc), '!'), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Verify(io.NopCloser(bytes.NewReader(tc.stored)), row)
			var got bytes.Buffer
			n, err := io.CopyN(&got, r, row.Size)
			if tc.corrupt {
				if n == row.Size || !errors.Is(err, ErrCorrupt) || !errors.Is(Corruption(r), ErrCorrupt) {
					t.Fatalf("copied %d of %d bytes, err %v, Corruption %v; want the last byte held back and ErrCorrupt", n, row.Size, err, Corruption(r))
				}
				return
			}
			if err != nil || !bytes.Equal(got.Bytes(), doc) || Corruption(r) != nil {
				t.Fatalf("copied %d bytes, err %v, Corruption %v; want the document", n, err, Corruption(r))
			}
		})
	}
}
