package receiver

import "testing"

// acquireFair holds a partner to its share only when a share is set and another
// partner has requests in progress; max holds always.
func TestAcquireFair(t *testing.T) {
	tests := []struct {
		name  string
		held  map[string]int
		key   string
		share int
		want  admission
	}{
		{"not crowded", map[string]int{"acme": 3, "beta": 3}, "acme", 0, admitted},
		{"below its share", map[string]int{"acme": 3, "beta": 9}, "acme", 4, admitted},
		{"first request while crowded", map[string]int{"acme": 12, "beta": 12}, "gamma", 4, admitted},
		{"at its share with others", map[string]int{"acme": 4, "beta": 1}, "acme", 4, overShare},
		{"alone past its share", map[string]int{"acme": 12}, "acme", 4, admitted},
		{"at max", map[string]int{"acme": 16}, "acme", 0, overMax},
		{"at max while crowded", map[string]int{"acme": 16, "beta": 1}, "acme", 4, overMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newKeyedLimit(16)
			for k, n := range tt.held {
				for range n {
					if !l.acquire(k) {
						t.Fatalf("setting up %s", k)
					}
				}
			}
			before := l.count(tt.key)
			got := l.acquireFair(tt.key, tt.share)
			if got != tt.want {
				t.Fatalf("acquireFair = %d, want %d", got, tt.want)
			}
			want := before
			if got == admitted {
				want++
			}
			if n := l.count(tt.key); n != want {
				t.Errorf("count %d after acquireFair, want %d", n, want)
			}
		})
	}
}
