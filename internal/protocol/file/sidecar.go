package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"wharf/internal/persistence"
)

// sidecarSuffix names the metadata file that travels with a document.
const sidecarSuffix = ".meta.json"

// Sidecar limits.
const (
	maxSidecarSize = 16 << 10
)

// sidecar is the optional <file>.meta.json beside a document.
type sidecar struct {
	CorrelationID string `json:"correlation_id"`
	OriginEventID string `json:"origin_event_id"`
	// Metadata are named values for the message (persistence.NormalizeMetadata); an
	// ordered route may key its sessions by one.
	Metadata map[string]string `json:"metadata"`
}

// readSidecar reads and checks a sidecar strictly: unknown fields, trailing data, control
// characters and oversized values are refused.
func readSidecar(name string) (sidecar, error) {
	f, err := os.Open(name)
	if err != nil {
		return sidecar{}, fmt.Errorf("sidecar: %s", errText(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSidecarSize+1))
	if err != nil {
		return sidecar{}, fmt.Errorf("sidecar: %s", errText(err))
	}
	return parseSidecar(data)
}

func parseSidecar(data []byte) (sidecar, error) {
	if len(data) > maxSidecarSize {
		return sidecar{}, fmt.Errorf("sidecar: larger than %d bytes", maxSidecarSize)
	}
	var s sidecar
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return sidecar{}, fmt.Errorf("sidecar: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return sidecar{}, fmt.Errorf("sidecar: data after the JSON object")
	}
	for _, f := range []struct{ name, v string }{{"correlation_id", s.CorrelationID}, {"origin_event_id", s.OriginEventID}} {
		if err := persistence.CheckReference(f.v); err != nil {
			return sidecar{}, fmt.Errorf("sidecar: %s %v", f.name, err)
		}
	}
	meta, err := persistence.NormalizeMetadata(s.Metadata)
	if err != nil {
		return sidecar{}, fmt.Errorf("sidecar: %v", err)
	}
	s.Metadata = meta
	return s, nil
}
