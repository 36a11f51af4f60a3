package persistence

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseNames(t *testing.T) {
	tests := []struct {
		in      string
		party   bool
		file    bool
		pattern bool
	}{
		{"acme", true, true, true},
		{"acme-corp_2", true, true, true},
		{"*", false, true, true},
		{"ACME", false, true, false},
		{"", false, false, false},
		{strings.Repeat("a", 64), true, true, true},
		{strings.Repeat("a", 65), false, true, false},
		{"../etc", false, false, false},
		{"a/b", false, false, false},
		{`a\b`, false, false, false},
		{"..", false, false, false},
		{"order 1.edi", false, true, false},
		{"bad\x00name", false, false, false},
		{"line\nbreak", false, false, false},
		{strings.Repeat("x", 256), false, false, false},
	}
	for _, tt := range tests {
		if _, err := ParsePartyName(tt.in); (err == nil) != tt.party {
			t.Errorf("ParsePartyName(%q) error = %v, want ok=%v", tt.in, err, tt.party)
		}
		if _, err := ParseFileName(tt.in); (err == nil) != tt.file {
			t.Errorf("ParseFileName(%q) error = %v, want ok=%v", tt.in, err, tt.file)
		}
		if _, err := ParsePartyPattern(tt.in); (err == nil) != tt.pattern {
			t.Errorf("ParsePartyPattern(%q) error = %v, want ok=%v", tt.in, err, tt.pattern)
		}
	}
}

func TestEnumsRefuseUnknownValuesEverywhere(t *testing.T) {
	var s DeliveryState
	if err := json.Unmarshal([]byte(`"lost"`), &s); err == nil {
		t.Error("JSON decoding accepted an unknown delivery state")
	}
	if err := s.Scan("lost"); err == nil {
		t.Error("Scan accepted an unknown delivery state")
	}
	if _, err := DeliveryState("lost").Value(); err == nil {
		t.Error("Value wrote an unknown delivery state")
	}
	if _, err := json.Marshal(MessageStatus("nope")); err == nil {
		t.Error("JSON encoding wrote an unknown status")
	}
	if err := s.Scan([]byte("retrying")); err != nil || s != DeliveryRetrying {
		t.Errorf("Scan(retrying) = %v, %v", s, err)
	}
	var st MessageStage
	if err := json.Unmarshal([]byte(`"dispatched"`), &st); err != nil || st != StageDispatched {
		t.Errorf("JSON decoding of a valid stage = %v, %v", st, err)
	}
}

func TestRouteOverlaps(t *testing.T) {
	r := func(from, to string) Route {
		return Route{Source: "src", From: PartyPattern(from), To: PartyPattern(to), Target: "dst"}
	}
	tests := []struct {
		a, b Route
		want bool
	}{
		{r("*", "*"), r("local", "acme"), true},
		{r("local", "acme"), r("*", "acme"), true},
		{r("local", "acme"), r("local", "acme"), true},
		{r("local", "*"), r("*", "acme"), false},
		{r("local", "acme"), r("local", "beta"), false},
		{r("*", "*"), Route{Source: "src", From: "*", To: "*", Target: "other"}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Overlaps(tt.b); got != tt.want {
			t.Errorf("%v overlaps %v = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := tt.b.Overlaps(tt.a); got != tt.want {
			t.Errorf("overlap is not symmetric for %v and %v", tt.a, tt.b)
		}
	}
}
