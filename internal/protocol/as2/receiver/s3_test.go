package receiver

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/dispatch"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/storage"
	"wharf/internal/storage/s3test"
)

// On S3 a large body and its document go up while they arrive. A message taken is
// stored from those uploads, byte for byte; a body refused before its end (too large)
// or a message refused after it (a signature that does not verify) leaves no upload
// behind and no object that no payload row names.
func TestS3BodyStreamedWhileReceived(t *testing.T) {
	tmp := t.TempDir()
	org, partner, stranger, other := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "initech"), testParty(t, "globex")
	orgCert, _ := as2test.WritePEM(t, tmp, org.cert, org.key)
	compressed, docSum, _ := writeLargeCompressedEntity(t, tmp)
	partnerCert, partnerKey := as2test.WritePEM(t, tmp, partner.cert, partner.key)
	signed := filepath.Join(tmp, "signed.eml")
	as2test.OpenSSL(t, "cms", "-sign", "-binary", "-stream", "-md", "sha256", "-in", compressed, "-signer", partnerCert, "-inkey", partnerKey, "-out", signed)
	message := filepath.Join(tmp, "message.p7m")
	as2test.OpenSSL(t, "cms", "-encrypt", "-binary", "-aes-256-cbc", "-outform", "DER", "-in", signed, "-recip", orgCert, "-out", message)
	// The same document from another partner, sent with its length.
	otherCert, otherKey := as2test.WritePEM(t, t.TempDir(), other.cert, other.key)
	otherSigned := filepath.Join(tmp, "other.eml")
	as2test.OpenSSL(t, "cms", "-sign", "-binary", "-stream", "-md", "sha256", "-in", compressed, "-signer", otherCert, "-inkey", otherKey, "-out", otherSigned)
	otherMessage := filepath.Join(tmp, "other.p7m")
	as2test.OpenSSL(t, "cms", "-encrypt", "-binary", "-aes-256-cbc", "-outform", "DER", "-in", otherSigned, "-recip", orgCert, "-out", otherMessage)
	srv := s3test.Start(t)

	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner, stranger, other})
		prefix := strings.ReplaceAll(t.Name(), "/", "-") + "/"
		s3, err := storage.NewS3(b.ctx, storage.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		// versitygw copies parts into the object, so NewS3 streams no parts to it: the
		// test turns them on to see them work.
		s3.StreamParts(true)
		if b.stores, err = storage.NewStores(storage.KindS3, b.blobs, s3); err != nil {
			t.Fatal(err)
		}
		b.disp = dispatch.New(s, b.stores, nopWaker{}, b.log)
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		// A message the partner signed, sent as the stranger's: the signature does not verify.
		dir.add(inbound(org, stranger, nil))
		dir.add(inbound(org, other, nil))
		rc := b.start("as2_in", dir, func(c *Config, _ *Deps) { c.MaxBodyMiB = 256 })
		smallDir := newDirectory()
		smallDir.add(inbound(org, partner, func(r *profile.Remote) { r.MaxMessageSizeMiB = 40 }))
		small := b.start("as2_small", smallDir, nil)

		header := func(from party, id string) http.Header {
			return http.Header{
				"Content-Type": {"application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m"},
				"AS2-From":     {string(from.id)}, "AS2-To": {string(org.id)}, "AS2-Version": {"1.2"},
				"Message-ID": {id},
			}
		}
		// left lists the objects under the store's prefix and the multipart uploads
		// in progress.
		left := func() (objects, uploads []string) {
			root := filepath.Join(srv.Dir, srv.Bucket)
			filepath.WalkDir(filepath.Join(root, prefix), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(root, p)
					objects = append(objects, filepath.ToSlash(rel))
				}
				return nil
			})
			filepath.WalkDir(filepath.Join(root, ".sgwtmp", "multipart"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					uploads = append(uploads, p)
				}
				return nil
			})
			return objects, uploads
		}
		// named reports whether a payload row names every object left.
		named := func(objects []string) {
			t.Helper()
			for _, o := range objects {
				var n int
				if err := b.sql.Read(b.ctx, func(tx module.Tx) error {
					return tx.QueryRow(b.ctx, `SELECT COUNT(*) FROM payloads WHERE key = ?`, "s3:"+srv.Bucket+"/"+o).Scan(&n)
				}); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("object %s is named by %d payload rows", o, n)
				}
			}
		}

		taken := []struct {
			name, file, id string
			from           party
			withLength     bool
		}{
			{"taken, chunked", message, "<s3-taken@acme.example>", partner, false},
			{"taken, with its length", otherMessage, "<s3-taken@globex.example>", other, true},
		}
		for _, tc := range taken {
			t.Run(tc.name, func(t *testing.T) {
				a := postFile(t, rc.url(), header(tc.from, tc.id), tc.file, tc.withLength)
				if a.status != http.StatusOK {
					t.Fatalf("HTTP %d: %s", a.status, a.body)
				}
				stored := b.message("as2_in", tc.id)
				for _, stage := range []persistence.PayloadStage{persistence.PayloadUnpacked, persistence.PayloadReceived} {
					p, err := s.GetPayload(b.ctx, stored.ID, stage)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(p.Key, "/streamed/") {
						t.Errorf("%s stored under %s, not from its streamed upload", stage, p.Key)
					}
				}
				if got := b.blobDigest(stored.ID, persistence.PayloadUnpacked); !bytes.Equal(got, docSum) {
					t.Error("the stored document differs from the one sent")
				}
				if got := b.blobDigest(stored.ID, persistence.PayloadReceived); !bytes.Equal(got, fileDigest(t, tc.file)) {
					t.Error("the received stage differs from the request body")
				}
			})
		}
		t.Run("too large mid-body", func(t *testing.T) {
			f, err := os.Open(message)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			req, err := http.NewRequest(http.MethodPost, small.url(), struct{ io.Reader }{f})
			if err != nil {
				t.Fatal(err)
			}
			req.Header = header(partner, "<s3-large@acme.example>")
			// The receiver may close the connection on the body still being sent.
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("HTTP %d, want %d", resp.StatusCode, http.StatusRequestEntityTooLarge)
				}
			}
		})
		t.Run("signature refused", func(t *testing.T) {
			// Sent with its length, the body went up whole before it was judged.
			a := postFile(t, rc.url(), header(stranger, "<s3-forged@initech.example>"), message, true)
			if a.status >= 500 {
				t.Fatalf("HTTP %d: %s", a.status, a.body)
			}
		})
		if n := b.messageCount(); n != len(taken) {
			t.Errorf("%d messages stored, want the %d taken", n, len(taken))
		}
		objects, uploads := left()
		if len(uploads) > 0 {
			t.Errorf("multipart uploads left: %q", uploads)
		}
		named(objects)
		if _, err := os.Stat(filepath.Join(srv.Dir, srv.Bucket, prefix)); err != nil {
			t.Fatal(err)
		}
	})
}
