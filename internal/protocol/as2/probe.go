package as2

import (
	"fmt"
	"net/http"
)

// judgeProbe reads the answer to the connection check's GET as an AS2 endpoint would be
// judged: an AS2 endpoint takes POSTs, so most answers to a GET only show the server is
// reachable. A redirect (the sender does not follow one) and a proxy's "unavailable" are
// failures; the rest pass with a note on what the status does and does not tell.
func judgeProbe(resp *http.Response) (string, error) {
	code := resp.StatusCode
	status := fmt.Sprintf("%d", code)
	if text := http.StatusText(code); text != "" {
		status += " " + text
	}
	server := ""
	if sv := resp.Header.Get("Server"); sv != "" {
		server = " (server " + sv + ")"
	}
	switch {
	case code >= 300 && code < 400:
		where := resp.Header.Get("Location")
		if where == "" {
			where = "elsewhere"
		}
		return "", fmt.Errorf("the server answered %s%s, pointing to %s: Wharf does not follow redirects when it sends, so set the endpoint URL to where the partner receives AS2", status, server, where)
	case code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		return "", fmt.Errorf("the server answered %s%s: a proxy in front of the partner's AS2 server, or the server itself, is not serving now", status, server)
	case code == http.StatusMethodNotAllowed:
		return "reachable; the server answered " + status + server + " to a probe, which an AS2 endpoint may do — not a verdict on AS2", nil
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "reachable; the server answered " + status + server + " to a probe: if the partner's server asks for credentials or allows only known addresses, messages may be refused too — ask the partner", nil
	case code == http.StatusNotFound:
		return "reachable; the server answered " + status + server + " to a probe: some AS2 servers do, but check the path of the endpoint URL with the partner", nil
	}
	return "reachable; the server answered " + status + server + " to a probe — not a verdict on AS2: a test message tells", nil
}
