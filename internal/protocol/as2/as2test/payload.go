package as2test

import "math/rand/v2"

// MixedPayload is size bytes: random in its first half, EDI text in the second, so a
// compressed layer has work to do and still leaves a large envelope. The same size
// gives the same bytes.
func MixedPayload(size int) []byte {
	b := make([]byte, size)
	rnd := rand.NewChaCha8([32]byte{1})
	_, _ = rnd.Read(b[:size/2])
	line := []byte("ISA*00*          *00*          *ZZ*SENDER*ZZ*RECEIVER~\r\n")
	for i := size / 2; i < size; {
		i += copy(b[i:], line)
	}
	return b
}
