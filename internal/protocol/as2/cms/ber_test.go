package cms

import (
	"bytes"
	"encoding/hex"
	"io"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNormalizeBER(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"DER stays", "30 03 02 01 05", "30 03 02 01 05"},
		{"indefinite sequence", "30 80 02 01 05 00 00", "30 03 02 01 05"},
		{"nested indefinite", "30 80 a0 80 04 01 aa 00 00 00 00", "30 05 a0 03 04 01 aa"},
		{"chunked octet string", "24 80 04 02 aa bb 04 01 cc 00 00", "04 03 aa bb cc"},
		{"chunks in chunks", "24 80 24 80 04 01 aa 00 00 04 01 bb 00 00", "04 02 aa bb"},
		{"definite constructed octet string", "24 06 04 01 aa 04 01 bb", "04 02 aa bb"},
		{"long form length", "04 81 02 aa bb", "04 02 aa bb"},
		{"trailing line break", "30 03 02 01 05 0d 0a", "30 03 02 01 05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := normalizeBER(unhex(t, tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Errorf("got % x, want % x", got, want)
			}
		})
	}
}

func TestNormalizeBERRefuses(t *testing.T) {
	deep := strings.Repeat("30 80 ", 100) + strings.Repeat("00 00 ", 100)
	for name, in := range map[string]string{
		"truncated":                    "30 05 02 01",
		"missing end of contents":      "30 80 02 01 05",
		"indefinite primitive":         "04 80 aa 00 00",
		"child overruns parent":        "30 02 02 01 05",
		"trailing data":                "30 03 02 01 05 30",
		"octet string holding a set":   "24 80 31 00 00 00",
		"nesting too deep":             deep,
		"length beyond the input":      "04 84 7f ff ff ff aa",
		"empty":                        "",
		"reserved length octet":        "04 ff",
		"tag number beyond four bytes": "1f 81 81 81 81 01 00",
	} {
		if _, err := normalizeBER(unhex(t, in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOctetReader(t *testing.T) {
	for name, in := range map[string]string{
		"primitive":             "80 03 aa bb cc",
		"constructed":           "a0 80 04 01 aa 04 00 04 02 bb cc 00 00",
		"nested and definite":   "a0 0b 24 80 04 01 aa 00 00 04 02 bb cc",
		"followed by more data": "a0 80 04 03 aa bb cc 00 00 02 01 05",
	} {
		b := newBERReader(bytes.NewReader(unhex(t, in)))
		h, err := b.readHeader()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(newOctetReader(b, h))
		if err != nil || !bytes.Equal(got, []byte{0xaa, 0xbb, 0xcc}) {
			t.Errorf("%s: % x, %v", name, got, err)
		}
	}
	b := newBERReader(bytes.NewReader(unhex(t, "a0 80 04 01 aa 30 00 00 00")))
	h, _ := b.readHeader()
	if _, err := io.ReadAll(newOctetReader(b, h)); err == nil {
		t.Error("a SEQUENCE among the chunks was accepted")
	}
}
