package file

import (
	"fmt"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

func init() {
	module.Register(module.Module{
		Name: "file",
		Plugins: []module.Plugin{
			{
				Type:      persistence.PluginFilePoller,
				Role:      module.RoleSource,
				NewConfig: func() module.Config { return NewPollerConfig() },
				NewSource: newPollerSource,
			},
			{
				Type:      persistence.PluginFileWriter,
				Role:      module.RoleTarget,
				NewConfig: func() module.Config { return NewWriterConfig() },
				NewTarget: newWriterTarget,
			},
		},
	})
}

func newPollerSource(env module.Env, name persistence.InstanceName, cfg module.Config) (module.Service, error) {
	c, ok := cfg.(*PollerConfig)
	if !ok {
		return nil, fmt.Errorf("file-poller %s: config is %T, want *PollerConfig", name, cfg)
	}
	return NewPoller(env, name, c)
}

func newWriterTarget(env module.Env, name persistence.InstanceName, cfg module.Config) (delivery.Deliverer, error) {
	c, ok := cfg.(*WriterConfig)
	if !ok {
		return nil, fmt.Errorf("file-writer %s: config is %T, want *WriterConfig", name, cfg)
	}
	return NewWriter(c, env.Logger)
}

var (
	_ module.Service     = (*Poller)(nil)
	_ delivery.Deliverer = (*Writer)(nil)
	_ module.Config      = (*PollerConfig)(nil)
	_ module.Config      = (*WriterConfig)(nil)

	_ delivery.TargetConfig = (*WriterConfig)(nil)
)
