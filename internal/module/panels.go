package module

import (
	"context"
	"net/url"
	"strings"

	"wharf/internal/persistence"
)

// PartyPanels is implemented by a module runtime with a part of an organization's or a
// partner's page in the web UI (the AS2 profile): shown there, created and edited in a
// form checked by the module's own rules (the same as its REST routes), and with tools the
// operator runs from the page. The UI renders the panel from this description, so it
// needs no import of the module.
type PartyPanels interface {
	// PartyPanel describes the module's part of the party's page; ok false when the
	// module has nothing for parties of this kind.
	PartyPanel(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (panel PartyPanel, ok bool, err error)
	// SavePartyPanel creates or replaces the module's record from the submitted form,
	// whose keys are the panel's field names. A refusal is a *persistence.FieldError (or
	// an errors.Join of them) naming a field.
	SavePartyPanel(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName, form url.Values) error
	// RunPartyAction runs one of the panel's actions for actor (who is recorded on
	// anything it creates). A refusal the operator can act on is a *persistence.FieldError.
	RunPartyAction(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName, action, actor string) (ActionResult, error)
}

// PartyPanel is a module's part of a party's page.
type PartyPanel struct {
	// Module names the module; the UI's panel URLs carry it.
	Module string
	Title  string
	// Exists says whether the module's record exists; without one, the form creates it
	// and Empty says what is missing.
	Exists bool
	Empty  string
	// Details are shown as label and value pairs.
	Details []PanelDetail
	// Fields are the edit form with the current values (the defaults when !Exists).
	Fields []PanelField
	// Actions are offered while the record exists.
	Actions []PanelAction
	// Cards are boxes of facts shown after the panel (what a partner needs from us).
	Cards []PanelCard
}

// PanelDetail is one label and value of a panel.
type PanelDetail struct {
	Label string
	Value string
}

// PanelFieldKind is how a panel field is entered.
type PanelFieldKind string

const (
	FieldText     PanelFieldKind = "text"
	FieldURL      PanelFieldKind = "url"
	FieldNumber   PanelFieldKind = "number"
	FieldCheckbox PanelFieldKind = "checkbox"
	FieldSelect   PanelFieldKind = "select"
	FieldFile     PanelFieldKind = "file"
	FieldTextarea PanelFieldKind = "textarea"
)

// PanelField is one input of a panel's form. Value is what the input shows ("true" for
// a ticked checkbox; a multiple select's values separated by ", "). Never a secret: the
// form is shown again as typed.
type PanelField struct {
	Name    string
	Label   string
	Hint    string
	Kind    PanelFieldKind
	Value   string
	Options []string // of a select, each its own label
	// Group is the part of the form the field is shown in ("" for none); a Folded
	// group is folded away until opened.
	Group  string
	Folded bool
	// Choices, when set, are a select's options with labels (and groups) of their own,
	// such as certificates shown by subject and expiry and sent by id.
	Choices []PanelChoice
	// Multiple lets a select send several values, each as the field's name.
	Multiple bool
}

// PanelChoice is one option of a select: the value sent and the label shown, under Group
// when set.
type PanelChoice struct {
	Value string
	Label string
	Group string
}

// Selected reports whether value is among the field's current values.
func (f PanelField) Selected(value string) bool {
	if !f.Multiple {
		return f.Value == value
	}
	for _, v := range strings.Split(f.Value, ",") {
		if strings.TrimSpace(v) == value {
			return true
		}
	}
	return false
}

// ChoiceGroups are the field's choices in their groups, in order of first appearance.
func (f PanelField) ChoiceGroups() []PanelChoiceGroup {
	var out []PanelChoiceGroup
	for _, c := range f.Choices {
		if len(out) == 0 || out[len(out)-1].Label != c.Group {
			out = append(out, PanelChoiceGroup{Label: c.Group})
		}
		g := &out[len(out)-1]
		g.Choices = append(g.Choices, c)
	}
	return out
}

// PanelChoiceGroup is an optgroup of a select ("" for options outside any group).
type PanelChoiceGroup struct {
	Label   string
	Choices []PanelChoice
}

// PanelAction is a tool the operator runs from the panel.
type PanelAction struct {
	Name  string
	Label string
	// Confirm, when set, is asked before the action runs.
	Confirm string
}

// ActionResult is what an action found or did, shown on the party's page.
type ActionResult struct {
	OK      bool
	Summary string
	// Steps are the action's stages in order (a connection check's name lookup, TCP, TLS
	// and HTTP request).
	Steps []ActionStep
	// MessageID, when not 0, is a message the action created, which the UI links.
	MessageID int64
}

// ActionStep is one stage of an action.
type ActionStep struct {
	Name   string
	OK     bool
	Detail string
}
