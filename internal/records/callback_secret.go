package records

import (
	"context"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/stdwebhook"
)

// CallbackSecretStore is what the rules of callback secrets read and write.
type CallbackSecretStore interface {
	GetPluginConfig(ctx context.Context, name persistence.InstanceName) (persistence.PluginConfig, error)
	CreateCallbackSecret(ctx context.Context, target persistence.InstanceName, sealed []byte) (persistence.CallbackSecret, error)
}

var _ CallbackSecretStore = persistence.Store(nil)

// CallbackTarget accepts name as the target of status callbacks: an existing instance
// of a target plugin type. Every entry point (web UI, REST) checks through here.
func CallbackTarget(ctx context.Context, st CallbackSecretStore, name string) (persistence.InstanceName, error) {
	target, err := persistence.ParseInstanceName(name)
	if err != nil {
		return "", fieldError("target", err.Error())
	}
	if err := checkInstanceRole(ctx, st, "target", target, module.RoleTarget); err != nil {
		return "", err
	}
	return target, nil
}

// CreateCallbackSecret generates a Standard Webhooks secret (whsec_…) for the status
// callbacks of target, stores it sealed and returns the record and the secret, shown
// once.
func CreateCallbackSecret(ctx context.Context, st CallbackSecretStore, sealer module.Sealer, target string) (persistence.CallbackSecret, string, error) {
	name, err := CallbackTarget(ctx, st, target)
	if err != nil {
		return persistence.CallbackSecret{}, "", err
	}
	secret := stdwebhook.NewSecret()
	sealed, err := sealer.Seal([]byte(secret))
	if err != nil {
		return persistence.CallbackSecret{}, "", fmt.Errorf("seal callback secret: %w", err)
	}
	rec, err := st.CreateCallbackSecret(ctx, name, sealed)
	if err != nil {
		return persistence.CallbackSecret{}, "", err
	}
	return rec, secret, nil
}
