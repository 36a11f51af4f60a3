package db

// checkTraceParent accepts "" or a W3C traceparent as a tracer writes it:
// version-traceid-spanid-flags in lower-case hex (2-32-16-2 digits).
func checkTraceParent(s string) error {
	if s == "" {
		return nil
	}
	const form = "xx-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-xxxxxxxxxxxxxxxx-xx"
	if len(s) != len(form) {
		return fieldMsg("trace_parent", "not a W3C traceparent")
	}
	for i := range len(form) {
		c := s[i]
		if form[i] == '-' {
			if c != '-' {
				return fieldMsg("trace_parent", "not a W3C traceparent")
			}
			continue
		}
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fieldMsg("trace_parent", "not a W3C traceparent")
		}
	}
	return nil
}
