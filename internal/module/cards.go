package module

import (
	"context"
	"net/url"

	"wharf/internal/persistence"
)

// PanelCard is a box of facts beside a module's party panel (the AS2 "Our AS2 details"
// an organization hands its partners), with files to download.
type PanelCard struct {
	Title string
	Intro string
	// Notes are warnings shown above the details (an address that is only a guess).
	Notes     []string
	Details   []PanelDetail
	Downloads []PanelDownload
}

// PanelDownload is a file a card offers; Name is its part of the download URL.
type PanelDownload struct {
	Name  string
	Label string
}

// Download is a file a module hands out.
type Download struct {
	FileName    string
	ContentType string
	Body        []byte
}

// PartyDownloads is implemented by a module runtime whose party panels offer files.
type PartyDownloads interface {
	// PartyDownload returns the named file of the party's panel; an unknown name or a
	// party without it is persistence.ErrNotFound.
	PartyDownload(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName, download string) (Download, error)
}

// PartnerWizard is implemented by a module runtime that sets a new partner up in a
// guided flow: the partner with the module's records in one step, then a security
// preset, then the module's tools (a connection check, a test message) run in turn.
type PartnerWizard interface {
	// WizardFields are the first step's inputs besides the partner's name and display
	// name.
	WizardFields() []PanelField
	// WizardCreate creates the partner (form's "name" and "display_name") with the
	// module's records from the first step: form holds the typed values, files the
	// uploaded files by field name. A refusal is a *persistence.FieldError (or an
	// errors.Join of them) naming each wrong field, and leaves nothing written.
	WizardCreate(ctx context.Context, form url.Values, files map[string][]byte) (persistence.PartyName, error)
	// WizardPresets are the second step's choices, the default first.
	WizardPresets() []WizardPreset
	// WizardApplyPreset applies one of them to the partner's record.
	WizardApplyPreset(ctx context.Context, partner persistence.PartyName, preset string) error
	// WizardTools are the party panel's actions the last steps run, in order.
	WizardTools() []PanelAction
}

// WizardPreset is one choice of the wizard's preset step, with what it sets.
type WizardPreset struct {
	Name    string
	Label   string
	Summary string
	Sets    []PanelDetail
}
