package persistence

import "strings"

// FieldErrors is every invalid field of one input, in the order they were found, so a form
// or a REST client learns all of them from one submit. errors.As still finds a *FieldError
// in it for callers that want only one.
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.Is and errors.As see each field's error.
func (es FieldErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Add records why field is invalid. A field keeps the first reason given for it: later
// checks of the same field usually follow from the first.
func (es *FieldErrors) Add(field, message string) {
	if es.Has(field) {
		return
	}
	*es = append(*es, &FieldError{Field: field, Message: message})
}

// Has reports whether field already has an error, so a check that builds on a field's value
// can skip a field already refused.
func (es FieldErrors) Has(field string) bool {
	for _, e := range es {
		if e.Field == field {
			return true
		}
	}
	return false
}

// Merge adds the field errors err holds (one, several, wrapped or joined) and reports
// whether err held nothing else; a nil err is true.
func (es *FieldErrors) Merge(err error) bool {
	fes, ok := AllFieldErrors(err)
	for _, fe := range fes {
		es.Add(fe.Field, fe.Message)
	}
	return ok
}

// Err is nil when no field was refused, else the collected errors.
func (es FieldErrors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// AllFieldErrors collects every *FieldError in err, walking wrapped and joined errors. It
// reports false when some part of err is not a field error (a store failure, say), so a
// caller can tell a refusal of the input from a fault.
func AllFieldErrors(err error) ([]*FieldError, bool) {
	var out []*FieldError
	var walk func(error) bool
	walk = func(e error) bool {
		switch x := e.(type) {
		case nil:
			return true
		case *FieldError:
			out = append(out, x)
			return true
		case interface{ Unwrap() []error }:
			ok := true
			for _, c := range x.Unwrap() {
				ok = walk(c) && ok
			}
			return ok
		case interface{ Unwrap() error }:
			return walk(x.Unwrap())
		}
		return false
	}
	ok := walk(err)
	return out, ok && (err == nil || len(out) > 0)
}
