package records

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// ManualSource is the source recorded on messages sent by hand without a source instance.
// No plugin instance may take this name.
const ManualSource persistence.InstanceName = "manual"

// SavePluginConfig decodes a plugin config object (name, enabled and the type's own
// fields) with module.Decode — the one rule set for plugin configs — and stores it. With
// name empty it creates the instance named in the body; otherwise it replaces the stored
// instance name of type typ (ErrNotFound if there is none of that type), and write-only
// fields the body leaves out keep their stored values.
func SavePluginConfig(ctx context.Context, st Store, s module.Sealer, typ persistence.PluginType, name persistence.InstanceName, body []byte) (persistence.PluginConfig, error) {
	var stored *persistence.PluginConfig
	if name != "" {
		rec, err := st.GetPluginConfig(ctx, name)
		if err != nil {
			return persistence.PluginConfig{}, err
		}
		if rec.Type != typ {
			return persistence.PluginConfig{}, fmt.Errorf("plugin config %s of type %s: %w", name, typ, persistence.ErrNotFound)
		}
		stored = &rec
	}
	in, err := module.Decode(typ, body, stored, s)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	if stored == nil && in.Name == ManualSource {
		return persistence.PluginConfig{}, fieldError("name", fmt.Sprintf("%q is reserved for messages sent by hand", ManualSource))
	}
	rec, err := module.Encode(in, s)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	var old []int64
	if stored != nil {
		prev, err := module.Load(*stored, s)
		if err != nil {
			return persistence.PluginConfig{}, err
		}
		old = certificateIDs(prev.Config)
	}
	return withCertificateUses(ctx, st, in.Name, in.Config, old, func() (persistence.PluginConfig, error) {
		if stored == nil {
			return st.CreatePluginConfig(ctx, rec)
		}
		rec.CreatedAt = stored.CreatedAt
		return st.UpdatePluginConfig(ctx, rec)
	})
}

// PluginCertificateUse is the kind of certificate use a plugin instance records.
const PluginCertificateUse = persistence.PluginCertificateUse

// withCertificateUses runs write with the certificates cfg names marked as used by the
// instance: before the write (the old and the new ones, so neither can be deleted in
// between) and after it (the new ones only). A failed write puts back the uses the
// stored record has.
func withCertificateUses(ctx context.Context, st Store, name persistence.InstanceName, cfg module.Config, old []int64, write func() (persistence.PluginConfig, error)) (persistence.PluginConfig, error) {
	var ids []int64
	if cu, ok := cfg.(module.CertificateUser); ok {
		fields := cu.CertificateFields()
		keys := make([]string, 0, len(fields))
		for f := range fields {
			keys = append(keys, f)
		}
		slices.Sort(keys)
		for _, f := range keys {
			id := fields[f]
			if _, err := st.GetCertificate(ctx, id); err != nil {
				if errors.Is(err, persistence.ErrNotFound) {
					return persistence.PluginConfig{}, fieldError(f, fmt.Sprintf("certificate %d does not exist", id))
				}
				return persistence.PluginConfig{}, err
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 && len(old) == 0 {
		return write()
	}
	if err := st.SetCertificateUses(ctx, PluginCertificateUse, string(name), union(old, ids)); err != nil {
		return persistence.PluginConfig{}, err
	}
	rec, err := write()
	final := ids
	if err != nil {
		final = old
	}
	if uerr := st.SetCertificateUses(context.WithoutCancel(ctx), PluginCertificateUse, string(name), final); uerr != nil && err == nil {
		err = uerr
	}
	return rec, err
}

// certificateIDs lists the certificates a config names.
func certificateIDs(cfg module.Config) []int64 {
	cu, ok := cfg.(module.CertificateUser)
	if !ok {
		return nil
	}
	var out []int64
	for _, id := range cu.CertificateFields() {
		out = append(out, id)
	}
	return out
}

func union(a, b []int64) []int64 {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// ReleaseCertificates clears the certificate uses of a deleted instance.
func ReleaseCertificates(ctx context.Context, st Store, name persistence.InstanceName) error {
	return st.SetCertificateUses(ctx, PluginCertificateUse, string(name), nil)
}
