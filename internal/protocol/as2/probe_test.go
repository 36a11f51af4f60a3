package as2

import (
	"net/http"
	"strings"
	"testing"
)

func TestJudgeProbe(t *testing.T) {
	for _, tc := range []struct {
		code     int
		location string
		ok       bool
		want     string
	}{
		{http.StatusMethodNotAllowed, "", true, "reachable; the server answered 405 Method Not Allowed (server P) to a probe, which an AS2 endpoint may do — not a verdict on AS2"},
		{http.StatusOK, "", true, "reachable; the server answered 200 OK (server P) to a probe — not a verdict on AS2"},
		{http.StatusNotFound, "", true, "check the path of the endpoint URL"},
		{http.StatusForbidden, "", true, "ask the partner"},
		{http.StatusMovedPermanently, "https://as2.example.com/as2", false, "pointing to https://as2.example.com/as2: Wharf does not follow redirects"},
		{http.StatusServiceUnavailable, "", false, "is not serving now"},
	} {
		resp := &http.Response{StatusCode: tc.code, Header: http.Header{"Server": {"P"}}}
		if tc.location != "" {
			resp.Header.Set("Location", tc.location)
		}
		detail, err := judgeProbe(resp)
		if (err == nil) != tc.ok {
			t.Errorf("%d: passed = %v, want %v", tc.code, err == nil, tc.ok)
		}
		if err != nil {
			detail = err.Error()
		}
		if !strings.Contains(detail, tc.want) {
			t.Errorf("%d: %q, want it to contain %q", tc.code, detail, tc.want)
		}
	}
}
