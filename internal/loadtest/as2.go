package loadtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// AS2Profile is the protection of one round: what A does to each message, what B
// requires of it, and the MDN A asks for.
type AS2Profile struct {
	Compress bool
	Sign     bool
	Encrypt  bool
	// MDN is "sync" or "async".
	MDN       string
	SignedMDN bool
}

// Protection names the layers: "none" or a "+"-joined list in the order they apply.
func (p AS2Profile) Protection() string {
	var parts []string
	if p.Compress {
		parts = append(parts, "compressed")
	}
	if p.Sign {
		parts = append(parts, "signed")
	}
	if p.Encrypt {
		parts = append(parts, "encrypted")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Receipt describes the MDN, e.g. "signed sync".
func (p AS2Profile) Receipt() string {
	if p.SignedMDN {
		return "signed " + p.MDN
	}
	return "unsigned " + p.MDN
}

// String is the profile in the syntax ParseAS2Profiles reads, with every option spelled.
func (p AS2Profile) String() string {
	mdn := "unsigned-mdn"
	if p.SignedMDN {
		mdn = "signed-mdn"
	}
	return p.Protection() + "/" + p.MDN + "/" + mdn
}

// AS2ProfileNames are the protections a run covers when none are named, cheapest first.
var AS2ProfileNames = []string{"none", "signed", "encrypted", "signed+encrypted", "compressed+signed+encrypted"}

// ParseAS2Profiles reads a comma-separated list of profiles; empty or "all" means every
// name of AS2ProfileNames. A profile is PROTECTION[/OPTION]...: PROTECTION is "none" or
// a "+"-joined set of compressed, signed and encrypted; OPTION is sync, async,
// signed-mdn or unsigned-mdn. Without options the MDN mode is mdn ("sync" or "async")
// and the MDN is signed when signedMDN is set, except for "none", which signs nothing.
func ParseAS2Profiles(list, mdn string, signedMDN bool) ([]AS2Profile, error) {
	if mdn != "sync" && mdn != "async" {
		return nil, fmt.Errorf("invalid MDN mode %q: want sync or async", mdn)
	}
	names := strings.Split(list, ",")
	if strings.TrimSpace(list) == "" || list == "all" {
		names = AS2ProfileNames
	}
	var out []AS2Profile
	for _, name := range names {
		p, err := parseAS2Profile(strings.TrimSpace(name), mdn, signedMDN)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("profile %q is listed twice", name)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseAS2Profile(s, mdn string, signedMDN bool) (AS2Profile, error) {
	parts := strings.Split(s, "/")
	p := AS2Profile{MDN: mdn, SignedMDN: signedMDN}
	if parts[0] == "none" {
		p.SignedMDN = false
	} else {
		seen := map[string]bool{}
		for _, layer := range strings.Split(parts[0], "+") {
			if seen[layer] {
				return p, fmt.Errorf("invalid profile %q: %q given twice", s, layer)
			}
			seen[layer] = true
			switch layer {
			case "compressed":
				p.Compress = true
			case "signed":
				p.Sign = true
			case "encrypted":
				p.Encrypt = true
			default:
				return p, fmt.Errorf("invalid profile %q: %q is not one of none, compressed, signed, encrypted", s, layer)
			}
		}
	}
	for _, opt := range parts[1:] {
		switch opt {
		case "sync", "async":
			p.MDN = opt
		case "signed-mdn":
			p.SignedMDN = true
		case "unsigned-mdn":
			p.SignedMDN = false
		default:
			return p, fmt.Errorf("invalid profile %q: option %q is not one of sync, async, signed-mdn, unsigned-mdn", s, opt)
		}
	}
	return p, nil
}

// AS2Options describes a run between two instances.
type AS2Options struct {
	N        int // files per profile
	SizeKiB  int
	Profiles []AS2Profile
	Bin      string // the wharf binary
	Dir      string // a throwaway directory
	// Rate, when above zero, paces the drops at that many files per second.
	Rate float64
	// Concurrency, when above zero, is the attempts each as2-sender runs at once
	// (max_concurrent); each as2-receiver takes at least as many requests at once.
	Concurrency int
	// KillAfter, when above zero, kills B (A with KillSender) with SIGKILL once that many
	// files of the run are in B's inbox, and starts it again on the same data and ports;
	// Kills (default 1) repeats that every KillAfter more files. A kill run sets short
	// retries and leases, so the figures measure the recovery, not the default back-off.
	KillAfter  int
	Kills      int
	KillSender bool
	// MaxMiB, when above zero, is the message size limit on both instances: each
	// receiver's max_body_mib and both AS2 profiles' max_message_size_mib.
	MaxMiB int
	// Storage is where both instances keep payloads: StorageLocal (the default) or
	// StorageS3, in the bucket S3 names.
	Storage  string
	S3       S3Options
	Timeout  time.Duration
	Progress io.Writer
}

// AS2Round is what one profile's round measured. CPU and peak RSS are per process: A
// sends, B receives.
type AS2Round struct {
	Profile   AS2Profile
	N         int
	Elapsed   time.Duration
	PerSecond float64
	// Latency of a file: from its rename into A's outbox until B has written it to its
	// inbox and A has recorded its delivery, MDN checked, as delivered.
	P50, P95, P99 time.Duration
	CPUA, CPUB    time.Duration
	// PeakRSSA and PeakRSSB are in bytes: the peak during the round, or since the
	// process started when PeakSinceStart is set (the kernel refused the reset).
	PeakRSSA, PeakRSSB int64
	PeakSinceStart     bool
	// What the checks after the round found: files identical in B's inbox, messages
	// delivered with a stored MDN on A, and messages with the MDN sent on B.
	FilesVerified int
	MDNsOnA       int
	MDNsOnB       int
}

// CPUPerMessage is the CPU time of both processes per message.
func (r AS2Round) CPUPerMessage() time.Duration { return (r.CPUA + r.CPUB) / time.Duration(r.N) }

// AS2Result is what a run measured, one round per profile in the order given.
type AS2Result struct {
	Rounds  []AS2Round
	Crashes []Crash
	// MessageLimitMiB is the smallest message size limit the instances report after the
	// set-up: the receivers' max_body_mib and the AS2 profiles' max_message_size_mib.
	MessageLimitMiB int
}

// as2Peer is one of the two instances with its AS2 identity.
type as2Peer struct {
	*Instance
	// party is the name the other instance knows this one by.
	party string
	as2ID string
	port  int
	// maxMiB is AS2Options.MaxMiB.
	maxMiB int
	id     identity
	// ownCert is this instance's certificate with its key, on this instance; partnerCert
	// the other instance's certificate, on this instance.
	ownCert, partnerCert int64
}

func (p *as2Peer) receiverURL() string { return fmt.Sprintf("http://127.0.0.1:%d/as2", p.port) }
func (p *as2Peer) mdnURL() string      { return fmt.Sprintf("http://127.0.0.1:%d/as2/mdn", p.port) }

// RunAS2 starts two standalone instances on loopback, A with partner b and B with
// partner a, and for each profile drops N files into A's outbox for b: A's file poller
// takes them, A's as2-sender sends them to B's as2-receiver, B's file writer writes them
// to its inbox. Each round waits until every file is in B's inbox and every delivery on
// A is delivered, checks every file byte for byte and every message and MDN on both
// sides, and reports throughput, latency, CPU and peak RSS.
func RunAS2(ctx context.Context, opt AS2Options) (AS2Result, error) {
	var res AS2Result
	if opt.N <= 0 || opt.SizeKiB < 0 {
		return res, errors.New("loadtest: -n must be positive and -size-kib not negative")
	}
	if len(opt.Profiles) == 0 {
		return res, errors.New("loadtest: no AS2 profile to run")
	}
	if opt.Timeout == 0 {
		opt.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}

	a := &as2Peer{party: "a", as2ID: "WHARF-A", maxMiB: opt.MaxMiB}
	b := &as2Peer{party: "b", as2ID: "WHARF-B", maxMiB: opt.MaxMiB}
	victim := b
	if opt.KillSender {
		victim = a
	}
	crashes, err := newCrashPlan(opt.KillAfter, opt.Kills, strings.ToUpper(victim.party), progress)
	if err != nil {
		return res, err
	}
	if crashes == nil && opt.KillSender {
		return res, errors.New("loadtest: -kill-sender needs -kill-after")
	}
	var s3 *s3Run
	switch opt.Storage {
	case "", StorageLocal:
	case StorageS3:
		if s3, err = startS3(opt.S3, opt.Dir); err != nil {
			return res, err
		}
		defer s3.stop()
		fmt.Fprintf(progress, "payload storage: %s\n", s3.describe())
	default:
		return res, fmt.Errorf("loadtest: -storage %q: want local or s3", opt.Storage)
	}
	for _, p := range []*as2Peer{a, b} {
		in, err := NewInstance(opt.Bin, filepath.Join(opt.Dir, p.party), "")
		if err != nil {
			return res, err
		}
		if s3 != nil {
			in.Env = s3.env
		}
		if err := in.CreateToken(ctx, "loadtest"); err != nil {
			return res, err
		}
		if err := in.Start(ctx); err != nil {
			return res, err
		}
		defer in.Kill()
		p.Instance = in
		if s3 != nil {
			if err := useS3(ctx, in, s3, p.party+"/", progress); err != nil {
				return res, fmt.Errorf("%s: %w\n%s", strings.ToUpper(p.party), err, in.Logs())
			}
		}
	}
	status, body, err := a.Fetch(ctx, "/api/v1/as2/remote-profiles")
	if err != nil {
		return res, err
	}
	if status != http.StatusOK {
		return res, fmt.Errorf("GET /api/v1/as2/remote-profiles: %d: %s", status, bytes.TrimSpace(body))
	}
	fmt.Fprintln(progress, "setting up A and B: keys, receivers, partners, AS2 profiles")
	if err := setUpAS2(ctx, a, b, opt.Profiles[0], opt.Concurrency); err != nil {
		return res, fmt.Errorf("set up the instances: %w\nA: %s\nB: %s", err, a.Logs(), b.Logs())
	}
	if crashes != nil {
		if err := recoverFast(ctx, a, b); err != nil {
			return res, fmt.Errorf("set up the instances for kills: %w", err)
		}
	}
	if res.MessageLimitMiB, err = messageLimit(ctx, a, b); err != nil {
		return res, err
	}
	k := &as2Kills{plan: crashes, victim: victim}
	for i, prof := range opt.Profiles {
		fmt.Fprintf(progress, "round %d of %d: %s, %s MDN, %d KiB per file\n",
			i+1, len(opt.Profiles), prof.Protection(), prof.Receipt(), opt.SizeKiB)
		r, err := runAS2Round(ctx, a, b, opt, i+1, prof, k)
		if err != nil {
			return res, fmt.Errorf("round %d (%s): %w", i+1, prof, err)
		}
		res.Rounds = append(res.Rounds, r)
		k.before += opt.N
	}
	if res.Crashes, err = crashes.done(); err != nil {
		return res, err
	}
	for _, p := range []*as2Peer{a, b} {
		if _, err := p.Stop(2 * time.Minute); err != nil {
			return res, fmt.Errorf("stop %s: %w", strings.ToUpper(p.party), err)
		}
	}
	return res, nil
}

// setUpAS2 gives each instance a receiver port of its own, a key pair, the other as a
// partner with its certificate, a local profile and a remote profile, sets the senders'
// and receivers' concurrency when asked, and makes A's file poller take files as soon as
// they appear (the run renames complete files into place).
func setUpAS2(ctx context.Context, a, b *as2Peer, first AS2Profile, concurrency int) error {
	now := time.Now()
	for _, p := range []*as2Peer{a, b} {
		var err error
		if p.id, err = newIdentity(p.as2ID, now); err != nil {
			return err
		}
		if p.port, err = freePort(); err != nil {
			return err
		}
		if err := moveReceiver(ctx, p, concurrency); err != nil {
			return fmt.Errorf("%s: %w", p.as2ID, err)
		}
		if concurrency > 0 {
			err := configure(ctx, p, "as2-sender", "as2_sender_default", func(cfg map[string]any) {
				cfg["max_concurrent"] = concurrency
			}, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", p.as2ID, err)
			}
		}
	}
	for _, pair := range [][2]*as2Peer{{a, b}, {b, a}} {
		self, other := pair[0], pair[1]
		var err error
		if self.ownCert, err = uploadCertificate(ctx, self.Instance, "own.pem", self.id.bundle(), true); err != nil {
			return fmt.Errorf("%s: own certificate: %w", self.as2ID, err)
		}
		if self.partnerCert, err = uploadCertificate(ctx, self.Instance, "partner.pem", other.id.certPEM, false); err != nil {
			return fmt.Errorf("%s: partner certificate: %w", self.as2ID, err)
		}
	}
	for _, pair := range [][2]*as2Peer{{a, b}, {b, a}} {
		self, other := pair[0], pair[1]
		party := map[string]any{"name": other.party, "display_name": strings.ToUpper(other.party)}
		if err := self.API(ctx, "POST", "/api/v1/partners", party, nil); err != nil {
			return err
		}
		local := map[string]any{
			"organization": "local", "as2_id": self.as2ID,
			"signing_certificate_id": self.ownCert, "decryption_certificate_id": self.ownCert,
		}
		if self.maxMiB > 0 {
			local["max_message_size_mib"] = self.maxMiB
		}
		if err := self.API(ctx, "POST", "/api/v1/as2/local-profiles", local, nil); err != nil {
			return err
		}
		if err := self.API(ctx, "POST", "/api/v1/as2/remote-profiles", remoteProfile(self, other, first), nil); err != nil {
			return err
		}
	}
	return a.pollFast(ctx)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// configure changes a plugin instance's config, restarts it and waits until it runs and
// ready says so.
func configure(ctx context.Context, p *as2Peer, typ, name string, change func(cfg map[string]any), ready func() bool) error {
	cfgPath := "/api/v1/plugins/configs/" + typ + "/" + name
	var cfg map[string]any
	if err := p.API(ctx, "GET", cfgPath, nil, &cfg); err != nil {
		return err
	}
	change(cfg)
	if err := p.API(ctx, "PUT", cfgPath, cfg, nil); err != nil {
		return err
	}
	if err := p.API(ctx, "POST", "/api/v1/services/"+typ+"/"+name+"/restart", map[string]any{}, nil); err != nil {
		return err
	}
	var last string
	return poll(ctx, 20*time.Millisecond, func() (bool, error) {
		var list struct {
			Services []struct {
				Name  string `json:"name"`
				State string `json:"state"`
				Error string `json:"error"`
			} `json:"services"`
		}
		if err := p.API(ctx, "GET", "/api/v1/services?limit=1000", nil, &list); err != nil {
			return false, err
		}
		for _, s := range list.Services {
			if s.Name == name {
				last = s.State + " " + s.Error
				if s.State != "running" {
					return false, nil
				}
			}
		}
		return ready == nil || ready(), nil
	}, func() error {
		return fmt.Errorf("%s %s did not run after its config changed (last state: %s)", typ, name, last)
	})
}

// moveReceiver puts the instance's AS2 receiver on its own port (both instances start
// with the default one), taking at least concurrency requests at once (from one address
// and partner), and waits until
// it answers there.
func moveReceiver(ctx context.Context, p *as2Peer, concurrency int) error {
	return configure(ctx, p, "as2-receiver", "as2_receiver_default", func(cfg map[string]any) {
		cfg["bind"] = "127.0.0.1"
		cfg["port"] = p.port
		// The sender's requests all come from one address and one partner.
		for _, k := range []string{"max_concurrent_requests", "max_requests_per_address", "max_requests_per_partner"} {
			if n, _ := cfg[k].(float64); int(n) < concurrency {
				cfg[k] = concurrency
			}
		}
		if p.maxMiB > 0 {
			cfg["max_body_mib"] = p.maxMiB
		}
	}, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

func uploadCertificate(ctx context.Context, in *Instance, name string, pemData []byte, withKey bool) (int64, error) {
	var out struct {
		Certificates []struct {
			ID            int64 `json:"id"`
			HasPrivateKey bool  `json:"has_private_key"`
		} `json:"certificates"`
	}
	if err := in.Upload(ctx, "/api/v1/certificates", name, pemData, &out); err != nil {
		return 0, err
	}
	if len(out.Certificates) != 1 || out.Certificates[0].HasPrivateKey != withKey {
		return 0, fmt.Errorf("upload answered %+v, want one certificate with private key %t", out.Certificates, withKey)
	}
	return out.Certificates[0].ID, nil
}

// remoteProfile is self's profile of other for a round: the outbound choices are the
// round's protection, and the inbound requirements ask exactly that protection, so
// either side refuses a message the profile leaves unprotected.
func remoteProfile(self, other *as2Peer, p AS2Profile) map[string]any {
	sign, encrypt := "none", "none"
	if p.Sign {
		sign = "sha256"
	}
	if p.Encrypt {
		encrypt = "aes256-cbc"
	}
	prof := map[string]any{
		"partner":                 other.party,
		"as2_id":                  other.as2ID,
		"endpoint_url":            other.receiverURL(),
		"partner_certificate_ids": []int64{self.partnerCert},
		"compress":                p.Compress,
		"signing_algorithm":       sign,
		"encryption_algorithm":    encrypt,
		"mdn_mode":                p.MDN,
		"signed_mdn":              p.SignedMDN,
		"mdn_mic_algorithm":       "sha256",
		"require_signed":          p.Sign,
		"require_encrypted":       p.Encrypt,
		"async_mdn_url":           self.mdnURL(),
	}
	if self.maxMiB > 0 {
		prof["max_message_size_mib"] = self.maxMiB
	}
	return prof
}

// setRemoteProfile switches self's profile of other to a round's protection: the whole
// stored object comes back with the round's fields changed.
func setRemoteProfile(ctx context.Context, self, other *as2Peer, p AS2Profile) error {
	return changeRemoteProfile(ctx, self, other, func(cur map[string]any) {
		for k, v := range remoteProfile(self, other, p) {
			cur[k] = v
		}
	})
}

// changeRemoteProfile changes self's stored profile of other and puts it back whole.
func changeRemoteProfile(ctx context.Context, self, other *as2Peer, change func(cur map[string]any)) error {
	path := "/api/v1/as2/remote-profiles/" + other.party
	var cur map[string]any
	if err := self.API(ctx, "GET", path, nil, &cur); err != nil {
		return err
	}
	change(cur)
	// Fields the server derives stay out: partner_certificate_id is the view's pick
	// among partner_certificate_ids, the times are the store's.
	delete(cur, "partner_certificate_id")
	delete(cur, "created_at")
	delete(cur, "updated_at")
	return self.API(ctx, "PUT", path, cur, nil)
}

// as2Doc is one dropped file; done is when both B's file and A's delivered state were
// seen.
type as2Doc struct {
	name    string
	size    int64
	sum     [32]byte
	dropped time.Time
	seen    time.Time // in B's inbox
	done    time.Time
}

// listedMessage is what a message list entry tells the checks.
type listedMessage struct {
	ID               int64     `json:"id"`
	Status           string    `json:"status"`
	From             string    `json:"from"`
	To               string    `json:"to"`
	OriginalFileName string    `json:"original_file_name"`
	Size             int64     `json:"size"`
	SHA256           string    `json:"sha256"`
	UpdatedAt        time.Time `json:"updated_at"`
}

func runAS2Round(ctx context.Context, a, b *as2Peer, opt AS2Options, round int, prof AS2Profile, k *as2Kills) (AS2Round, error) {
	res := AS2Round{Profile: prof, N: opt.N}
	for _, pair := range [][2]*as2Peer{{a, b}, {b, a}} {
		if err := setRemoteProfile(ctx, pair[0], pair[1], prof); err != nil {
			return res, fmt.Errorf("%s: set the remote profile: %w", pair[0].as2ID, err)
		}
	}
	// Names carry the round, so a round's messages are told from earlier ones by a
	// substring of their file name ("round1-" is no substring of "round11-").
	tag := fmt.Sprintf("round%d-", round)
	outbox := filepath.Join(a.DataDir, "outbox", b.party)
	inbox := filepath.Join(b.DataDir, "inbox", a.party)
	if err := os.MkdirAll(outbox, 0o750); err != nil {
		return res, err
	}
	for _, p := range []*as2Peer{a, b} {
		if err := p.ResetPeakRSS(); err != nil {
			res.PeakSinceStart = true
		}
	}
	since := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
	cpuA0, err := a.CPU()
	if err != nil {
		return res, err
	}
	cpuB0, err := b.CPU()
	if err != nil {
		return res, err
	}
	// A killed process's CPU time and peak RSS come from its final state; its successor
	// counts from zero.
	var deadPeakA, deadPeakB int64
	dead := func(st *os.ProcessState) {
		used, peak := usage(st)
		if k.victim == a {
			res.CPUA, cpuA0, deadPeakA = res.CPUA+used-cpuA0, 0, max(deadPeakA, peak)
		} else {
			res.CPUB, cpuB0, deadPeakB = res.CPUB+used-cpuB0, 0, max(deadPeakB, peak)
		}
	}

	docs := make([]*as2Doc, opt.N)
	var mu sync.Mutex
	dropDone := make(chan error, 1)
	start := time.Now()
	go func() { dropDone <- dropFiles(ctx, outbox, tag, opt, round, docs, &mu) }()

	byName := map[string]*as2Doc{}
	known, seen, deliveredA := 0, 0, 0
	dropped := false
	// B's inbox is listed every 100 ms, A's delivered count is read every 500 ms until
	// every file is in B's inbox and every 100 ms after, and failures are looked for
	// every 2 s: fine enough to end a round promptly, cheap enough not to take CPU from
	// the gateways (each query searches the messages by name). The times come from the
	// files and from A itself, not from the polling: a file counts as in B's inbox from
	// its modification time (B writes it, then links it into place), a message as
	// delivered from A's record.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; seen < opt.N || deliveredA < opt.N; n++ {
		select {
		case err := <-dropDone:
			if err != nil {
				return res, fmt.Errorf("drop files: %w", err)
			}
			dropped = true
		case <-ctx.Done():
			return res, fmt.Errorf("%d of %d files in B's inbox and %d delivered on A before the time-out\nA: %s\nB: %s",
				seen, opt.N, deliveredA, a.Logs(), b.Logs())
		case <-tick.C:
		}
		names, err := listNames(inbox)
		if err != nil {
			return res, err
		}
		mu.Lock()
		for ; known < len(docs) && docs[known] != nil; known++ {
			byName[docs[known].name] = docs[known]
		}
		mu.Unlock()
		for _, name := range names {
			d := byName[name]
			if d == nil || !d.seen.IsZero() {
				continue
			}
			info, err := os.Lstat(filepath.Join(inbox, name))
			if err != nil {
				return res, fmt.Errorf("B's inbox: %w", err)
			}
			d.seen = info.ModTime()
			seen++
			k.plan.arrived(d.seen)
		}
		if k.plan.due(k.before + seen) {
			if err := k.plan.crash(ctx, k.victim.Instance, k.before+seen, dead); err != nil {
				return res, err
			}
		}
		if n%5 == 0 || seen == opt.N {
			if deliveredA, err = countMessages(ctx, a.Instance, tag, since, "delivered"); err != nil {
				return res, err
			}
		}
		if n%20 == 0 {
			if err := checkNoFailures(ctx, a, b, tag, since); err != nil {
				return res, err
			}
		}
	}
	if !dropped {
		if err := <-dropDone; err != nil {
			return res, err
		}
	}
	if k.plan != nil {
		for i := range k.plan.crashes {
			for _, d := range docs {
				k.plan.crashes[i].catchUp(d.dropped, d.seen)
			}
		}
	}
	// Read before the checks below, which cost both processes CPU of their own.
	cpuA1, err := a.CPU()
	if err != nil {
		return res, err
	}
	cpuB1, err := b.CPU()
	if err != nil {
		return res, err
	}
	res.CPUA, res.CPUB = res.CPUA+cpuA1-cpuA0, res.CPUB+cpuB1-cpuB0
	if res.PeakRSSA, err = a.PeakRSS(); err != nil {
		return res, err
	}
	if res.PeakRSSB, err = b.PeakRSS(); err != nil {
		return res, err
	}
	res.PeakRSSA, res.PeakRSSB = max(res.PeakRSSA, deadPeakA), max(res.PeakRSSB, deadPeakB)

	// B records its file writer's outcomes in batches, a moment after the files are in
	// place; its messages are checked once that has happened.
	for {
		deliveredB, err := countMessages(ctx, b.Instance, tag, since, "delivered")
		if err != nil {
			return res, err
		}
		if deliveredB >= opt.N {
			break
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("B: %d of %d messages delivered before the time-out", deliveredB, opt.N)
		case <-tick.C:
		}
	}
	if res.FilesVerified, err = verifyRoundInbox(inbox, outbox, tag, docs); err != nil {
		return res, err
	}
	sent, err := roundMessages(ctx, a.Instance, tag, since, docs, "local", b.party)
	if err != nil {
		return res, fmt.Errorf("A: %w", err)
	}
	if res.MDNsOnA, err = checkMDNs(ctx, a.Instance, sent, true, prof.SignedMDN); err != nil {
		return res, fmt.Errorf("A: %w", err)
	}
	received, err := roundMessages(ctx, b.Instance, tag, since, docs, a.party, "local")
	if err != nil {
		return res, fmt.Errorf("B: %w", err)
	}
	if res.MDNsOnB, err = checkMDNs(ctx, b.Instance, received, false, prof.SignedMDN); err != nil {
		return res, fmt.Errorf("B: %w", err)
	}

	var end time.Time
	lat := make([]time.Duration, len(docs))
	for i, d := range docs {
		d.done = d.seen
		if at := sent[d.name].UpdatedAt; at.After(d.done) {
			d.done = at
		}
		if d.done.After(end) {
			end = d.done
		}
		lat[i] = d.done.Sub(d.dropped)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	res.Elapsed = end.Sub(start)
	res.PerSecond = float64(opt.N) / res.Elapsed.Seconds()
	res.P50, res.P95, res.P99 = pct(0.50), pct(0.95), pct(0.99)
	return res, nil
}

// listNames lists a directory's names unsorted, cheaper than os.ReadDir for a loop that
// looks at a growing inbox every few milliseconds; a missing directory is empty.
func listNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// dropFiles writes the round's files into the outbox, each under a temporary dot name
// first and then renamed, so the poller never sees a partial file.
func dropFiles(ctx context.Context, outbox, tag string, opt AS2Options, round int, docs []*as2Doc, mu *sync.Mutex) error {
	var pace *time.Ticker
	if opt.Rate > 0 {
		pace = time.NewTicker(time.Duration(float64(time.Second) / opt.Rate))
		defer pace.Stop()
	}
	rnd := rand.New(rand.NewPCG(uint64(round), 2))
	for i := range docs {
		if pace != nil {
			select {
			case <-pace.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		d := &as2Doc{name: fmt.Sprintf("%s%06d.edi", tag, i), size: int64(opt.SizeKiB) * 1024}
		tmp := filepath.Join(outbox, "."+d.name+".part")
		var err error
		if d.sum, err = writeRandomFile(tmp, d.size, rnd); err != nil {
			return err
		}
		mu.Lock()
		d.dropped = time.Now()
		docs[i] = d
		mu.Unlock()
		if err := os.Rename(tmp, filepath.Join(outbox, d.name)); err != nil {
			return err
		}
	}
	return nil
}

// writeRandomFile writes size random bytes to a new file, a chunk at a time, and returns
// their SHA-256: a file of a gigabyte is never held in memory.
func writeRandomFile(name string, size int64, rnd *rand.Rand) ([32]byte, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	chunk := make([]byte, min(size, 1<<20))
	for left := size; left > 0; left -= int64(len(chunk)) {
		chunk = chunk[:min(int64(len(chunk)), left)]
		for j := 0; j < len(chunk); j += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], rnd.Uint64())
			copy(chunk[j:], w[:])
		}
		h.Write(chunk)
		if _, err := f.Write(chunk); err != nil {
			return [32]byte{}, err
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, f.Close()
}

// messageQuery is a message list query for one round.
func messageQuery(tag string, since time.Time, status string, limit, offset int) string {
	q := url.Values{}
	q.Set("q", tag)
	q.Set("since", since.Format(time.RFC3339))
	if status != "" {
		q.Set("status", status)
	}
	q.Set("limit", fmt.Sprint(limit))
	if offset > 0 {
		q.Set("offset", fmt.Sprint(offset))
	}
	return "/api/v1/messages?" + q.Encode()
}

func countMessages(ctx context.Context, in *Instance, tag string, since time.Time, status string) (int, error) {
	var out listAnswer
	if err := in.API(ctx, "GET", messageQuery(tag, since, status, 1, 0), nil, &out); err != nil {
		return 0, err
	}
	return out.Total, nil
}

// checkNoFailures ends a round early when a message of it has settled in a state that
// waiting does not change, naming the reason its delivery gave.
func checkNoFailures(ctx context.Context, a, b *as2Peer, tag string, since time.Time) error {
	for _, p := range []*as2Peer{a, b} {
		for _, status := range []string{"error", "refused", "not_routed", "stalled"} {
			var out struct {
				Messages []listedMessage `json:"messages"`
				Total    int             `json:"total"`
			}
			if err := p.API(ctx, "GET", messageQuery(tag, since, status, 1, 0), nil, &out); err != nil {
				return err
			}
			if out.Total == 0 {
				continue
			}
			reason := ""
			var detail struct {
				Deliveries []struct {
					Target    string `json:"target"`
					State     string `json:"state"`
					LastError string `json:"last_error"`
				} `json:"deliveries"`
			}
			if err := p.API(ctx, "GET", fmt.Sprintf("/api/v1/messages/%d", out.Messages[0].ID), nil, &detail); err == nil {
				for _, d := range detail.Deliveries {
					reason += fmt.Sprintf("; delivery to %s %s: %s", d.Target, d.State, d.LastError)
				}
			}
			return fmt.Errorf("%s: %d messages are %s (message %d %s%s)\n%s",
				p.as2ID, out.Total, status, out.Messages[0].ID, out.Messages[0].OriginalFileName, reason, p.Logs())
		}
	}
	return nil
}

// verifyRoundInbox checks that B's inbox holds each of the round's files with the bytes
// dropped and nothing else of the round, and that A's outbox kept none of them.
func verifyRoundInbox(inbox, outbox, tag string, docs []*as2Doc) (int, error) {
	entries, err := os.ReadDir(inbox)
	if err != nil {
		return 0, err
	}
	want := make(map[string]*as2Doc, len(docs))
	for _, d := range docs {
		want[d.name] = d
	}
	var extra []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tag) && want[e.Name()] == nil {
			extra = append(extra, e.Name())
		}
	}
	if len(extra) > 0 {
		return 0, fmt.Errorf("B's inbox holds unexpected files %v", extra)
	}
	verified := 0
	for _, d := range docs {
		sum, n, err := hashFile(filepath.Join(inbox, d.name))
		if err != nil {
			return verified, err
		}
		if n != d.size || sum != d.sum {
			return verified, fmt.Errorf("%s arrived in B's inbox with different bytes (%d bytes, %d dropped)", d.name, n, d.size)
		}
		verified++
	}
	left, err := os.ReadDir(outbox)
	if err != nil {
		return verified, err
	}
	for _, e := range left {
		if strings.HasPrefix(e.Name(), tag) {
			return verified, fmt.Errorf("%s is still in A's outbox after its delivery", e.Name())
		}
	}
	return verified, nil
}

func hashFile(path string) ([32]byte, int64, error) {
	var sum [32]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return sum, n, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, n, nil
}

// roundMessages lists the round's messages on one instance and checks there is exactly
// one per file, from and to the expected parties, with the file's size and digest, and
// delivered.
func roundMessages(ctx context.Context, in *Instance, tag string, since time.Time, docs []*as2Doc, from, to string) (map[string]listedMessage, error) {
	const pageSize = 1000
	out := make(map[string]listedMessage, len(docs))
	for offset := 0; ; offset += pageSize {
		var page struct {
			Messages []listedMessage `json:"messages"`
			Total    int             `json:"total"`
		}
		if err := in.API(ctx, "GET", messageQuery(tag, since, "", pageSize, offset), nil, &page); err != nil {
			return nil, err
		}
		if page.Total != len(docs) {
			return nil, fmt.Errorf("%d messages for the round's %d files", page.Total, len(docs))
		}
		for _, m := range page.Messages {
			if _, dup := out[m.OriginalFileName]; dup {
				return nil, fmt.Errorf("two messages for %s", m.OriginalFileName)
			}
			out[m.OriginalFileName] = m
		}
		if len(page.Messages) < pageSize {
			break
		}
	}
	for _, d := range docs {
		m, ok := out[d.name]
		switch {
		case !ok:
			return nil, fmt.Errorf("no message for %s", d.name)
		case m.Status != "delivered":
			return nil, fmt.Errorf("message %d (%s) is %s", m.ID, d.name, m.Status)
		case m.From != from || m.To != to:
			return nil, fmt.Errorf("message %d (%s) is from %s to %s, want %s to %s", m.ID, d.name, m.From, m.To, from, to)
		case m.Size != d.size || !strings.EqualFold(m.SHA256, fmt.Sprintf("%x", d.sum)):
			return nil, fmt.Errorf("message %d (%s) records %d bytes with SHA-256 %s, not the file dropped", m.ID, d.name, m.Size, m.SHA256)
		}
	}
	return out, nil
}

// checkMDNs checks every message's deliveries are delivered and that it stores the MDN
// as its receipt stage, read back in full: on the sender, the MDN it received; on the
// receiver, the MDN it sent, next to the body as it arrived.
func checkMDNs(ctx context.Context, in *Instance, msgs map[string]listedMessage, sender, signedMDN bool) (int, error) {
	ids := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	var mu sync.Mutex
	found := 0
	// A few requests at a time: the check is not measured, and a long round's thousands
	// of messages are checked in seconds.
	err := forEach(ctx, len(ids), 8, func(i int) error {
		id := ids[i]
		var detail struct {
			Deliveries []struct {
				Target    string `json:"target"`
				State     string `json:"state"`
				LastError string `json:"last_error"`
			} `json:"deliveries"`
			Payloads []struct {
				Stage string `json:"stage"`
				Size  int64  `json:"size"`
			} `json:"payloads"`
		}
		if err := in.API(ctx, "GET", fmt.Sprintf("/api/v1/messages/%d", id), nil, &detail); err != nil {
			return err
		}
		if len(detail.Deliveries) == 0 {
			return fmt.Errorf("message %d has no delivery", id)
		}
		for _, d := range detail.Deliveries {
			if d.State != "delivered" {
				return fmt.Errorf("message %d: delivery to %s is %s: %s", id, d.Target, d.State, d.LastError)
			}
		}
		stages := map[string]int64{}
		for _, p := range detail.Payloads {
			stages[p.Stage] = p.Size
		}
		if stages["receipt"] <= 0 {
			return fmt.Errorf("message %d has no MDN (receipt stage)", id)
		}
		if !sender && stages["received"] <= 0 {
			return fmt.Errorf("message %d has no received stage", id)
		}
		status, body, err := in.Fetch(ctx, fmt.Sprintf("/api/v1/messages/%d/payload?stage=receipt", id))
		if err != nil {
			return err
		}
		if status != http.StatusOK || len(body) == 0 {
			return fmt.Errorf("message %d: MDN download answered %d with %d bytes", id, status, len(body))
		}
		if err := checkMDN(body, signedMDN); err != nil {
			return fmt.Errorf("message %d: %w", id, err)
		}
		mu.Lock()
		found++
		mu.Unlock()
		return nil
	})
	return found, err
}

// checkMDN reads a stored MDN (a MIME entity) as far as the round needs: signed when it
// was asked to be, and reporting the message processed without a warning or failure.
// The sender checked the signature and MIC before it called the delivery delivered.
func checkMDN(entity []byte, signed bool) error {
	text := strings.ReplaceAll(string(entity), "\r\n", "\n")
	header, _, _ := strings.Cut(text, "\n\n")
	isSigned := strings.Contains(strings.ToLower(header), "multipart/signed")
	if isSigned != signed {
		return fmt.Errorf("MDN signed %t, asked for signed %t", isSigned, signed)
	}
	for line := range strings.Lines(text) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(name, "Disposition") {
			continue
		}
		_, disposition, _ := strings.Cut(value, ";")
		if d := strings.TrimSpace(disposition); d != "processed" {
			return fmt.Errorf("MDN disposition %q, want processed", d)
		}
		return nil
	}
	return errors.New("the receipt holds no MDN disposition")
}

// forEach runs fn for 0..n-1 on up to workers goroutines and returns the first error.
func forEach(ctx context.Context, n, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// poll calls check until it reports done, an error, or the context ends (then the
// error of fail).
func poll(ctx context.Context, every time.Duration, check func() (bool, error), fail func() error) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(fail(), ctx.Err())
		case <-t.C:
		}
	}
}

// messageLimit reads back, from both instances, the limits a message meets on its way
// (each receiver's max_body_mib, each organization's and partner's AS2 profile's
// max_message_size_mib) and returns the smallest.
func messageLimit(ctx context.Context, peers ...*as2Peer) (int, error) {
	limit := 0
	for _, p := range peers {
		var receiver struct {
			MaxBodyMiB int `json:"max_body_mib"`
		}
		var local, remote struct {
			MaxMessageSizeMiB int `json:"max_message_size_mib"`
		}
		other := "b"
		if p.party == "b" {
			other = "a"
		}
		for _, r := range []struct {
			path string
			dst  any
		}{
			{"/api/v1/plugins/configs/as2-receiver/as2_receiver_default", &receiver},
			{"/api/v1/as2/local-profiles/local", &local},
			{"/api/v1/as2/remote-profiles/" + other, &remote},
		} {
			if err := p.API(ctx, "GET", r.path, nil, r.dst); err != nil {
				return 0, fmt.Errorf("%s: read the message limits: %w", strings.ToUpper(p.party), err)
			}
		}
		for _, v := range []int{receiver.MaxBodyMiB, local.MaxMessageSizeMiB, remote.MaxMessageSizeMiB} {
			if limit == 0 || v < limit {
				limit = v
			}
		}
	}
	return limit, nil
}
