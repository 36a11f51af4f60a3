package profile

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// CacheTTL bounds the age of a resolved profile pair. Writes through this process's Store
// drop the cache at once; the bound is for writes by other processes (distributed mode).
const CacheTTL = 30 * time.Second

// maxCacheEntries bounds each cache, since inbound keys come from the wire (AS2-From and
// AS2-To of anyone who can reach the receiver).
const maxCacheEntries = 4096

// Dir resolves profiles with their certificates opened, and caches the results, so the
// hot path does no database read per message. Results are shared between callers and
// must not be modified.
type Dir struct {
	store *Store
	certs module.Certificates
	core  persistence.Store
	now   func() time.Time

	mu       sync.Mutex
	gen      uint64 // counts invalidations, so a resolve racing one is not cached
	inbound  map[[2]AS2ID]entry[Inbound]
	parties  map[[2]persistence.PartyName]entry[Inbound]
	outbound map[[2]persistence.PartyName]entry[Outbound]
}

var _ Directory = (*Dir)(nil)

type entry[T any] struct {
	v   T
	err error
	at  time.Time
}

// NewDirectory returns a directory over store, opening keys with certs and reading plain
// certificates from core. It drops its cache whenever store writes a profile.
func NewDirectory(store *Store, certs module.Certificates, core persistence.Store) *Dir {
	d := &Dir{store: store, certs: certs, core: core, now: time.Now}
	d.Invalidate()
	store.OnChange(d.Invalidate)
	return d
}

// Invalidate drops every cached result.
func (d *Dir) Invalidate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	d.inbound = map[[2]AS2ID]entry[Inbound]{}
	d.parties = map[[2]persistence.PartyName]entry[Inbound]{}
	d.outbound = map[[2]persistence.PartyName]entry[Outbound]{}
}

// cached returns the entry of key in the map pick selects when it is fresh, else resolves
// it. Missing profiles are cached too, so unknown AS2 ids on the wire cost no read either.
func cached[K comparable, T any](d *Dir, pick func(*Dir) map[K]entry[T], key K, resolve func() (T, error)) (T, error) {
	d.mu.Lock()
	now := d.now()
	if e, ok := pick(d)[key]; ok && !now.Before(e.at) && now.Sub(e.at) < CacheTTL {
		d.mu.Unlock()
		return e.v, e.err
	}
	gen := d.gen
	d.mu.Unlock()

	v, err := resolve()
	if err == nil || errors.Is(err, persistence.ErrNotFound) {
		d.mu.Lock()
		if d.gen == gen {
			m := pick(d)
			if len(m) >= maxCacheEntries {
				clear(m)
			}
			m[key] = entry[T]{v: v, err: err, at: now}
		}
		d.mu.Unlock()
	}
	return v, err
}

// Inbound implements Directory.
func (d *Dir) Inbound(ctx context.Context, from, to AS2ID) (Inbound, error) {
	return cached(d, func(d *Dir) map[[2]AS2ID]entry[Inbound] { return d.inbound }, [2]AS2ID{from, to},
		func() (Inbound, error) {
			l, r, err := d.store.pairByAS2IDs(ctx, to, from)
			if err != nil {
				return Inbound{}, err
			}
			return d.openInbound(ctx, l, r)
		})
}

// InboundByParties implements Directory.
func (d *Dir) InboundByParties(ctx context.Context, org, partner string) (Inbound, error) {
	key := [2]persistence.PartyName{persistence.PartyName(org), persistence.PartyName(partner)}
	return cached(d, func(d *Dir) map[[2]persistence.PartyName]entry[Inbound] { return d.parties }, key,
		func() (Inbound, error) {
			l, r, err := d.store.pairByParties(ctx, key[0], key[1])
			if err != nil {
				return Inbound{}, err
			}
			return d.openInbound(ctx, l, r)
		})
}

// Outbound implements Directory.
func (d *Dir) Outbound(ctx context.Context, org, partner string) (Outbound, error) {
	key := [2]persistence.PartyName{persistence.PartyName(org), persistence.PartyName(partner)}
	return cached(d, func(d *Dir) map[[2]persistence.PartyName]entry[Outbound] { return d.outbound }, key,
		func() (Outbound, error) {
			l, r, err := d.store.pairByParties(ctx, key[0], key[1])
			if err != nil {
				return Outbound{}, err
			}
			return d.openOutbound(ctx, l, r)
		})
}

func (d *Dir) openInbound(ctx context.Context, l Local, r Remote) (Inbound, error) {
	in := Inbound{Local: l, Remote: r}
	for _, id := range decryptionIDs(l, r) {
		cert, key, err := d.certs.Decrypter(ctx, id)
		if err != nil {
			return Inbound{}, fmt.Errorf("open decryption certificate %d of %q: %w", id, l.Organization, err)
		}
		in.Decryption = append(in.Decryption, cms.Recipient{Certificate: cert, Key: key})
	}
	var err error
	if in.PartnerCertificates, err = d.parse(ctx, r.PartnerCertificateIDs); err != nil {
		return Inbound{}, fmt.Errorf("partner %q: %w", r.Partner, err)
	}
	if id := mdnSigningID(l, r); id != 0 {
		digest := r.SigningAlgorithm.Digest()
		if digest == "" {
			digest = cms.SHA256
		}
		if in.Signer, err = d.signer(ctx, id, digest, l.IncludeChain); err != nil {
			return Inbound{}, fmt.Errorf("open signing certificate %d of %q: %w", id, l.Organization, err)
		}
		in.Signer.AlgorithmProtection = r.AlgorithmProtection
	}
	return in, nil
}

func (d *Dir) openOutbound(ctx context.Context, l Local, r Remote) (Outbound, error) {
	out := Outbound{Local: l, Remote: r}
	var err error
	if r.SigningAlgorithm != SignNone {
		id := signingID(l, r)
		if id == 0 {
			return Outbound{}, fmt.Errorf("messages to %q are signed, but organization %q has no signing certificate (signing_certificate_id of its local profile or our_signing_certificate_id of the partner's)",
				r.Partner, l.Organization)
		}
		if out.Signer, err = d.signer(ctx, id, r.SigningAlgorithm.Digest(), l.IncludeChain); err != nil {
			return Outbound{}, fmt.Errorf("open signing certificate %d of %q: %w", id, l.Organization, err)
		}
		out.Signer.AlgorithmProtection = r.AlgorithmProtection
	}
	if out.PartnerCertificates, err = d.parse(ctx, r.PartnerCertificateIDs); err != nil {
		return Outbound{}, fmt.Errorf("partner %q: %w", r.Partner, err)
	}
	if r.EncryptionAlgorithm != EncryptNone {
		if out.EncryptTo = EncryptionCertificate(out.PartnerCertificates, d.now()); out.EncryptTo == nil {
			return Outbound{}, fmt.Errorf("messages to %q are encrypted, but none of its certificates is valid now with an RSA key", r.Partner)
		}
	}
	if len(r.TLSTrustCertificateIDs) > 0 {
		extra, err := d.parse(ctx, r.TLSTrustCertificateIDs)
		if err != nil {
			return Outbound{}, fmt.Errorf("TLS trust of partner %q: %w", r.Partner, err)
		}
		// tls_trust profile trusts the listed roots alone.
		out.Roots = x509.NewCertPool()
		if r.TLSTrust != TLSTrustProfile {
			if sys, err := x509.SystemCertPool(); err == nil {
				out.Roots = sys
			}
		}
		for _, c := range extra {
			out.Roots.AddCert(c)
		}
	}
	return out, nil
}

// signer opens a signing key; with chain, the signature carries the intermediates the
// certificate store holds above it.
func (d *Dir) signer(ctx context.Context, id int64, digest cms.DigestAlgorithm, chain bool) (*mime.Signer, error) {
	cert, key, err := d.certs.Signer(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &mime.Signer{Certificate: cert, Key: key, Digest: digest}
	if chain {
		if s.Chain, err = issuerChain(ctx, d.core, cert); err != nil {
			return nil, fmt.Errorf("include_chain: %w", err)
		}
	}
	return s, nil
}

// parse reads certificates without keys.
func (d *Dir) parse(ctx context.Context, ids []int64) ([]*x509.Certificate, error) {
	out := make([]*x509.Certificate, 0, len(ids))
	for _, id := range ids {
		rec, err := d.core.GetCertificate(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", id, err)
		}
		c, err := x509.ParseCertificate(rec.DER)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: stored certificate is damaged: %w", id, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// signingID is the certificate that signs for the organization towards the partner, or
// 0 for none: the partner's override, else the organization's own.
func signingID(l Local, r Remote) int64 {
	if r.OurSigningCertificateID != nil {
		return *r.OurSigningCertificateID
	}
	return l.SigningCertificateID
}

// mdnSigningID is the certificate that signs our MDNs to the partner, or 0 for none: the
// organization's MDN signing certificate, else the one that signs its messages.
func mdnSigningID(l Local, r Remote) int64 {
	if l.MDNSigningCertificateID != nil {
		return *l.MDNSigningCertificateID
	}
	return signingID(l, r)
}

// decryptionIDs lists the keys that may open what the partner sends, the one the partner
// is expected to use first: the partner's override, then the organization's current and
// previous keys, so a message encrypted to a key being replaced still opens.
func decryptionIDs(l Local, r Remote) []int64 {
	var ids []int64
	add := func(id int64) {
		if id != 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if r.OurDecryptionCertificateID != nil {
		add(*r.OurDecryptionCertificateID)
	}
	add(l.DecryptionCertificateID)
	if l.PreviousDecryptionCertificateID != nil {
		add(*l.PreviousDecryptionCertificateID)
	}
	return ids
}

// EncryptionCertificate picks the certificate to encrypt to among a partner's: the one
// valid at now with the latest NotBefore (then the latest NotAfter), so a partner's new
// certificate takes over from its start date. Only RSA keys qualify, since key transport
// is RSA. It returns nil when none qualifies.
func EncryptionCertificate(certs []*x509.Certificate, now time.Time) *x509.Certificate {
	var best *x509.Certificate
	for _, c := range certs {
		if _, ok := c.PublicKey.(*rsa.PublicKey); !ok || now.Before(c.NotBefore) || now.After(c.NotAfter) {
			continue
		}
		if best == nil || c.NotBefore.After(best.NotBefore) ||
			c.NotBefore.Equal(best.NotBefore) && c.NotAfter.After(best.NotAfter) {
			best = c
		}
	}
	return best
}

// pairByAS2IDs reads the local profile with AS2 id to and the remote one with AS2 id
// from, in one snapshot.
func (s *Store) pairByAS2IDs(ctx context.Context, local, remote AS2ID) (Local, Remote, error) {
	var l Local
	var r Remote
	err := s.sql.Read(ctx, func(tx module.Tx) error {
		var err error
		if r, err = getRemote(ctx, tx, `as2_id = ?`, string(remote)); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no AS2 remote profile has AS2 id %q: %w", remote, persistence.ErrNotFound)
		} else if err != nil {
			return err
		}
		if l, err = getLocal(ctx, tx, `as2_id = ?`, string(local)); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no AS2 local profile has AS2 id %q: %w", local, persistence.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Local{}, Remote{}, fmt.Errorf("resolve AS2 profiles from %q to %q: %w", remote, local, err)
	}
	return l, r, nil
}

// pairByParties reads the local profile of org and the remote one of partner, in one
// snapshot.
func (s *Store) pairByParties(ctx context.Context, org, partner persistence.PartyName) (Local, Remote, error) {
	var l Local
	var r Remote
	err := s.sql.Read(ctx, func(tx module.Tx) error {
		var err error
		if l, err = getLocal(ctx, tx, `organization = ?`, string(org)); errors.Is(err, sql.ErrNoRows) {
			return notFoundParty(persistence.PartyOrganization, org, "local")
		} else if err != nil {
			return err
		}
		if r, err = getRemote(ctx, tx, `partner = ?`, string(partner)); errors.Is(err, sql.ErrNoRows) {
			return notFoundParty(persistence.PartyPartner, partner, "remote")
		}
		return err
	})
	if err != nil {
		return Local{}, Remote{}, fmt.Errorf("resolve AS2 profiles of %q and %q: %w", org, partner, err)
	}
	return l, r, nil
}
