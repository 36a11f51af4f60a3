package mime

import (
	"bytes"
	"errors"
	"testing"
)

// Partners send base64 with and without padding, folded and unfolded; the
// decoder must answer every such body with content or ErrTransferEncoding.
func TestDecodeTransferEncodingBase64(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
		err  bool
	}{
		{name: "padded", body: "QQ==", want: "A"},
		{name: "unpadded one byte", body: "QQ", want: "A"},
		{name: "unpadded two bytes", body: "QUI", want: "AB"},
		{name: "unpadded long", body: "QUJDREVGRw", want: "ABCDEFG"},
		{name: "folded unpadded", body: "QUJD\r\nREVG\r\nRw", want: "ABCDEFG"},
		{name: "short padding", body: "QQ=", want: "A"},
		{name: "single character", body: "Q", err: true},
		{name: "not base64", body: "@@@@", err: true},
		{name: "empty", body: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeTransferEncoding("base64", []byte(tt.body))
			if tt.err {
				if !errors.Is(err, ErrTransferEncoding) {
					t.Fatalf("DecodeTransferEncoding(%q) = %q, %v; want ErrTransferEncoding", tt.body, got, err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, []byte(tt.want)) {
				t.Fatalf("DecodeTransferEncoding(%q) = %q, %v; want %q", tt.body, got, err, tt.want)
			}
		})
	}
}
