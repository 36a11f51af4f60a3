package loadtest

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"wharf/internal/storage/versitygw"
)

// TestAS2Rounds runs two small rounds between two real instances, one with the secure
// default and a sync MDN, one signed and encrypted with an async MDN, and requires every
// file in B's inbox byte for byte and every MDN stored on both sides. The concurrency is
// above the receiver's default, so both the sender's and the receiver's configs change;
// so is the message limit, which both instances must report back.
func TestAS2Rounds(t *testing.T) {
	bin := buildWharf(t)
	profiles, err := ParseAS2Profiles("compressed+signed+encrypted,signed+encrypted/async", "sync", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	res, err := RunAS2(context.Background(), AS2Options{
		N: n, SizeKiB: 4, Profiles: profiles, Bin: bin, Dir: t.TempDir(), Concurrency: 40, MaxMiB: 700,
		Timeout: 5 * time.Minute, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.MessageLimitMiB != 700 {
		t.Errorf("message limit %d MiB, want the 700 MiB asked for on every receiver and profile", res.MessageLimitMiB)
	}
	if len(res.Rounds) != len(profiles) {
		t.Fatalf("%d rounds for %d profiles", len(res.Rounds), len(profiles))
	}
	for _, r := range res.Rounds {
		if r.FilesVerified != n || r.MDNsOnA != n || r.MDNsOnB != n {
			t.Errorf("%s: %d files verified, %d MDNs on A, %d on B; want %d each",
				r.Profile, r.FilesVerified, r.MDNsOnA, r.MDNsOnB, n)
		}
		if r.CPUA <= 0 || r.CPUB <= 0 || r.PeakRSSA <= 0 || r.PeakRSSB <= 0 {
			t.Errorf("%s: CPU %s/%s, peak RSS %d/%d: want every figure measured", r.Profile, r.CPUA, r.CPUB, r.PeakRSSA, r.PeakRSSB)
		}
		t.Logf("%s: %.0f messages/s, p50 %s, p99 %s", r.Profile, r.PerSecond, r.P50, r.P99)
	}
}

func TestParseAS2Profiles(t *testing.T) {
	tests := []struct {
		list, mdn string
		signedMDN bool
		want      []string
		err       bool
	}{
		{list: "", mdn: "sync", signedMDN: true, want: []string{
			"none/sync/unsigned-mdn", "signed/sync/signed-mdn", "encrypted/sync/signed-mdn",
			"signed+encrypted/sync/signed-mdn", "compressed+signed+encrypted/sync/signed-mdn",
		}},
		{list: "all", mdn: "async", signedMDN: false, want: []string{
			"none/async/unsigned-mdn", "signed/async/unsigned-mdn", "encrypted/async/unsigned-mdn",
			"signed+encrypted/async/unsigned-mdn", "compressed+signed+encrypted/async/unsigned-mdn",
		}},
		{list: "encrypted+signed+compressed, signed/async", mdn: "sync", signedMDN: true, want: []string{
			"compressed+signed+encrypted/sync/signed-mdn", "signed/async/signed-mdn",
		}},
		{list: "none/signed-mdn,compressed/unsigned-mdn/async", mdn: "sync", signedMDN: true, want: []string{
			"none/sync/signed-mdn", "compressed/async/unsigned-mdn",
		}},
		{list: "signed", mdn: "none", err: true},
		{list: "signed+signed", mdn: "sync", err: true},
		{list: "zipped", mdn: "sync", err: true},
		{list: "signed/later", mdn: "sync", err: true},
		{list: "signed,signed/sync", mdn: "sync", err: true},
		{list: "none+signed", mdn: "sync", err: true},
	}
	for _, tt := range tests {
		got, err := ParseAS2Profiles(tt.list, tt.mdn, tt.signedMDN)
		if tt.err {
			if err == nil {
				t.Errorf("ParseAS2Profiles(%q, %q) = %v, want an error", tt.list, tt.mdn, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAS2Profiles(%q, %q): %v", tt.list, tt.mdn, err)
			continue
		}
		var names []string
		for _, p := range got {
			names = append(names, p.String())
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("ParseAS2Profiles(%q, %q) = %v, want %v", tt.list, tt.mdn, names, tt.want)
		}
	}
}

// TestAS2KillReceiver kills the receiving gateway with SIGKILL part-way through a round
// and restarts it on the same data and ports: every file must still be in B's inbox
// once, byte for byte, every message on A delivered with its signed MDN and on B stored
// with the MDN it sent, and no message row more than the files sent.
func TestAS2KillReceiver(t *testing.T) {
	bin := buildWharf(t)
	profiles, err := ParseAS2Profiles("compressed+signed+encrypted", "sync", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	res, err := RunAS2(context.Background(), AS2Options{
		N: n, SizeKiB: 4, Profiles: profiles, Bin: bin, Dir: t.TempDir(), KillAfter: 15,
		Timeout: 3 * time.Minute, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Crashes) != 1 {
		t.Fatalf("%d kills, want 1", len(res.Crashes))
	}
	c := res.Crashes[0]
	if c.Arrived < 15 || c.Arrived >= n || c.Restart <= 0 || c.Recover < c.Restart || c.CaughtUp <= 0 {
		t.Errorf("kill after %d files, restart %s, next file %s, caught up %s: want a kill mid-round, a recovery after the restart and files the kill held up",
			c.Arrived, c.Restart, c.Recover, c.CaughtUp)
	}
	r := res.Rounds[0]
	if r.FilesVerified != n || r.MDNsOnA != n || r.MDNsOnB != n {
		t.Errorf("%d files verified, %d MDNs on A, %d on B; want %d each", r.FilesVerified, r.MDNsOnA, r.MDNsOnB, n)
	}
}

// TestAS2RoundOnS3 runs a round with both instances keeping payloads in one bucket of a
// versitygw the run starts, each under its own prefix: the files arrive byte for byte,
// and the objects in the bucket are the instances' payloads (the messages of 9 MiB go up
// in parts).
func TestAS2RoundOnS3(t *testing.T) {
	if _, err := versitygw.Binary(); err != nil {
		t.Skipf("S3 test skipped: %v", err)
	}
	bin := buildWharf(t)
	profiles, err := ParseAS2Profiles("compressed+signed+encrypted/signed-mdn", "sync", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	dir := t.TempDir()
	res, err := RunAS2(context.Background(), AS2Options{
		N: n, SizeKiB: 9 << 10, Profiles: profiles, Bin: bin, Dir: dir, Storage: StorageS3,
		S3: S3Options{Bucket: "wharf-loadtest"}, Timeout: 5 * time.Minute, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Rounds[0]; r.FilesVerified != n || r.MDNsOnA != n || r.MDNsOnB != n {
		t.Errorf("%d files verified, %d MDNs on A, %d on B; want %d each", r.FilesVerified, r.MDNsOnA, r.MDNsOnB, n)
	}
	// A keeps each document it sent; B each request body and the document in it.
	for prefix, want := range map[string]int{"a": n, "b": 2 * n} {
		large := 0
		err := filepath.WalkDir(filepath.Join(dir, "s3", "data", "wharf-loadtest", prefix), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if info, err := d.Info(); err == nil && info.Mode().IsRegular() && info.Size() >= 9<<20 {
				large++
			}
			return nil
		})
		if err != nil || large < want {
			t.Errorf("prefix %s/ of the bucket holds %d objects of the files' size (%v), want at least %d", prefix, large, err, want)
		}
	}
}
