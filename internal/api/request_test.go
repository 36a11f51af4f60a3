package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/records"
)

func TestDecodeStrict(t *testing.T) {
	type target struct {
		Name    string `json:"name"`
		Ordered bool   `json:"ordered"`
		Nested  struct {
			N int `json:"n"`
		} `json:"nested"`
	}
	tests := []struct {
		body      string
		wantField string // "" for success
	}{
		{`{"name":"a"}`, ""},
		{` {"name":"a"} ` + "\n", ""},
		{`{"name":"a","colour":"red"}`, "colour"},
		{`{"":"a"}`, "body"},
		{`{"name":1}`, "name"},
		{`{"nested":{"n":"x"}}`, "nested.n"},
		{`{"ordered":"yes"}`, "ordered"},
		{`{"name":"a"`, "body"},
		{`{"name":"a"}{}`, "body"},
		{`{"name":"a"} x`, "body"},
		{`{"name":}`, "body"},
		{``, "body"},
		{`   `, "body"},
		{`[]`, "body"},
		{`"x"`, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			var v target
			err := decodeStrict([]byte(tt.body), &v)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				return
			}
			var fe *persistence.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Fatalf("decode = %v, want a field error on %q", err, tt.wantField)
			}
		})
	}
}

func TestParsePage(t *testing.T) {
	tests := []struct {
		query     string
		want      page
		wantField string
	}{
		{"", page{limit: 100}, ""},
		{"limit=5&offset=10", page{limit: 5, offset: 10}, ""},
		{"limit=1000", page{limit: 1000}, ""},
		{"limit=0", page{}, "limit"},
		{"limit=1001", page{}, "limit"},
		{"limit=", page{}, "limit"},
		{"limit=ten", page{}, "limit"},
		{"offset=-1", page{}, "offset"},
		{"offset=x", page{}, "offset"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/x?"+tt.query, nil)
			p, err := parsePage(r)
			if tt.wantField != "" {
				var fe *persistence.FieldError
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Fatalf("parsePage = %v, want a field error on %q", err, tt.wantField)
				}
				return
			}
			if err != nil || p != tt.want {
				t.Fatalf("parsePage = %+v, %v; want %+v", p, err, tt.want)
			}
		})
	}
}

func TestSlicePage(t *testing.T) {
	all := []int{1, 2, 3, 4, 5}
	tests := []struct {
		p    page
		want []int
	}{
		{page{limit: 2}, []int{1, 2}},
		{page{limit: 2, offset: 4}, []int{5}},
		{page{limit: 10, offset: 5}, []int{}},
		{page{limit: 10, offset: 50}, []int{}},
	}
	for _, tt := range tests {
		got := slicePage(all, tt.p)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || got == nil {
			t.Errorf("slicePage(%+v) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		headers []string
		want    string
		ok      bool
	}{
		{[]string{"Bearer abc"}, "abc", true},
		{[]string{"bearer abc"}, "abc", true},
		{[]string{"Bearer  abc "}, "abc", true},
		{nil, "", false},
		{[]string{""}, "", false},
		{[]string{"Bearer"}, "", false},
		{[]string{"Bearer "}, "", false},
		{[]string{"Basic YWJjOmRlZg=="}, "", false},
		{[]string{"Bearer a b"}, "", false},
		{[]string{"Bearer abc", "Bearer def"}, "", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, h := range tt.headers {
			r.Header.Add("Authorization", h)
		}
		got, ok := bearerToken(r)
		if got != tt.want || ok != tt.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", tt.headers, got, ok, tt.want, tt.ok)
		}
	}
}

func TestHashToken(t *testing.T) {
	// SHA-256 of "abc", the FIPS 180-2 test vector.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := HashToken("abc"); got != want {
		t.Errorf("HashToken = %s", got)
	}
}

func TestClassify(t *testing.T) {
	s := New(Deps{})
	joined := errors.Join(
		&persistence.FieldError{Field: "from", Message: "bad"},
		&persistence.FieldError{Field: "to", Message: "worse"},
	)
	tests := []struct {
		name    string
		err     error
		status  int
		code    string
		details map[string]any
	}{
		{"field", &persistence.FieldError{Field: "name", Message: "bad"}, 400, "INVALID_INPUT", map[string]any{"name": "bad"}},
		{"wrapped field", fmt.Errorf("create: %w", &persistence.FieldError{Field: "name", Message: "bad"}), 400, "INVALID_INPUT", map[string]any{"name": "bad"}},
		{"joined fields", joined, 400, "INVALID_INPUT", map[string]any{"from": "bad", "to": "worse"}},
		{"not found", fmt.Errorf("get party x: %w", persistence.ErrNotFound), 404, "NOT_FOUND", nil},
		{"in use", fmt.Errorf("delete: %w", persistence.ErrInUse), 409, "IN_USE", nil},
		{"in use, specific", withCode(fmt.Errorf("delete: %w", persistence.ErrInUse), persistence.ErrInUse, "PARTY_IN_USE"), 409, "PARTY_IN_USE", nil},
		{"specific code only for its sentinel", withCode(persistence.ErrNotFound, persistence.ErrInUse, "PARTY_IN_USE"), 404, "NOT_FOUND", nil},
		{"conflict", persistence.ErrConflict, 409, "CONFLICT", nil},
		{"redundant route", &records.RedundantRouteError{Existing: persistence.Route{ID: 7}}, 409, "ROUTE_REDUNDANT", map[string]any{"route_id": int64(7)}},
		{"too large", &http.MaxBytesError{Limit: 10}, 413, "PAYLOAD_TOO_LARGE", nil},
		{"internal", errors.New("pq: password authentication failed for user wharf"), 500, "INTERNAL", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			got := s.classify(r, tt.err)
			if got.status != tt.status || got.code != tt.code {
				t.Fatalf("classify = %d %s, want %d %s", got.status, got.code, tt.status, tt.code)
			}
			if tt.details != nil && fmt.Sprint(got.details) != fmt.Sprint(tt.details) {
				t.Errorf("details = %v, want %v", got.details, tt.details)
			}
			if tt.status == 500 && (got.message == tt.err.Error() || len(got.details) > 0) {
				t.Errorf("a 500 leaks the error: %+v", got)
			}
		})
	}
}
