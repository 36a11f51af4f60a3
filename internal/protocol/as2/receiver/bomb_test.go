package receiver

import (
	"net/http"
	"sync"
	"testing"

	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test/bomb"
	"wharf/internal/protocol/as2/cms"
)

// compressedPart heads a compressed layer carried inside another layer.
const compressedPart = "Content-Type: application/pkcs7-mime; smime-type=compressed-data; name=\"smime.p7z\"\r\n" +
	"Content-Transfer-Encoding: binary\r\n\r\n"

// A gigabyte of zeros compressed to about a megabyte, unsigned or signed, encrypted or
// not, is refused with the disposition that names why, before it is inflated or once
// it passes the ratio; nothing of it is stored, no temporary file is left (see
// bench.start), and a good partner is served meanwhile.
func TestCompressionBombs(t *testing.T) {
	org, partner, attacker, lax := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "globex"), testParty(t, "laxco")
	zeros := bomb.Build(t, "Content-Type: application/edi-x12\r\nContent-Disposition: attachment; filename=\"bomb.edi\"\r\n\r\n", 1<<30)
	t.Logf("the bomb: %d bytes of CompressedData for 1 GiB of content", len(zeros))
	const bare = `application/pkcs7-mime; smime-type=compressed-data; name="smime.p7z"`
	inner := append([]byte(compressedPart), zeros...)
	signedBomb := func(t testing.TB) []byte {
		sig, err := cms.SignDetached(inner, attacker.cert, attacker.key, nil, cms.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		return signedEntity(inner, sig)
	}
	tests := []struct {
		name        string
		from        party
		req         func(t testing.TB) (contentType string, body []byte)
		disposition string
	}{
		{"unsigned, signature demanded", attacker, func(testing.TB) (string, []byte) { return bare, zeros }, "insufficient-message-security"},
		{"unsigned and encrypted, signature demanded", attacker, func(t testing.TB) (string, []byte) {
			return envelop(t, inner, org.cert)
		}, "insufficient-message-security"},
		{"signed and encrypted", attacker, func(t testing.TB) (string, []byte) {
			return envelop(t, signedBomb(t), org.cert)
		}, "decompression-failed"},
		{"signed, encryption demanded", attacker, func(t testing.TB) (string, []byte) {
			e := signedBomb(t)
			return `multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary="b1"`, e[len("Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256; boundary=\"b1\"\r\n\r\n"):]
		}, "insufficient-message-security"},
		{"unsigned, nothing demanded", lax, func(testing.TB) (string, []byte) { return bare, zeros }, "decompression-failed"},
	}
	for _, mode := range bodyModes {
		t.Run(mode.name, func(t *testing.T) {
			forEachDB(t, func(t *testing.T, s *db.Store) {
				b := newBench(t, s, []party{org}, []party{partner, attacker, lax})
				dir := newDirectory()
				dir.add(inbound(org, partner, nil))
				dir.add(inbound(org, attacker, nil))
				dir.add(inbound(org, lax, relaxed))
				rc := b.start("as2_bombs", dir, nil, mode.tune)
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						before := b.messageCount()
						r := request{header: as2Header(tt.from.id, org.id)}
						r.contentType, r.body = tt.req(t)
						var wg sync.WaitGroup
						wg.Go(func() {
							a, err := sendFrom(attackerIP, rc.url(), r)
							if err != nil {
								t.Error(err)
								return
							}
							if a.status != http.StatusOK {
								t.Errorf("bomb: HTTP %d: %s", a.status, a.body)
								return
							}
							m := parseMDN(t, a, org.cert)
							if want := "automatic-action/MDN-sent-automatically; processed/error: " + tt.disposition; m.Disposition.String() != want {
								t.Errorf("bomb: disposition %q, want %q", m.Disposition, want)
							}
						})
						servedMeanwhile(t, rc, org, partner, "the bomb "+tt.name)
						wg.Wait()
						if stored := b.messageCount() - before; stored != 3 {
							t.Errorf("%d messages stored, want the good partner's 3", stored)
						}
						if n := b.inboundRows(r.header.Get("Message-ID")); n != 0 {
							t.Errorf("%d as2_inbound rows for the bomb", n)
						}
						nothingHalfStored(t, b)
					})
				}
			})
		})
	}
}
