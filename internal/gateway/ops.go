package gateway

import (
	"context"

	"wharf/internal/api"
	"wharf/internal/persistence"
	"wharf/internal/ui"
)

// ops gives the REST API the gateway's operator actions.
type ops struct{ g *Gateway }

var (
	_ api.Ops            = ops{}
	_ ui.SessionActions  = ops{}
	_ api.PartnerResumer = ops{}
)

func (o ops) Redispatch(ctx context.Context, id int64, actor string) ([]persistence.Delivery, error) {
	return o.g.Dispatcher.Redispatch(ctx, id, actor)
}

func (o ops) Redeliver(ctx context.Context, id int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error) {
	return o.g.Dispatcher.Redeliver(ctx, id, mode, actor)
}

func (o ops) ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return o.g.Dispatcher.ResubmitDeliveries(ctx, ids, actor)
}

func (o ops) SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return o.g.Dispatcher.SkipDeliveries(ctx, ids, actor)
}

func (o ops) ResumePartner(ctx context.Context, partner persistence.PartyName, actor string) ([]persistence.Delivery, error) {
	return o.g.Dispatcher.ResumePartner(ctx, partner, actor)
}

func (o ops) RoutesChanged(ctx context.Context) { o.g.Dispatcher.RoutesChanged(ctx) }

func (o ops) SettingsChanged(context.Context) { o.g.settingsChanged() }

func (o ops) Services(ctx context.Context) []api.ServiceStatus {
	list, err := o.g.serviceControl().List(ctx)
	if err != nil {
		o.g.log.Error("list services", "err", err)
		return nil
	}
	out := make([]api.ServiceStatus, len(list))
	for i, s := range list {
		out[i] = api.ServiceStatus{Name: s.Name, Type: s.Type, Role: s.Role, Enabled: s.Enabled, State: api.ServiceState(s.State), Error: s.Error, Since: s.Since}
	}
	return out
}

func (o ops) StartService(ctx context.Context, name persistence.InstanceName) error {
	return o.g.serviceControl().Start(ctx, name)
}

func (o ops) StopService(ctx context.Context, name persistence.InstanceName) error {
	return o.g.serviceControl().Stop(ctx, name)
}

func (o ops) RestartService(ctx context.Context, name persistence.InstanceName) error {
	return o.g.serviceControl().Restart(ctx, name)
}

func (o ops) ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return o.g.Dispatcher.ActOnDeliveries(ctx, action, ids, actor)
}
