package notification

import (
	"encoding/json"
	"fmt"
	"html"
	"mime"
	"net/http"
	"strings"
	"time"

	"wharf/internal/alert"
)

// GenericVersion names the generic format's schema; a change that breaks receivers
// gets a new version.
const GenericVersion = "wharf.alert.v1"

// Rendered is a request body and the headers its format needs.
type Rendered struct {
	Body        []byte
	ContentType string
	Header      http.Header
}

// Render builds the body of a for the format; baseURL (no trailing slash) turns the
// alert's /ui/ link into an address. Renderers are pure: the same alert gives the same
// bytes, and each escapes what its receiver interprets.
func Render(f Format, a alert.Alert, baseURL string) (Rendered, error) {
	link := ""
	if a.Link != "" {
		link = strings.TrimRight(baseURL, "/") + a.Link
	}
	switch f {
	case FormatGeneric:
		return jsonBody(generic(a, link))
	case FormatSlack:
		return jsonBody(slack(a, link))
	case FormatTeams:
		return jsonBody(teams(a, link))
	case FormatDiscord:
		return jsonBody(discord(a, link))
	case FormatGoogleChat:
		return jsonBody(googleChat(a, link))
	case FormatNtfy:
		return ntfy(a, link), nil
	}
	return Rendered{}, fmt.Errorf("render: unknown format %q", f)
}

func jsonBody(v any) (Rendered, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(true)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return Rendered{}, fmt.Errorf("render: %w", err)
	}
	return Rendered{Body: []byte(b.String()), ContentType: "application/json"}, nil
}

func title(a alert.Alert) string {
	return "[" + strings.ToUpper(string(a.Severity)) + "] " + a.Code.Info().Label
}

func subjectText(s alert.Subject) string {
	out := s.Kind
	if s.ID != "" {
		out += " " + s.ID
	}
	if s.Name != "" {
		out += " (" + s.Name + ")"
	}
	return out
}

// genericAlert is the generic format, documented in docs/alerts.md.
type genericAlert struct {
	Version   string         `json:"version"`
	ID        string         `json:"id"`
	Time      string         `json:"time"`
	Severity  alert.Severity `json:"severity"`
	Code      alert.Code     `json:"code"`
	Label     string         `json:"label"`
	Subject   alert.Subject  `json:"subject"`
	Summary   string         `json:"summary"`
	Details   []alert.Detail `json:"details"`
	DedupeKey string         `json:"dedupe_key"`
	Link      string         `json:"link"`
}

func generic(a alert.Alert, link string) genericAlert {
	details := a.Details
	if details == nil {
		details = []alert.Detail{}
	}
	return genericAlert{
		Version: GenericVersion, ID: a.ID, Time: a.Time.UTC().Format(time.RFC3339Nano), Severity: a.Severity,
		Code: a.Code, Label: a.Code.Info().Label, Subject: a.Subject, Summary: a.Summary, Details: details,
		DedupeKey: a.DedupeKey, Link: link,
	}
}

// Slack mrkdwn interprets &, < and > (links, mentions such as <!channel>); they are sent
// as entities, which Slack shows as the characters.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slack(a alert.Alert, link string) map[string]any {
	esc := slackEscaper.Replace
	text := "*" + esc(title(a)) + "*\n" + esc(a.Summary)
	blocks := []any{
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": text}},
	}
	var fields []any
	fields = append(fields, map[string]any{"type": "mrkdwn", "text": "*Subject*\n" + esc(subjectText(a.Subject))})
	for _, d := range a.Details {
		if len(fields) == 10 { // Slack's limit per section
			break
		}
		fields = append(fields, map[string]any{"type": "mrkdwn", "text": "*" + esc(d.Label) + "*\n" + esc(d.Value)})
	}
	blocks = append(blocks, map[string]any{"type": "section", "fields": fields})
	if link != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
			"type": "button", "text": map[string]any{"type": "plain_text", "text": "Open in Wharf"}, "url": link,
		}}})
	}
	return map[string]any{"text": esc(title(a) + ": " + a.Summary), "blocks": blocks}
}

// markdownEscaper puts a backslash before every character Markdown (Discord's and the
// Adaptive Cards subset Teams renders) gives a meaning.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`, ">", `\>`, "<", `\<`,
	"#", `\#`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "-", `\-`, "+", `\+`, "!", `\!`, "@", `\@`,
)

var severityColor = map[alert.Severity]int{alert.SeverityInfo: 0x2f81f7, alert.SeverityWarning: 0xd29922, alert.SeverityCritical: 0xcf222e}

func discord(a alert.Alert, link string) map[string]any {
	esc := markdownEscaper.Replace
	fields := []any{map[string]any{"name": "Subject", "value": esc(subjectText(a.Subject)), "inline": false}}
	for _, d := range a.Details {
		if len(fields) == 25 { // Discord's limit per embed
			break
		}
		fields = append(fields, map[string]any{"name": esc(d.Label), "value": esc(d.Value), "inline": false})
	}
	embed := map[string]any{
		"title":       esc(title(a)),
		"description": esc(a.Summary),
		"color":       severityColor[a.Severity],
		"fields":      fields,
		"timestamp":   a.Time.UTC().Format(time.RFC3339),
		"footer":      map[string]any{"text": "Wharf · " + string(a.Code)},
	}
	if link != "" {
		embed["url"] = link
	}
	// No mention in an alert pings anybody, whatever its text.
	return map[string]any{"username": "Wharf", "embeds": []any{embed}, "allowed_mentions": map[string]any{"parse": []any{}}}
}

func teams(a alert.Alert, link string) map[string]any {
	esc := markdownEscaper.Replace
	facts := []any{map[string]any{"title": "Subject", "value": esc(subjectText(a.Subject))}}
	for _, d := range a.Details {
		facts = append(facts, map[string]any{"title": esc(d.Label), "value": esc(d.Value)})
	}
	color := map[alert.Severity]string{alert.SeverityInfo: "Accent", alert.SeverityWarning: "Warning", alert.SeverityCritical: "Attention"}[a.Severity]
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": "1.4",
		"body": []any{
			map[string]any{"type": "TextBlock", "text": esc(title(a)), "weight": "Bolder", "size": "Medium", "color": color, "wrap": true},
			map[string]any{"type": "TextBlock", "text": esc(a.Summary), "wrap": true},
			map[string]any{"type": "FactSet", "facts": facts},
		},
	}
	if link != "" {
		card["actions"] = []any{map[string]any{"type": "Action.OpenUrl", "title": "Open in Wharf", "url": link}}
	}
	return map[string]any{"type": "message", "attachments": []any{map[string]any{
		"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": nil, "content": card,
	}}}
}

// Google Chat card texts take a small HTML subset; values are HTML-escaped.
func googleChat(a alert.Alert, link string) map[string]any {
	esc := html.EscapeString
	widgets := []any{
		map[string]any{"textParagraph": map[string]any{"text": esc(a.Summary)}},
		map[string]any{"decoratedText": map[string]any{"topLabel": "Subject", "text": esc(subjectText(a.Subject)), "wrapText": true}},
	}
	for _, d := range a.Details {
		widgets = append(widgets, map[string]any{"decoratedText": map[string]any{"topLabel": esc(d.Label), "text": esc(d.Value), "wrapText": true}})
	}
	if link != "" {
		widgets = append(widgets, map[string]any{"buttonList": map[string]any{"buttons": []any{map[string]any{
			"text": "Open in Wharf", "onClick": map[string]any{"openLink": map[string]any{"url": link}},
		}}}})
	}
	return map[string]any{
		"cardsV2": []any{map[string]any{"cardId": "wharf-alert-" + a.ID, "card": map[string]any{
			"header":   map[string]any{"title": esc(title(a)), "subtitle": esc(string(a.Code))},
			"sections": []any{map[string]any{"widgets": widgets}},
		}}},
	}
}

// ntfy takes the message as plain text (it renders Markdown only when asked, and the
// notifier never asks) and the rest in headers, which are kept to one line and
// RFC 2047-encoded when not ASCII.
func ntfy(a alert.Alert, link string) Rendered {
	var b strings.Builder
	b.WriteString(a.Summary)
	b.WriteString("\n\nSubject: " + subjectText(a.Subject))
	for _, d := range a.Details {
		b.WriteString("\n" + d.Label + ": " + d.Value)
	}
	b.WriteString("\n")
	h := http.Header{}
	h.Set("Title", mime.BEncoding.Encode("UTF-8", title(a)))
	h.Set("Priority", map[alert.Severity]string{alert.SeverityInfo: "3", alert.SeverityWarning: "4", alert.SeverityCritical: "5"}[a.Severity])
	h.Set("Tags", map[alert.Severity]string{alert.SeverityInfo: "information_source", alert.SeverityWarning: "warning", alert.SeverityCritical: "rotating_light"}[a.Severity]+","+string(a.Code))
	if link != "" {
		h.Set("Click", link)
	}
	return Rendered{Body: []byte(b.String()), ContentType: "text/plain; charset=utf-8", Header: h}
}
