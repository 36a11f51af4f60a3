package profile

// formGroup is a part of a profile form: the everyday fields in the open, the rest
// folded away.
type formGroup struct {
	title  string
	folded bool
}

// The parts of the profile forms, in the order the form shows them.
var (
	groupIdentity = formGroup{title: "Identity"}
	groupSecurity = formGroup{title: "Security"}
	groupReceipts = formGroup{title: "Receipts"}
	groupLimits   = formGroup{title: "Limits and duplicates"}
	groupAdvanced = formGroup{title: "Advanced", folded: true}
)
