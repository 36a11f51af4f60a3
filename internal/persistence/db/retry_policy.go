package db

import (
	"encoding/json"
	"fmt"

	"wharf/internal/retry"
)

// policyCol scans a nullable JSON retry policy column (routes and deliveries); NULL is
// nil, the target's policy.
type policyCol struct{ dst **retry.Policy }

func (c policyCol) Scan(src any) error {
	var text []byte
	switch v := src.(type) {
	case nil:
		*c.dst = nil
		return nil
	case string:
		text = []byte(v)
	case []byte:
		text = v
	default:
		return fmt.Errorf("cannot scan %T into a retry policy", src)
	}
	var p retry.Policy
	if err := json.Unmarshal(text, &p); err != nil {
		return fmt.Errorf("read retry policy: %w", err)
	}
	*c.dst = &p
	return nil
}

// policyValue is what a retry policy column stores: NULL for none, else the JSON.
func policyValue(p *retry.Policy) (any, error) {
	if p == nil {
		return nil, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode retry policy: %w", err)
	}
	return string(b), nil
}
