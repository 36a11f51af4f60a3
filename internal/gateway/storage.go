package gateway

import (
	"context"
	"fmt"
	"maps"
	"time"

	"wharf/internal/records"
	"wharf/internal/settings"
	"wharf/internal/storage"
)

// storageKeys are the settings that place payloads; they apply at start only.
var storageKeys = []string{settings.PayloadStorage, settings.S3Bucket, settings.S3Region,
	settings.S3Endpoint, settings.S3PathStyle, settings.S3Prefix}

// storageProbeTimeout bounds a storage test, so an endpoint that never answers cannot
// hold the request.
const storageProbeTimeout = 30 * time.Second

// openPayloadStores opens the payload stores the stored settings name. Invalid settings
// stop the start rather than fall back to the local disk, which would scatter payloads
// an operator means to keep on S3. It returns the storage settings it started with.
// Documents uploaded to S3 from files are kept as local copies under cacheDir, which is
// on the file system of the spool files and claimed poller files.
func openPayloadStores(ctx context.Context, st records.Store, localDir, cacheDir string) (*storage.Stores, map[string]string, error) {
	cur, err := records.CurrentSettings(ctx, st)
	if err != nil {
		return nil, nil, fmt.Errorf("payload storage: %w", err)
	}
	v, err := settings.Parse(cur)
	if err == nil {
		err = settings.CheckTogether(cur)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("payload storage: setting %w", err)
	}
	local, err := storage.NewLocal(localDir)
	if err != nil {
		return nil, nil, err
	}
	var s3 *storage.S3
	// A bucket kept after switching back to local still serves the payloads stored there.
	if v.Storage.Bucket != "" {
		if s3, err = storage.NewS3(ctx, s3Config(v.Storage)); err != nil {
			return nil, nil, err
		}
		if err := s3.EnableCache(cacheDir, storage.DefaultCacheBytes, storage.DefaultCacheAge); err != nil {
			return nil, nil, err
		}
	}
	stores, err := storage.NewStores(v.Storage.Kind, local, s3)
	if err != nil {
		return nil, nil, err
	}
	return stores, storageSettings(cur), nil
}

func s3Config(s settings.Storage) storage.S3Config {
	return storage.S3Config{Bucket: s.Bucket, Region: s.Region, Endpoint: s.Endpoint,
		PathStyle: s.PathStyle, Prefix: s.Prefix}
}

func storageSettings(all map[string]string) map[string]string {
	m := make(map[string]string, len(storageKeys))
	for _, k := range storageKeys {
		m[k] = all[k]
	}
	return m
}

// StorageStatus is the payload storage the process started with beside the one the
// settings now name.
func (g *Gateway) StorageStatus(ctx context.Context) (storage.Status, error) {
	cur, err := records.CurrentSettings(ctx, g.Store)
	if err != nil {
		return storage.Status{}, err
	}
	configured := storageSettings(cur)
	return storage.Status{Running: maps.Clone(g.storageRunning), Configured: configured,
		PendingRestart: !maps.Equal(configured, g.storageRunning)}, nil
}

// TestStorage probes the store the saved settings name, which need not be running yet.
func (g *Gateway) TestStorage(ctx context.Context) (storage.ProbeResult, error) {
	cur, err := records.CurrentSettings(ctx, g.Store)
	if err != nil {
		return storage.ProbeResult{}, err
	}
	v, err := settings.Parse(cur)
	if err != nil {
		return storage.ProbeResult{}, fmt.Errorf("test storage: setting %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, storageProbeTimeout)
	defer cancel()
	var res storage.ProbeResult
	if v.Storage.Kind == storage.KindS3 {
		s3, err := storage.NewS3(ctx, s3Config(v.Storage))
		if err != nil {
			return storage.ProbeResult{}, fmt.Errorf("test storage: %w", err)
		}
		res = s3.Probe(ctx)
	} else {
		res = g.Blobs.Local().Probe(ctx)
	}
	if res.OK {
		g.log.InfoContext(ctx, "storage test passed", "store", res.Store)
	} else {
		g.log.WarnContext(ctx, "storage test failed", "store", res.Store, "step", res.Step, "code", res.Code, "http_status", res.HTTPStatus)
	}
	return res, nil
}
