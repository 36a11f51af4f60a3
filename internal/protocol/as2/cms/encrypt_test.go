package cms

import (
	"bytes"
	"crypto/x509"
	"testing"
)

// EncryptedSize announces exactly what EncryptTo writes, for every cipher,
// key transport and padding case.
func TestEncryptedSize(t *testing.T) {
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	recipients := [][]*x509.Certificate{{ours.cert}, {ours.cert, partner.cert}}
	for _, cipher := range []ContentCipher{AES128CBC, AES192CBC, AES256CBC, AES128GCM, AES256GCM} {
		for _, kt := range []KeyTransport{RSAPKCS1v15, RSAOAEPSHA1, RSAOAEPSHA256} {
			for _, rs := range recipients {
				for _, size := range []int64{0, 1, 15, 16, 17, 100, 127, 128, 4000, 65535, 65536, 65537, 200000} {
					opts := EncryptOptions{Cipher: cipher, KeyTransport: kt, SubjectKeyID: size%2 == 1}
					want, err := EncryptedSize(size, rs, opts)
					if err != nil {
						t.Fatal(err)
					}
					var out bytes.Buffer
					if err := EncryptTo(&out, bytes.NewReader(make([]byte, size)), size, rs, opts); err != nil {
						t.Fatal(err)
					}
					if int64(out.Len()) != want {
						t.Fatalf("%s %s %d recipients, %d bytes: wrote %d, announced %d", cipher, kt, len(rs), size, out.Len(), want)
					}
					if size == 65537 {
						plain, _, err := Decrypt(out.Bytes(), []Recipient{ours.recipient()})
						if err != nil || !bytes.Equal(plain, make([]byte, size)) {
							t.Fatalf("%s %s: decrypt: %v", cipher, kt, err)
						}
					}
				}
			}
		}
	}
	if _, err := EncryptedSize(1, nil, EncryptOptions{}); err == nil {
		t.Error("no recipients: no error")
	}
	if _, err := EncryptedSize(1, []*x509.Certificate{ours.cert}, EncryptOptions{Cipher: DES3CBC}); err == nil {
		t.Error("3DES: no error")
	}
}
