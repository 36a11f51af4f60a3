package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"wharf/internal/module"
)

// protocolPanel is a module's part of a message's detail (the AS2 section), shown the
// way REST shows it under "protocols": the UI knows no module's types, so it lays the
// panel's JSON out as nested lists, keeping the module's field order.
type protocolPanel struct {
	Name  string // the module's name
	Title string
	Value panelValue
	// Groups, when the module offers them, replace Value: the facts in labelled groups,
	// without internal ids.
	Groups []module.PanelCard
}

// messageFactGrouper is a module that lays its part of a message out in labelled groups
// for the page (the AS2 module).
type messageFactGrouper interface {
	MessageFactGroups(ctx context.Context, messageID int64) ([]module.PanelCard, bool, error)
}

// panelValue is one JSON value: an object (Fields), an array (Items) or a scalar (Text).
// Href links a number under a key ending in message_id to that message's page, so a
// module can point at another message (the first copy of a repeated document).
type panelValue struct {
	Fields []panelField
	Items  []panelValue
	Text   string
	Href   string
	number bool
}

type panelField struct {
	Key   string
	Value panelValue
}

// messagePanels collects the modules' panels of a message in module name order.
func (s *Server) messagePanels(ctx context.Context, id int64) ([]protocolPanel, error) {
	var out []protocolPanel
	for _, name := range slices.Sorted(maps.Keys(s.panels)) {
		if g, isGrouper := s.panels[name].(messageFactGrouper); isGrouper {
			groups, ok, err := g.MessageFactGroups(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("%s facts of message %d: %w", name, id, err)
			}
			if ok {
				out = append(out, protocolPanel{Name: name, Title: strings.ToUpper(name), Groups: groups})
			}
			continue
		}
		p, ok, err := s.panels[name].MessagePanel(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%s panel of message %d: %w", name, id, err)
		}
		if !ok {
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("%s panel of message %d: %w", name, id, err)
		}
		v, err := decodePanel(b)
		if err != nil {
			return nil, fmt.Errorf("%s panel of message %d: %w", name, id, err)
		}
		out = append(out, protocolPanel{Name: name, Title: strings.ToUpper(name), Value: v})
	}
	return out, nil
}

// decodePanel reads JSON token by token, so objects keep their field order.
func decodePanel(b []byte) (panelValue, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return v, fmt.Errorf("decode panel: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return v, errors.New("decode panel: trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (panelValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return panelValue{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var v panelValue
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return v, err
				}
				key, _ := kt.(string)
				fv, err := decodeValue(dec)
				if err != nil {
					return v, err
				}
				if fv.number && strings.HasSuffix(key, "message_id") {
					fv.Href = "/ui/messages/" + fv.Text
				}
				v.Fields = append(v.Fields, panelField{Key: panelKey(key), Value: fv})
			}
			_, err := dec.Token() // '}'
			return v, err
		case '[':
			var v panelValue
			for dec.More() {
				iv, err := decodeValue(dec)
				if err != nil {
					return v, err
				}
				v.Items = append(v.Items, iv)
			}
			_, err := dec.Token() // ']'
			if len(v.Items) == 0 {
				v.Text = "—"
			}
			return v, err
		}
	case nil:
		return panelValue{Text: "—"}, nil
	case bool:
		if t {
			return panelValue{Text: "yes"}, nil
		}
		return panelValue{Text: "no"}, nil
	case json.Number:
		_, err := t.Int64()
		return panelValue{Text: t.String(), number: err == nil}, nil
	case string:
		return panelValue{Text: t}, nil
	}
	return panelValue{}, fmt.Errorf("unexpected token %v", tok)
}

// panelKey turns a JSON name into a label: "as2_message_id" becomes "As2 message id",
// with the abbreviations the panels use kept upper case.
func panelKey(k string) string {
	words := strings.Split(k, "_")
	for i, w := range words {
		switch w {
		case "as2", "mdn", "mic", "id", "url", "http", "sha256":
			words[i] = strings.ToUpper(w)
		default:
			if i == 0 && w != "" {
				words[i] = strings.ToUpper(w[:1]) + w[1:]
			}
		}
	}
	return strings.Join(words, " ")
}
