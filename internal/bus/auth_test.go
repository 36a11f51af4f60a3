package bus

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestConnectAuth: credentials given as Auth reach the server; wrong or missing ones
// are refused without the error repeating them, and a file that is not there is named.
func TestConnectAuth(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true,
		Username: "wharf", Password: "right-secret"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("server not ready")
	}
	url := fmt.Sprintf("nats://%s", srv.Addr().String())
	cases := []struct {
		name    string
		auth    Auth
		wantErr string
	}{
		{name: "user and password", auth: Auth{User: "wharf", Password: "right-secret"}},
		{name: "wrong password", auth: Auth{User: "wharf", Password: "wrong-secret"}, wantErr: "authorization"},
		{name: "none", wantErr: "authorization"},
		{name: "missing CA file", auth: Auth{User: "wharf", Password: "right-secret", TLSCA: filepath.Join(t.TempDir(), "ca.pem")},
			wantErr: "CA file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			b, err := Connect(ctx, url, testLogger(t), tc.auth)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				b.Close()
				return
			}
			if err == nil {
				b.Close()
				t.Fatal("Connect succeeded, want a refusal")
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.wantErr)) {
				t.Errorf("error %q lacks %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q repeats a credential", err)
			}
		})
	}
}
