package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"wharf/internal/persistence"
)

// decodeJSON reads the request body into dst strictly: one JSON value, no unknown fields,
// nothing after it. Errors name the field (or "body") for a 400; an oversized body is a
// 413.
func decodeJSON(r *http.Request, dst any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	return decodeStrict(raw, dst)
}

// decodeNoBody admits an action's body only when it is empty or an empty JSON object.
func decodeNoBody(r *http.Request) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return decodeStrict(raw, &struct{}{})
}

func decodeStrict(raw []byte, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return invalid("body", "a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("body", "unexpected data after the JSON value")
	}
	return nil
}

// jsonError turns a decoding error into a field error naming what was wrong.
func jsonError(err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return invalid("body", fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("body", "malformed JSON: unexpected end")
	case errors.As(err, &te):
		if te.Field == "" {
			return invalid("body", "must be a JSON "+jsonKind(te.Type.Kind().String()))
		}
		return invalid(te.Field, "must be a JSON "+jsonKind(te.Type.Kind().String()))
	}
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name := strings.Trim(rest, `"`); name != "" {
			return invalid(name, "unknown field")
		}
		// A field error names a field: the empty name is the body's fault.
		return invalid("body", `unknown field ""`)
	}
	return invalid("body", err.Error())
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	default:
		return "number"
	}
}

// Paging of lists.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

type page struct {
	limit  int
	offset int
}

// parsePage reads limit and offset, refusing unusable values by name.
func parsePage(r *http.Request) (page, error) {
	p := page{limit: defaultLimit}
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" || q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return page{}, invalid("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxLimit))
		}
		p.limit = n
	}
	if v := q.Get("offset"); v != "" || q.Has("offset") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return page{}, invalid("offset", "must be a whole number of at least 0")
		}
		p.offset = n
	}
	return p, nil
}

// onlyParams refuses a query parameter that is not one of names, limit and offset, or
// one given more than once.
func onlyParams(q url.Values, names ...string) error {
	for name := range q {
		switch {
		case !slices.Contains(names, name) && name != "limit" && name != "offset":
			return invalid(name, "unknown parameter")
		case len(q[name]) > 1:
			return invalid(name, "given more than once")
		}
	}
	return nil
}

// slicePage cuts one page out of a list held in full.
func slicePage[T any](all []T, p page) []T {
	if p.offset >= len(all) {
		return []T{}
	}
	return all[p.offset:min(len(all), p.offset+p.limit)]
}

// listBody is the shape of every list: {"<collection>": [...], "total", "limit", "offset"}.
func listBody[T any](collection string, items []T, total int, p page) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{collection: items, "total": total, "limit": p.limit, "offset": p.offset}
}

// pathID reads a positive integer id from the path.
func pathID(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, invalid(name, "must be a positive whole number")
	}
	return id, nil
}

func pathPartyName(r *http.Request) (persistence.PartyName, error) {
	n, err := persistence.ParsePartyName(r.PathValue("name"))
	if err != nil {
		return "", invalid("name", err.Error())
	}
	return n, nil
}

func pathInstanceName(r *http.Request) (persistence.InstanceName, error) {
	n, err := persistence.ParseInstanceName(r.PathValue("name"))
	if err != nil {
		return "", invalid("name", err.Error())
	}
	return n, nil
}

func pathPluginType(r *http.Request) (persistence.PluginType, error) {
	t, err := persistence.ParsePluginType(r.PathValue("type"))
	if err != nil {
		return "", invalid("type", err.Error())
	}
	return t, nil
}

// DecodeJSON is decodeJSON for the REST routes of modules (module.APIRoute): strict, with
// errors naming the field.
func DecodeJSON(r *http.Request, dst any) error { return decodeJSON(r, dst) }

// Actor names who made the request (token:<name>), for history and audit lines of module
// routes.
func Actor(r *http.Request) string { return actor(r) }

// PathID reads an integer path parameter, refusing anything else as INVALID_INPUT.
func PathID(r *http.Request, name string) (int64, error) { return pathID(r, name) }
